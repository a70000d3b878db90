// ONNX convolution, pooling and normalization: Conv (1-D and 2-D, through kiln's 2-D op; auto_pad
// needs the spatial dims known at import), GlobalAveragePool,
// GlobalMaxPool, BatchNormalization (inference, and training mode with running statistics),
// InstanceNormalization, LayerNormalization and MeanVarianceNormalization (composed),
// NonMaxSuppression (kiln's, its absent limits as constants), MaxUnpool (a ScatterElements),
// and QLinearConv (requantized).
#include <limits>

#include "ir/onnx/convert_context.h"
#include "ir/onnx/onnx_window.h"
#include "ir/ops/array.h"
#include "ir/ops/array_elements.h"
#include "ir/ops/detection.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"

namespace kiln::onnx_import {
namespace {

// Windowed-op attributes in kiln's 2-D form ([h, w] and [top, left, bottom, right]).
struct Window {
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool one_d = false;  // the op is 1-D: a size-1 H axis is inserted around it
};

// The node's window (onnx_window.h) in kiln's 2-D form; 1-D and 2-D only.
Result<Window> ReadWindow(const OnnxNode& n, const Shape& x, std::vector<int64_t> kernel) {
  const int k = x.rank() - 2;
  if (k != 1 && k != 2)
    return n.Unsupported("only 1-D and 2-D windows are supported, got an input of shape ",
                         x.ToString());
  KILN_ASSIGN_OR_RETURN(OnnxWindow o, ReadOnnxWindow(n, x, std::move(kernel)));
  if (k == 2) return Window{o.kernel, o.strides, o.pads, o.dilations};
  return Window{
      {1, o.kernel[0]}, {1, o.strides[0]}, {0, o.pads[0], 0, o.pads[1]}, {1, o.dilations[0]}, true};
}

// Conv of x and w (the node's attributes), 1-D or 2-D.
Result<Value> Convolve(OnnxNode& n, Value x, Value w) {
  std::vector<int64_t> kernel(w.shape().dims().begin() + std::min(2, w.rank()),
                              w.shape().dims().end());
  KILN_ASSIGN_OR_RETURN(Window win, ReadWindow(n, x.shape(), kernel));
  KILN_ASSIGN_OR_RETURN(int64_t group, n.Int("group", 1));
  if (win.one_d) {
    x = Unsqueeze(x, {2});
    w = Unsqueeze(w, {2});
  }
  Value y = Conv2D(
      x, w,
      {.strides = win.strides, .pads = win.pads, .dilations = win.dilations, .groups = group});
  if (win.one_d) y = Squeeze(y, {2});
  return y;
}

Status ConvertConv(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value w, n.input(1));
  KILN_ASSIGN_OR_RETURN(Value y, Convolve(n, x, w));
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Value b, n.input(2));
    y = BiasAdd(y, b, 1);
  }
  n.SetOutput(0, y);
  return OkStatus();
}

