// ONNX MaxPool and AveragePool.
// - 1-D and 2-D windows without dilations and without MaxPool's Indices: kiln's MaxPool2D and
//   AvgPool2D (1-D through a size-1 H axis); integer max pooling in float64 (exact).
// - 3-D AveragePool without dilations: separable, an AvgPool2D over (H, W) of the [N, C*D, H, W]
//   view, then one over D of the [N, C, D, H*W] view: per-axis divisors multiply to the 3-D
//   window's (with or without the padding counted).
// - MaxPool with dilations, with Indices or over 3 or more spatial dims: the maximum of the
//   strided slices of the input padded with -inf, one slice per kernel offset; Indices (the
//   first maximum's position in x flattened, its spatial dims row-major, or column-major with
//   storage_order 1) follow the same slices of a constant index table. Needs the spatial dims
//   known.
// ceil_mode, count_include_pad and auto_pad as ONNX defines them; all differentiable.
#include <algorithm>
#include <limits>
#include <vector>

#include "ir/onnx/convert_context.h"
#include "ir/onnx/onnx_window.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
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

// MaxPool as the maximum of strided slices (see the header comment); returns Y and, when
// `indices`, Indices.
Result<std::vector<Value>> SlicedMaxPool(const OnnxNode& n, Value x, const OnnxWindow& w, bool ceil,
                                         bool indices, bool column_major_indices) {
  const int k = x.rank() - 2;
  // One Slice (and a Maximum or two Selects) per kernel offset.
  int64_t offsets = 1;
  for (int64_t size : w.kernel) {
    if (size < 1) return n.NotKnownYet("needs kernel_shape");
    offsets *= std::min<int64_t>(size, 1 << 13);
    if (offsets > 4096)
      return n.Unsupported("a window of more than 4096 points ", Shape(w.kernel).ToString(),
                           " with dilations, Indices or 3 or more spatial dims");
  }
  std::vector<int64_t> out(k), pads(2 * x.rank(), 0), axes(k);
  for (int i = 0; i < k; ++i) {
    const int64_t in = x.shape()[2 + i];
    if (in < 0) return n.NotKnownYet("needs the spatial dims known");
    const int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    out[i] = PooledLength(in, w.pads[i], w.pads[k + i], extent, w.strides[i], ceil);
    if (out[i] < 1) return n.Fail("the window does not fit the input ", x.shape().ToString());
    // Padded so that every slice stays inside: the last window may reach past the given pads.
    const int64_t needed = (out[i] - 1) * w.strides[i] + extent;
    pads[2 + i] = w.pads[i];
    pads[x.rank() + 2 + i] = std::max<int64_t>(needed - in - w.pads[i], 0);
    axes[i] = 2 + i;
  }
  const DType dtype = x.dtype();
  Value padded = Pad(IsFloat(dtype) ? x : Cast(x, f64), pads, "constant",
                     -std::numeric_limits<double>::infinity());
  Value positions;  // the flat index of every element of x, -1 in the padding
  if (indices) {
    if (!x.shape().IsFullyKnown()) return n.NotKnownYet("Indices need x's dims known");
    // Row-major, or with the spatial dims in column-major order (storage_order 1): the first
    // spatial dim then moves fastest.
    const Shape& dims = x.shape();
    std::vector<int64_t> column_stride(dims.rank(), 1);
    for (int d = 3; d < dims.rank(); ++d) column_stride[d] = column_stride[d - 1] * dims[d - 1];
    const int64_t plane = dims.NumElements() / std::max<int64_t>(dims[0] * dims[1], 1);
    KILN_ASSIGN_OR_RETURN(Tensor table, NewTensor(n, i64, dims));
    int64_t* at = table.data<int64_t>();
    for (int64_t flat = 0; flat < table.num_elements(); ++flat) {
      if (!column_major_indices) {
        at[flat] = flat;
        continue;
      }
      int64_t rest = flat % plane, moved = 0;
      for (int d = dims.rank() - 1; d >= 2; --d) {
        moved += (rest % dims[d]) * column_stride[d];
        rest /= dims[d];
      }
      at[flat] = flat - flat % plane + moved;
    }
    positions = Pad(n.g().Constant(table), pads, "constant", -1);
  }
  Value best, best_at;
  std::vector<int64_t> offset(k, 0);
  while (true) {
    std::vector<int64_t> begins(k), ends(k);
    for (int i = 0; i < k; ++i) {
      begins[i] = offset[i] * w.dilations[i];
      ends[i] = begins[i] + (out[i] - 1) * w.strides[i] + 1;
    }
    Value v = Slice(padded, begins, ends, axes, w.strides);
    if (!best.valid()) {
      best = v;
      if (indices) best_at = Slice(positions, begins, ends, axes, w.strides);
    } else if (indices) {  // a later offset wins only when larger: the first maximum stays
      Value larger = Greater(v, best);
      best = Select(larger, v, best);
      best_at = Select(larger, Slice(positions, begins, ends, axes, w.strides), best_at);
    } else {
      best = Maximum(best, v);
    }
    int i = k - 1;
    while (i >= 0 && ++offset[i] == w.kernel[i]) offset[i--] = 0;
    if (i < 0) break;
  }
  std::vector<Value> result = {IsFloat(dtype) ? best : Cast(best, dtype)};
  if (indices) result.push_back(best_at);
  return result;
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
    KILN_ASSIGN_OR_RETURN(std::vector<Value> y,
                          SlicedMaxPool(n, x, w, ceil_mode != 0, indices, storage_order == 1));
    for (size_t i = 0; i < y.size(); ++i) n.SetOutput(static_cast<int>(i), y[i]);
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
