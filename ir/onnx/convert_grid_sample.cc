// ONNX GridSample (opset 16; 4-D input) composed from kiln ops, as PyTorch's grid_sample computes
// it, so that it runs on every backend and has gradients for both the image and the grid:
// - the grid's normalized coordinates in [-1, 1] become pixel coordinates (align_corners: -1 and
//   1 are the centres of the corner pixels; else their outer edges);
// - padding_mode "border" clamps a coordinate into the image, "reflection" reflects it about the
//   image's borders (the corner centres with align_corners, the edges without) and then clamps,
//   "zeros" reads 0 outside;
// - "nearest" reads the pixel at the rounded coordinate (halves to even), "bilinear" weighs the
//   four neighbours, "bicubic" the 4x4 neighbours with the cubic convolution kernel (A = -0.75),
//   each neighbour's coordinate padded on its own.
// Every neighbour is one GatherElements from the image seen as [N, C, H*W]; weights and the
// in-image masks are elementwise. Needs C, H, W and the grid's dims known (else the node
// converts once the run knows them).
#include <string>
#include <vector>

#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/array_elements.h"
#include "ir/ops/math.h"

namespace kiln::onnx_import {
namespace {

enum class Padding { kZeros, kBorder, kReflection };

struct Sampler {
  GraphBuilder& g;
  Value image;  // [N, C, H*W]
  int64_t channels, height, width;
  Padding padding;
  bool align;
  DType dtype;

  Value Scalar(double v) const { return g.Scalar(v, dtype); }

  // Pixel coordinate along an axis of `size` pixels from a normalized one.
  Value Unnormalize(Value c, int64_t size) const {
    const auto s = static_cast<double>(size);
    return align ? (c + 1.0) * (0.5 * (s - 1)) : ((c + 1.0) * s - 1.0) * 0.5;
  }

  // Reflects c about [twice_low / 2, twice_high / 2] until it falls inside.
  Value Reflect(Value c, double twice_low, double twice_high) const {
    if (twice_low == twice_high) return ZerosLike(c);
    const double low = twice_low / 2, span = (twice_high - twice_low) / 2;
    Value distance = Abs(c - low);
    Value flips = Floor(distance / span);
    Value extra = distance - flips * span;
    Value even = Equal(flips - Floor(flips * 0.5) * 2.0, Scalar(0));
    return Select(even, extra + low, (span + low) - extra);
  }

  // The padding mode applied to a coordinate along an axis of `size` pixels.
  Value Pad(Value c, int64_t size) const {
    const auto s = static_cast<double>(size);
    if (padding == Padding::kBorder) return Clip(c, 0, s - 1);
    if (padding == Padding::kReflection)
      return Clip(align ? Reflect(c, 0, 2 * (s - 1)) : Reflect(c, -1, 2 * s - 1), 0, s - 1);
    return c;
  }