// ConvTranspose as the input-gradient of a Conv2D whose output is X: W [C_in, C_out / group, k]
// is that Conv2D's filter. The output size follows pads, output_padding or output_shape.
Status ConvertConvTranspose(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value w, n.input(1));
  int k = x.rank() - 2;
  if (k != 1 && k != 2) return n.Unsupported("only 1-D and 2-D ConvTranspose is supported");
  std::vector<int64_t> kernel(w.shape().dims().begin() + std::min(2, w.rank()),
                              w.shape().dims().end());
  if (n.has_attr("kernel_shape")) {
    KILN_ASSIGN_OR_RETURN(kernel, n.Ints("kernel_shape"));
  }
  KILN_ASSIGN_OR_RETURN(int64_t group, n.Int("group", 1));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                        n.Ints("strides", std::vector<int64_t>(k, 1)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dil, n.Ints("dilations", std::vector<int64_t>(k, 1)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, n.Ints("pads", std::vector<int64_t>(2 * k, 0)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> out_pad,
                        n.Ints("output_padding", std::vector<int64_t>(k, 0)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> out_shape, n.Ints("output_shape"));
  KILN_ASSIGN_OR_RETURN(std::string auto_pad, n.String("auto_pad", "NOTSET"));
  if (static_cast<int>(kernel.size()) != k || static_cast<int>(strides.size()) != k ||
      static_cast<int>(dil.size()) != k || static_cast<int>(pads.size()) != 2 * k ||
      static_cast<int>(out_pad.size()) != k)
    return n.Fail("kernel_shape, strides, dilations, output_padding and pads must have ", k, ", ",
                  k, ", ", k, ", ", k, " and ", 2 * k, " entries");
  if (!out_shape.empty() && static_cast<int>(out_shape.size()) != k) {
    if (static_cast<int>(out_shape.size()) != k + 2)
      return n.Fail("output_shape must have ", k, " entries");
    out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  }
  int64_t c_out = w.rank() >= 2 ? w.shape()[1] * group : -1;
  std::vector<int64_t> out(k);
  for (int i = 0; i < k; ++i) {
    int64_t in = x.shape()[2 + i];
    if (in < 0 || kernel[i] < 0 || c_out < 0)
      return n.NotKnownYet("needs the spatial dims, kernel and channels known at import");
    int64_t full = strides[i] * (in - 1) + out_pad[i] + (kernel[i] - 1) * dil[i] + 1;
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t target = out_shape.empty() ? in * strides[i] : out_shape[i];
      // A negative total pads the end of the output (positions no input reaches get zeros).
      int64_t total = std::max<int64_t>(full - target, 0);
      full = std::max(full, target);
      bool upper = auto_pad == "SAME_UPPER";
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[k + i] = total - pads[i];
    } else if (auto_pad == "VALID") {
      pads[i] = pads[k + i] = 0;
    }
    out[i] = full - pads[i] - pads[k + i];
  }
  Conv2DOptions o{.strides = strides, .pads = pads, .dilations = dil, .groups = group};
  if (k == 1) {
    o = {{1, strides[0]}, {0, pads[0], 0, pads[1]}, {1, dil[0]}, group};
    out.insert(out.begin(), 1);
  }
  // A zero tensor of the output's shape, [N, C_out, out...], whatever N is at run time.
  int64_t in_h = k == 2 ? x.shape()[2] : 1, in_w = x.shape()[k == 2 ? 3 : 2];
  if (k == 1) {
    x = Unsqueeze(x, {2});
    w = Unsqueeze(w, {2});
  }
  Value like = Tile(Slice(ZerosLike(x), {0}, {1}, {1}), {1, c_out, 1, 1});
  like = Pad(like, {0, 0, 0, 0, 0, 0, out[0] - in_h, out[1] - in_w});
  Value y = Conv2DBackpropInput(x, w, like, o);
  if (k == 1) y = Squeeze(y, {2});
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Value b, n.input(2));
    y = BiasAdd(y, b, 1);
  }
  n.SetOutput(0, y);
  return OkStatus();
}

// ConvInteger: (x - x_zero_point) conv (w - w_zero_point) in int32, computed exactly in float64.
Status ConvertConvInteger(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value w, n.input(1));
  x = Cast(x, f64);
  w = Cast(w, f64);
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Value zx, n.input(2));
    x = x - Cast(zx, f64);
  }
  if (n.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(Value zw, n.input(3));
    w = w - (zw.rank() == 1 ? Reshape(Cast(zw, f64), {-1, 1, 1, 1}) : Cast(zw, f64));
  }
  KILN_ASSIGN_OR_RETURN(Value y, Convolve(n, x, w));
  n.SetOutput(0, Cast(y, i32));
  return OkStatus();
}

// QLinearConv: the convolution of the zero-point-shifted integers plus the int32 bias (exact in
// f64), requantized with x_scale * w_scale / y_scale (w_scale and w_zero_point per output channel
// when they are vectors).
Status ConvertQLinearConv(OnnxNode& n) {
  std::vector<Value> in;
  for (int i = 0; i < 8; ++i) {
    KILN_ASSIGN_OR_RETURN(Value v, n.input(i));
    in.push_back(v);
  }
  const int w_rank = in[3].rank();
  auto channel = [w_rank](Value v) {  // [O] along the weight's axis 0
    if (v.rank() != 1 || w_rank < 1) return v;
    std::vector<int64_t> shape(w_rank, 1);
    shape[0] = -1;
    return Reshape(v, shape);
  };
  Value x = Cast(in[0], f64) - Cast(in[2], f64);
  Value w = Cast(in[3], f64) - channel(Cast(in[5], f64));
  KILN_ASSIGN_OR_RETURN(Value acc, Convolve(n, x, w));
  const int rank = acc.rank();
  auto per_channel = [rank](Value v) {        // [O] along axis 1 of the output
    if (v.rank() != 1 || rank < 2) return v;  // (a refused convolution: the build reports it)
    std::vector<int64_t> shape(rank - 1, 1);
    shape[0] = -1;
    return Reshape(v, shape);
  };
  if (n.has_input(8)) {
    KILN_ASSIGN_OR_RETURN(Value bias, n.input(8));
    acc = acc + per_channel(Cast(bias, f64));
  }
  Value multiplier = Cast(in[1], f64) * per_channel(Cast(in[4], f64)) / Cast(in[6], f64);
  KILN_ASSIGN_OR_RETURN(Value y, Requantize(n, acc, multiplier, in[7]));
  n.SetOutput(0, y);
  return OkStatus();
}

