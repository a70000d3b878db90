// ONNX MaxPool and AveragePool.
// - 1-D and 2-D windows without dilations and without MaxPool's Indices: kiln's MaxPool2D and
//   AvgPool2D (1-D through a size-1 H axis); integer max pooling in float64 (exact).
// - 3-D AveragePool without dilations: separable, an AvgPool2D over (H, W) of the [N, C*D, H, W]
//   view, then one over D of the [N, C, D, H*W] view: per-axis divisors multiply to the 3-D
//   window's (with or without the padding counted).
// - MaxPool with dilations, with Indices or over 3 or more spatial dims: kiln's
//   MaxPoolWithArgmax, whose argmax is ONNX's Indices (the first maximum's position in x
//   flattened, its spatial dims row-major); with storage_order 1 the spatial part is renumbered
//   column-major by integer arithmetic (needs the spatial dims known).
// ceil_mode, count_include_pad and auto_pad as ONNX defines them; all differentiable.
#include <algorithm>
#include <vector>

#include "ir/onnx/convert_context.h"
#include "ir/onnx/onnx_window.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/max_pool_with_argmax.h"
#include "ir/ops/nn.h"

namespace kiln::onnx_import {
namespace {

// The 2-D pooling of x [N, C, H, W] (kiln's op), integer max pooling through float64.
Value Pool2D(Value x, const Pool2DOptions& o, bool max) {
  const DType dtype = x.dtype();
  if (!IsFloat(dtype)) x = Cast(x, f64);
  Value y = max ? MaxPool2D(x, o) : AvgPool2D(x, o);
  return IsFloat(dtype) ? y : Cast(y, dtype);
}

// ONNX's Indices with storage_order 1 from row-major ones: within each (n, c) plane the spatial
// dims (known) are numbered column-major (the first moves fastest); -1 (a window of padding)
// stays.
Value ColumnMajorIndices(GraphBuilder& g, Value row_major, const Shape& x) {
  const int k = x.rank() - 2;
  int64_t plane = 1;
  for (int d = 2; d < x.rank(); ++d) plane *= x[d];
  auto constant = [&g](int64_t v) { return g.Scalar(static_cast<double>(v), i64); };
  Value inside = GreaterEqual(row_major, constant(0));
  Value at = Select(inside, row_major, ZerosLike(row_major));
  Value rest = at - (at / constant(plane)) * constant(plane);  // the position in its plane
  Value column_major = at - rest;
  int64_t column_stride = 1;
  for (int i = 0; i < k; ++i) column_stride *= x[2 + i];
  for (int i = k - 1; i >= 0; --i) {  // the last dim's coordinate first
    const int64_t size = x[2 + i];
    column_stride /= size;
    Value coordinate = rest - (rest / constant(size)) * constant(size);
    column_major = column_major + coordinate * constant(column_stride);
    rest = rest / constant(size);
  }
  return Select(inside, column_major, row_major);
}

// AveragePool over 3 spatial dims as two 2-D poolings (see the header comment).
Result<Value> SeparableAvgPool3D(const OnnxNode& n, Value x, const OnnxWindow& w, bool ceil,
                                 bool include_pad) {
  const Shape& s = x.shape();
  for (int d = 1; d < 5; ++d)
    if (s[d] < 0) return n.NotKnownYet("needs C and the spatial dims known");
  Pool2DOptions plane{.kernel = {w.kernel[1], w.kernel[2]},
                      .strides = {w.strides[1], w.strides[2]},
                      .pads = {w.pads[1], w.pads[2], w.pads[4], w.pads[5]},
                      .ceil_mode = ceil,
                      .count_include_pad = include_pad};
  // The pooled lengths, checked here (the ops' results are not read before the graph builds).
  int64_t out[3];
  for (int i = 0; i < 3; ++i) {
    out[i] = PooledLength(s[2 + i], w.pads[i], w.pads[3 + i], w.kernel[i], w.strides[i], ceil);
    if (out[i] < 1) return n.Fail("the window does not fit the input ", x.type().ToString());
  }
  const int64_t h = out[1], wd = out[2];
  Value y = AvgPool2D(Reshape(x, {0, s[1] * s[2], s[3], s[4]}), plane);
  Pool2DOptions depth{.kernel = {w.kernel[0], 1},
                      .strides = {w.strides[0], 1},
                      .pads = {w.pads[0], 0, w.pads[3], 0},
                      .ceil_mode = ceil,
                      .count_include_pad = include_pad};
  y = AvgPool2D(Reshape(y, {0, s[1], s[2], h * wd}), depth);
  return Reshape(y, {0, s[1], out[0], h, wd});
}

Status ConvertPool(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  if (x.rank() < 3) return n.Fail("needs an input [N, C, spatial...], got ", x.type().ToString());
  KILN_ASSIGN_OR_RETURN(OnnxWindow w, ReadOnnxWindow(n, x.shape(), {}));
  KILN_ASSIGN_OR_RETURN(int64_t ceil_mode, n.Int("ceil_mode", 0));
  KILN_ASSIGN_OR_RETURN(int64_t include_pad, n.Int("count_include_pad", 0));
  const bool max = n.op_type() == "MaxPool";
  const int k = x.rank() - 2;
  const bool dilated =
      std::any_of(w.dilations.begin(), w.dilations.end(), [](int64_t d) { return d != 1; });
  const bool indices = max && n.wants_output(1);
  KILN_ASSIGN_OR_RETURN(int64_t storage_order, n.Int("storage_order", 0));
  if (max && (dilated || indices || k > 2)) {
    if (indices && storage_order == 1)
      for (int d = 2; d < x.rank(); ++d) {
        if (x.shape()[d] < 0) return n.NotKnownYet("column-major Indices need the spatial dims");
        if (x.shape()[d] == 0) return n.Fail("cannot pool an empty input ", x.type().ToString());
      }
    MaxPoolWithArgmaxResult y = MaxPoolWithArgmax(x, {.kernel = w.kernel,
                                                      .strides = w.strides,
                                                      .dilations = w.dilations,
                                                      .pads = w.pads,
                                                      .ceil_mode = ceil_mode != 0});
    n.SetOutput(0, y.y);
    if (indices)
      n.SetOutput(1,
                  storage_order == 1 ? ColumnMajorIndices(n.g(), y.argmax, x.shape()) : y.argmax);
    return OkStatus();
  }
  if (dilated) return n.Unsupported("AveragePool with dilations is not supported");
  if (k == 3) {
    KILN_ASSIGN_OR_RETURN(Value y, SeparableAvgPool3D(n, x, w, ceil_mode != 0, include_pad != 0));
    n.SetOutput(0, y);
    return OkStatus();
  }
  if (k > 3) return n.Unsupported("AveragePool over ", k, " spatial dims is not supported");
  Pool2DOptions o{.kernel = w.kernel,
                  .strides = w.strides,
                  .pads = w.pads,
                  .ceil_mode = ceil_mode != 0,
                  .count_include_pad = include_pad != 0};
  if (k == 1) {
    o = {{1, w.kernel[0]},
         {1, w.strides[0]},
         {0, w.pads[0], 0, w.pads[1]},
         o.ceil_mode,
         o.count_include_pad};
    n.SetOutput(0, Squeeze(Pool2D(Unsqueeze(x, {2}), o, max), {2}));
    return OkStatus();
  }
  n.SetOutput(0, Pool2D(x, o, max));
  return OkStatus();
}

}  // namespace

void AddPoolConverters(ConverterTable& t) {
  t["MaxPool"] = ConvertPool;
  t["AveragePool"] = ConvertPool;
}

}  // namespace kiln::onnx_import