  // weight * image[n, :, y, x] for whole-number coordinates x, y [N, Ho, Wo] (0 outside the
  // image), as [N, C, Ho * Wo].
  Value Tap(Value x, Value y, Value weight) const {
    const auto w = static_cast<double>(width), h = static_cast<double>(height);
    Value inside = And(And(GreaterEqual(x, Scalar(0)), Less(x, Scalar(w))),
                       And(GreaterEqual(y, Scalar(0)), Less(y, Scalar(h))));
    Value at = Cast(Clip(y, 0, h - 1) * w + Clip(x, 0, w - 1), i64);
    Value index = Tile(Reshape(at, {0, 1, -1}), {1, channels, 1});
    Value masked = weight * Cast(inside, dtype);
    return GatherElements(image, index, 2) * Reshape(masked, {0, 1, -1});
  }
};

// The cubic convolution weights of the four neighbours at t - 1, t, t + 1, t + 2 for a fraction
// t in [0, 1).
std::vector<Value> CubicWeights(Value t) {
  const double a = -0.75;
  auto near = [a](Value x) { return ((x * (a + 2) - (a + 3)) * x) * x + 1.0; };   // |x| <= 1
  auto far = [a](Value x) { return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  return {far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)};
}

Status ConvertGridSample(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value grid, n.input(1));
  KILN_ASSIGN_OR_RETURN(std::string mode, n.String("mode", "bilinear"));
  KILN_ASSIGN_OR_RETURN(std::string padding_mode, n.String("padding_mode", "zeros"));
  KILN_ASSIGN_OR_RETURN(int64_t align, n.Int("align_corners", 0));
  if (mode == "linear") mode = "bilinear";  // opset 20's names
  if (mode == "cubic") mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return n.Fail("mode must be bilinear, nearest or bicubic, got '", mode, "'");
  Padding padding = Padding::kZeros;
  if (padding_mode == "border")
    padding = Padding::kBorder;
  else if (padding_mode == "reflection")
    padding = Padding::kReflection;
  else if (padding_mode != "zeros")
    return n.Fail("padding_mode must be zeros, border or reflection, got '", padding_mode, "'");
  if (x.rank() != 4)
    return n.Unsupported("only 4-D input [N, C, H, W] is supported, got ", x.type().ToString());
  if (!IsFloat(x.dtype())) return n.Fail("X must be floats, got ", x.type().ToString());
  if (grid.rank() != 4 || grid.shape()[3] != 2)
    return n.Fail("the grid must be [N, H_out, W_out, 2], got ", grid.type().ToString());
  const Shape& xs = x.shape();
  const Shape& gs = grid.shape();
  if (xs[0] >= 0 && gs[0] >= 0 && xs[0] != gs[0])
    return n.Fail("X has ", xs[0], " images but the grid ", gs[0]);
  if (xs[1] < 0 || xs[2] < 0 || xs[3] < 0 || gs[1] < 0 || gs[2] < 0)
    return n.NotKnownYet("needs C, H, W and the grid's dims known");
  if (xs[2] == 0 || xs[3] == 0) return n.Fail("cannot sample an empty image ", x.type().ToString());
  if (grid.dtype() != x.dtype()) grid = Cast(grid, x.dtype());
  const Sampler s{n.g(),    Reshape(x, {0, 0, -1}), xs[1], xs[2], xs[3], padding, align != 0,
                  x.dtype()};
  Value ix = s.Unnormalize(Reshape(Slice(grid, {0}, {1}, {3}), {0, 0, 0}), xs[3]);
  Value iy = s.Unnormalize(Reshape(Slice(grid, {1}, {2}, {3}), {0, 0, 0}), xs[2]);
  Value sum;
  auto add = [&sum](Value v) { sum = sum.valid() ? sum + v : v; };
  if (mode == "bicubic") {
    Value x0 = Floor(ix), y0 = Floor(iy);
    std::vector<Value> wx = CubicWeights(ix - x0), wy = CubicWeights(iy - y0);
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i)
        add(s.Tap(s.Pad(x0 + (i - 1.0), xs[3]), s.Pad(y0 + (j - 1.0), xs[2]), wx[i] * wy[j]));
  } else {
    ix = s.Pad(ix, xs[3]);
    iy = s.Pad(iy, xs[2]);
    if (mode == "nearest") {
      add(s.Tap(Round(ix), Round(iy), OnesLike(ix)));
    } else {
      Value x0 = Floor(ix), y0 = Floor(iy);
      Value fx = ix - x0, fy = iy - y0;
      add(s.Tap(x0, y0, (1.0 - fx) * (1.0 - fy)));
      add(s.Tap(x0 + 1.0, y0, fx * (1.0 - fy)));
      add(s.Tap(x0, y0 + 1.0, (1.0 - fx) * fy));
      add(s.Tap(x0 + 1.0, y0 + 1.0, fx * fy));
    }
  }
  n.SetOutput(0, Reshape(sum, {0, 0, gs[1], gs[2]}));
  return OkStatus();
}

}  // namespace

void AddGridSampleConverter(ConverterTable& t) { t["GridSample"] = ConvertGridSample; }

}  // namespace kiln::onnx_import