// LRN across channels: x / (bias + alpha / size * (sum of x^2 over the channel window))^beta.
Status ConvertLrn(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(double alpha, n.Float("alpha", 1e-4));
  KILN_ASSIGN_OR_RETURN(double beta, n.Float("beta", 0.75));
  KILN_ASSIGN_OR_RETURN(double bias, n.Float("bias", 1.0));
  KILN_ASSIGN_OR_RETURN(int64_t size, n.Int("size", 0));
  if (size <= 0) return n.Fail("size must be > 0, got ", size);
  if (x.rank() < 3) return n.Fail("needs an input of rank >= 3, got ", x.shape().ToString());
  int64_t c = x.shape()[1];
  if (c < 0) return n.NotKnownYet("needs the channel count known at import");
  std::vector<int64_t> pads(2 * x.rank(), 0);
  pads[1] = (size - 1) / 2;
  pads[x.rank() + 1] = size - 1 - (size - 1) / 2;
  Value sq = Pad(Square(x), pads);
  Value sum;
  for (int64_t i = 0; i < size; ++i) {
    Value part = Slice(sq, {i}, {i + c}, {1});
    sum = sum.valid() ? Add(sum, part) : part;
  }
  Value base = sum * (alpha / static_cast<double>(size)) + bias;
  n.SetOutput(0, x / Pow(base, n.g().Scalar(beta, x.dtype())));
  return OkStatus();
}

std::vector<int64_t> SpatialAxes(int rank) {
  std::vector<int64_t> axes;
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  return axes;
}

Status ConvertGlobalPool(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  if (x.rank() < 3) return n.Fail("needs an input of rank >= 3, got ", x.shape().ToString());
  n.SetOutput(0, n.op_type() == "GlobalAveragePool" ? GlobalAvgPool(x)
                                                    : Max(x, SpatialAxes(x.rank()), true));
  return OkStatus();
}

// A per-channel [C] vector shaped [C, 1, ...] to broadcast over x [N, C, ...].
Value PerChannel(Value v, int rank) {
  std::vector<int64_t> shape(std::max(rank - 1, 1), 1);
  shape[0] = -1;
  return Reshape(v, shape);
}

Status ConvertBatchNorm(OnnxNode& n) {
  std::vector<Value> in;
  for (int i = 0; i < 5; ++i) {
    KILN_ASSIGN_OR_RETURN(Value v, n.input(i));
    in.push_back(v);
  }
  KILN_ASSIGN_OR_RETURN(double eps, n.Float("epsilon", 1e-5));
  KILN_ASSIGN_OR_RETURN(double momentum, n.Float("momentum", 0.9));
  KILN_ASSIGN_OR_RETURN(int64_t spatial, n.Int("spatial", 1));
  if (!spatial) return n.Unsupported("spatial = 0 (opset < 9) is not supported");
  KILN_ASSIGN_OR_RETURN(int64_t training, n.Int("training_mode", 0));
  std::vector<Value> r = BatchNorm(in[0], in[1], in[2], in[3], in[4], eps, training != 0);
  n.SetOutput(0, r[0]);
  if (training) {
    // Running statistics: input * momentum + batch statistic * (1 - momentum).
    n.SetOutput(1, in[3] * momentum + r[1] * (1 - momentum));
    n.SetOutput(2, in[4] * momentum + r[2] * (1 - momentum));
  } else if (n.wants_output(1) || n.wants_output(2)) {
    return n.Unsupported("outputs 1 and 2 exist only in training mode");
  }
  return OkStatus();
}

