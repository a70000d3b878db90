// ONNX Resize (opsets 10 to 17) and Upsample, composed per resized axis from Gathers with index
// and weight tables computed at import: nearest (every nearest_mode), linear and cubic
// (cubic_coeff_a, exclude_outside) interpolation, every coordinate_transformation_mode including
// tf_crop_and_resize with its extrapolation_value. Interpolation is separable, one axis after
// another, as the ONNX reference does it. Out-of-range neighbours take the edge value. Needs the
// resized dims, scales or sizes, and roi known at import.
#include <cmath>

#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/state.h"

namespace kiln::onnx_import {
namespace {

struct ResizeAttrs {
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false;
};

// The source coordinate of output position `x` along one axis.
double SourceCoord(const ResizeAttrs& a, double x, int64_t in, int64_t out, double scale,
                   double roi_start, double roi_end) {
  const std::string& c = a.coord;
  if (c == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (c == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  // The output length here is in * scale before rounding down (as the ONNX reference).
  double out_len = in * scale;
  if (c == "align_corners") return out_len == 1 ? 0 : x * (in - 1) / (out_len - 1);
  if (c == "asymmetric") return x / scale;
  if (c == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  // tf_crop_and_resize
  return out > 1 ? roi_start * (in - 1) + x * (roi_end - roi_start) * (in - 1) / double(out - 1)
                 : 0.5 * (roi_start + roi_end) * (in - 1);
}

int64_t Nearest(const std::string& mode, double x) {
  if (mode == "floor") return static_cast<int64_t>(std::floor(x));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  double f = std::floor(x);
  if (x - f == 0.5) return static_cast<int64_t>(mode == "round_prefer_ceil" ? f + 1 : f);
  return static_cast<int64_t>(std::round(x));
}

// Keys cubic convolution weight of a neighbour at distance d.
double CubicWeight(double d, double a) {
  d = std::fabs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// Resizes axis `axis` of x from `in` to `out` positions.
Value ResizeAxis(OnnxNode& n, Value x, int axis, int64_t in, int64_t out, double scale,
                 double roi_start, double roi_end, const ResizeAttrs& a) {
  int taps = a.mode == "nearest" ? 1 : a.mode == "linear" ? 2 : 4;
  std::vector<Tensor> index, weight;  // one table per tap (Tensor copies would share storage)
  for (int t = 0; t < taps; ++t) {
    index.emplace_back(i64, Shape{out});
    weight.emplace_back(x.dtype(), Shape{out});
  }
  Tensor inside(x.dtype(), Shape{out});
  for (int64_t o = 0; o < out; ++o) {
    double s = SourceCoord(a, static_cast<double>(o), in, out, scale, roi_start, roi_end);
    inside.SetDouble(o, a.coord != "tf_crop_and_resize" || (s >= 0 && s <= in - 1) ? 1 : 0);
    auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    if (taps == 1) {
      index[0].SetInt(o, clamp(Nearest(a.nearest, s)));
      weight[0].SetDouble(o, 1);
      continue;
    }
    if (taps == 2) s = std::clamp(s, 0.0, static_cast<double>(in - 1));
    int64_t base = static_cast<int64_t>(std::floor(s));
    double frac = s - base, total = 0;
    for (int t = 0; t < taps; ++t) {
      int64_t i = taps == 2 ? base + t : base - 1 + t;
      double w = taps == 2 ? (t ? frac : 1 - frac) : CubicWeight(frac - (t - 1), a.cubic_a);
      if (a.exclude_outside && (i < 0 || i >= in)) w = 0;
      index[t].SetInt(o, clamp(i));
      weight[t].SetDouble(o, w);
      total += w;
    }
    if (a.exclude_outside && total != 0)
      for (int t = 0; t < taps; ++t) weight[t].SetDouble(o, weight[t].GetDouble(o) / total);
  }
  // Weights broadcast along the axis: shape [out, 1, ..., 1].
  Shape wshape(std::vector<int64_t>(x.rank() - axis, 1));
  wshape.set_dim(0, out);
  GraphBuilder& g = n.g();
  Value y;
  for (int t = 0; t < taps; ++t) {
    Value picked = Gather(x, g.Constant(index[t]), axis);
    if (taps > 1) picked = picked * g.Constant(*weight[t].Reshaped(wshape));
    y = y.valid() ? y + picked : picked;
  }
  if (a.coord == "tf_crop_and_resize") {
    Value mask = g.Constant(*inside.Reshaped(wshape));
    y = y * mask + (1.0 - mask) * a.extrapolation;
  }
  return y;
}

Status Resize(OnnxNode& n, Value x, std::vector<double> scales, std::vector<int64_t> sizes,
              std::vector<double> roi, const ResizeAttrs& a) {
  int rank = x.rank();
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic")
    return n.Fail("mode must be nearest, linear or cubic, got '", a.mode, "'");
  if (!sizes.empty() && static_cast<int>(sizes.size()) != rank)
    return n.Fail("sizes must have one entry per input dim (", rank, "), got ", sizes.size());
  if (sizes.empty() && static_cast<int>(scales.size()) != rank)
    return n.Fail("scales must have one entry per input dim (", rank, "), got ", scales.size());
  if (roi.size() != static_cast<size_t>(2 * rank)) roi.clear();
  Value y = x;
  for (int d = 0; d < rank; ++d) {
    int64_t in = x.shape()[d];
    double start = roi.empty() ? 0 : roi[d], end = roi.empty() ? 1 : roi[rank + d];
    int64_t out;
    double scale;
    if (!sizes.empty()) {
      out = sizes[d];
      if (out == in && a.coord != "tf_crop_and_resize") continue;
      if (in < 0) return n.NotKnownYet("needs the resized dim ", d, " known at import");
      scale = in > 0 ? double(out) / double(in) : 1;
    } else {
      scale = scales[d];
      if (scale == 1.0 && a.coord != "tf_crop_and_resize") continue;
      if (in < 0) return n.NotKnownYet("needs the resized dim ", d, " known at import");
      if (scale <= 0) return n.Fail("scales must be positive, got ", scale);
      double len = a.coord == "tf_crop_and_resize" ? in * (end - start) : in;
      out = static_cast<int64_t>(std::floor(len * scale));
    }
    if (out < 0 || out > (int64_t{1} << 22))
      return n.Fail("output size ", out, " of dim ", d, " is out of range");
    if (in == 0) return n.Fail("cannot resize an empty dim");
    y = ResizeAxis(n, y, d, in, out, scale, start, end, a);
    if (!y.valid()) return OkStatus();  // the builder recorded why
  }
  n.SetOutput(0, rank == 0 || y.node_index() == x.node_index() ? Identity(y) : y);
  return OkStatus();
}

Status ConvertResize(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  ResizeAttrs a;
  KILN_ASSIGN_OR_RETURN(a.mode, n.String("mode", "nearest"));
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (n.opset() < 11) {  // Resize-10: (X, scales), asymmetric coordinates
    a.coord = "asymmetric";
    a.nearest = "floor";
    KILN_ASSIGN_OR_RETURN(Tensor s, n.Const(1));
    scales = s.ToDoubles();
    return Resize(n, x, scales, sizes, roi, a);
  }
  KILN_ASSIGN_OR_RETURN(a.coord, n.String("coordinate_transformation_mode", "half_pixel"));
  KILN_ASSIGN_OR_RETURN(a.nearest, n.String("nearest_mode", "round_prefer_floor"));
  KILN_ASSIGN_OR_RETURN(a.cubic_a, n.Float("cubic_coeff_a", -0.75));
  KILN_ASSIGN_OR_RETURN(int64_t exclude, n.Int("exclude_outside", 0));
  KILN_ASSIGN_OR_RETURN(a.extrapolation, n.Float("extrapolation_value", 0.0));
  a.exclude_outside = exclude != 0;
  if (n.has_input(1) && a.coord == "tf_crop_and_resize") {
    KILN_ASSIGN_OR_RETURN(Tensor r, n.Const(1));
    roi = r.ToDoubles();
  }
  if (n.has_input(3)) {
    std::optional<std::vector<DimEntry>> p = n.Partial(3);
    if (p && !n.known(3) && static_cast<int>(p->size()) == x.rank()) {
      // Sizes partly known at import (PyTorch's interpolate(size=...) with a dynamic batch dim):
      // an entry that is x's own dim at that position keeps the dim.
      for (int d = 0; d < x.rank(); ++d) {
        const DimEntry& e = (*p)[d];
        if (!e.of.empty() && (e.of != n.input_name(0) || e.dim != d))
          return n.NotKnownYet("output size ", d, " must be known at import");
        sizes.push_back(e.of.empty() ? e.value : x.shape()[d]);
      }
    } else {
      KILN_ASSIGN_OR_RETURN(sizes, n.ConstInts(3));
    }
  }
  if (sizes.empty() && n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Tensor s, n.Const(2));
    scales = s.ToDoubles();
  }
  if (sizes.empty() && scales.empty()) return n.Fail("needs scales or sizes");
  return Resize(n, x, scales, sizes, roi, a);
}

// Upsample (deprecated since opset 10): scales as an attribute (opset 7) or input (opset 9).
Status ConvertUpsample(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  ResizeAttrs a;
  KILN_ASSIGN_OR_RETURN(a.mode, n.String("mode", "nearest"));
  a.coord = "asymmetric";
  a.nearest = "floor";
  std::vector<double> scales;
  if (n.has_input(1)) {
    KILN_ASSIGN_OR_RETURN(Tensor s, n.Const(1));
    scales = s.ToDoubles();
  } else {
    KILN_ASSIGN_OR_RETURN(scales, n.Floats("scales"));
  }
  return Resize(n, x, scales, {}, {}, a);
}

}  // namespace

void AddResizeConverters(ConverterTable& t) {
  t["Resize"] = ConvertResize;
  t["Upsample"] = ConvertUpsample;
}

}  // namespace kiln::onnx_import