// (x - mean) / sqrt(var + eps) over `axes`, with the mean and 1/sqrt(var + eps) kept (keepdims).
struct Normalized {
  Value y, mean, inv_std;
};
Normalized Normalize(Value x, const std::vector<int64_t>& axes, double eps) {
  Value mean = Mean(x, axes, true);
  Value d = x - mean;
  Value inv = Rsqrt(Mean(Square(d), axes, true) + eps);
  return {d * inv, mean, inv};
}

Status ConvertInstanceNorm(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value scale, n.input(1));
  KILN_ASSIGN_OR_RETURN(Value bias, n.input(2));
  KILN_ASSIGN_OR_RETURN(double eps, n.Float("epsilon", 1e-5));
  if (x.rank() < 3) return n.Fail("needs an input of rank >= 3, got ", x.shape().ToString());
  Normalized z = Normalize(x, SpatialAxes(x.rank()), eps);
  n.SetOutput(0, z.y * PerChannel(scale, x.rank()) + PerChannel(bias, x.rank()));
  return OkStatus();
}

Status ConvertLayerNorm(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value scale, n.input(1));
  KILN_ASSIGN_OR_RETURN(int64_t axis_attr, n.Int("axis", -1));
  KILN_ASSIGN_OR_RETURN(double eps, n.Float("epsilon", 1e-5));
  KILN_ASSIGN_OR_RETURN(int axis, Axis(n, axis_attr, x.rank()));
  std::vector<int64_t> tail(x.shape().dims().begin() + axis, x.shape().dims().end());
  bool plain =
      !n.wants_output(1) && !n.wants_output(2) && n.has_input(2) && scale.shape().dims() == tail;
  if (plain) {
    KILN_ASSIGN_OR_RETURN(Value bias, n.input(2));
    if (bias.shape().dims() == tail) {
      n.SetOutput(0, LayerNorm(x, scale, bias, axis, eps));
      return OkStatus();
    }
  }
  std::vector<int64_t> axes;
  for (int i = axis; i < x.rank(); ++i) axes.push_back(i);
  Normalized z = Normalize(x, axes, eps);
  Value y = z.y * scale;
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Value bias, n.input(2));
    y = y + bias;
  }
  n.SetOutput(0, y);
  n.SetOutput(1, z.mean);
  n.SetOutput(2, z.inv_std);
  return OkStatus();
}

// (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over `axes` (default [0, 2, 3]).
Status ConvertMvn(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, n.Ints("axes", {0, 2, 3}));
  Value mean = Mean(x, axes, true);
  Value var = Mean(Square(x), axes, true) - Square(mean);
  n.SetOutput(0, (x - mean) / (Sqrt(var) + 1e-9));
  return OkStatus();
}

}  // namespace

// NonMaxSuppression: the optional limits as constants where absent (keep none; IoU 0; no score
// threshold, -inf), each a scalar.
Status ConvertNonMaxSuppression(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value boxes, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value scores, n.input(1));
  KILN_ASSIGN_OR_RETURN(int64_t center, n.Int("center_point_box", 0));
  std::vector<Value> limits;
  const double absent[] = {0.0, 0.0, -std::numeric_limits<double>::infinity()};
  for (int i = 2; i < 5; ++i) {
    if (!n.has_input(i)) {
      limits.push_back(n.g().Scalar(absent[i - 2], i == 2 ? i64 : f32));
      continue;
    }
    KILN_ASSIGN_OR_RETURN(Value v, n.input(i));
    limits.push_back(v.rank() == 0 ? v : Reshape(v, {}));
  }
  n.SetOutput(0, NonMaxSuppression(boxes, scores, limits[0], limits[1], limits[2], center != 0));
  return OkStatus();
}

// MaxUnpool(X, I, output_shape?): X's values scattered to the flat positions I (as MaxPool's
// Indices give them) of zeros shaped as the pooling's input would be, (H - 1) * stride + kernel -
// pads in each spatial dim; a larger output_shape adds zeros after the last row and column.
// Needs X's dims and output_shape's values known (else it converts when the run knows them).
Status ConvertMaxUnpool(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value indices, n.input(1));
  if (!x.shape().IsFullyKnown() || (n.has_input(2) && !n.known(2)))
    return n.NotKnownYet("needs its input's dims and output_shape known");
  const int spatial = x.rank() - 2;
  if (spatial < 1) return n.Fail("needs an input of rank >= 3, got ", x.type().ToString());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, n.Ints("kernel_shape"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                        n.Ints("strides", std::vector<int64_t>(spatial, 1)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads,
                        n.Ints("pads", std::vector<int64_t>(2 * spatial, 0)));
  if (static_cast<int>(kernel.size()) != spatial || static_cast<int>(strides.size()) != spatial ||
      static_cast<int>(pads.size()) != 2 * spatial)
    return n.Fail("kernel_shape, strides and pads must have ", spatial, ", ", spatial, " and ",
                  2 * spatial, " entries");
  std::vector<int64_t> dims = x.shape().dims();
  for (int d = 0; d < spatial; ++d)
    dims[2 + d] = (dims[2 + d] - 1) * strides[d] - pads[d] - pads[spatial + d] + kernel[d];
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total <= 0 || total > (int64_t{1} << 31))
    return n.Fail("the unpooled shape ", Shape(dims).ToString(), " is empty or too large");
  Value zeros = BroadcastTo(n.g().Scalar(0, x.dtype()), {total});
  Value flat_index = Reshape(indices.dtype() == i64 ? indices : Cast(indices, i64), {-1});
  Value y = Reshape(ScatterElements(zeros, flat_index, Reshape(x, {-1}), 0), dims);
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> want, n.ConstInts(2));
    if (want.size() != dims.size())
      return n.Fail("output_shape has ", want.size(), " entries for an input of rank ",
                    dims.size());
    std::vector<int64_t> grow(2 * dims.size(), 0);
    for (size_t d = 0; d < dims.size(); ++d) {
      if (want[d] < dims[d] || (d < 2 && want[d] != dims[d]))
        return n.Fail("output_shape ", Shape(want).ToString(), " is smaller than the unpooled ",
                      Shape(dims).ToString(), " or changes its batch or channels");
      grow[dims.size() + d] = want[d] - dims[d];
    }
    y = Pad(y, grow);
  }
  n.SetOutput(0, y);
  return OkStatus();
}

// RoiAlign: before opset 16 boxes had no half-pixel shift (output_half_pixel).
Status ConvertRoiAlign(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value rois, n.input(1));
  KILN_ASSIGN_OR_RETURN(Value indices, n.input(2));
  RoiAlignOptions o;
  KILN_ASSIGN_OR_RETURN(o.output_height, n.Int("output_height", 1));
  KILN_ASSIGN_OR_RETURN(o.output_width, n.Int("output_width", 1));
  KILN_ASSIGN_OR_RETURN(o.sampling_ratio, n.Int("sampling_ratio", 0));
  KILN_ASSIGN_OR_RETURN(o.spatial_scale, n.Float("spatial_scale", 1.0));
  KILN_ASSIGN_OR_RETURN(std::string mode, n.String("mode", "avg"));
  if (mode != "avg" && mode != "max") return n.Fail("mode must be avg or max, got '", mode, "'");
  o.max = mode == "max";
  KILN_ASSIGN_OR_RETURN(std::string coords, n.String("coordinate_transformation_mode",
                                                     n.opset() >= 16 ? "half_pixel" : ""));
  if (!coords.empty() && coords != "half_pixel" && coords != "output_half_pixel")
    return n.Fail("coordinate_transformation_mode must be half_pixel or output_half_pixel, got '",
                  coords, "'");
  o.half_pixel = coords == "half_pixel";
  if (rois.dtype() != x.dtype()) rois = Cast(rois, x.dtype());
  n.SetOutput(0, RoiAlign(x, rois, indices, o));
  return OkStatus();
}

void AddNnConverters(ConverterTable& t) {
  t["MaxUnpool"] = ConvertMaxUnpool;
  t["NonMaxSuppression"] = ConvertNonMaxSuppression;
  t["RoiAlign"] = ConvertRoiAlign;
  t["Conv"] = ConvertConv;
  t["ConvInteger"] = ConvertConvInteger;
  t["QLinearConv"] = ConvertQLinearConv;
  t["ConvTranspose"] = ConvertConvTranspose;
  t["LRN"] = ConvertLrn;
  t["GlobalAveragePool"] = ConvertGlobalPool;
  t["GlobalMaxPool"] = ConvertGlobalPool;
  t["BatchNormalization"] = ConvertBatchNorm;
  t["InstanceNormalization"] = ConvertInstanceNorm;
  t["LayerNormalization"] = ConvertLayerNorm;
  t["MeanVarianceNormalization"] = ConvertMvn;
}

}  // namespace kiln::onnx_import
