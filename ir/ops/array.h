// Op family "array": ops that move, select or create elements without arithmetic on them —
// Reshape, Transpose, Concat, Split, Slice, Gather, Pad, Tile, BroadcastTo, Squeeze, Unsqueeze,
// Flatten, Shape, OneHot, Range and NonZero. All but OneHot and Range take any dtype.
//
// Shapes follow ONNX/numpy, with every parameter a compile-time attribute:
// - Reshape: at most one -1 (inferred), 0 copies the input dim at the same position.
// - Slice: per-axis begin/end/step with Python/numpy clamping: negative indices count from the
//   end, out-of-range ends clamp (pass INT64_MAX for "to the end", INT64_MIN with a negative step
//   for "to the beginning"), negative steps walk backwards.
// - Gather: output = data.shape[:axis] + indices.shape + data.shape[axis+1:]; negative indices
//   count from the end; an index out of range is a run-time error naming it.
// - Pad: pads in ONNX order [x1_begin, x2_begin, ..., x1_end, x2_end]; negative pads crop (never
//   more than the dimension holds); mode "constant" (fills `value`), "reflect" (mirror without
//   repeating the edge, needs pad < dim) or "edge" (repeats the edge, needs a non-empty dim).
// - OneHot: an index outside [-depth, depth) gives a row of off_value (ONNX semantics), not an
//   error; negative indices count from the end.
// - Range: length max(0, ceil((limit - start) / delta)), computed exactly for integer dtypes;
//   element i is start + i * delta. delta == 0 is an error.
// - NonZero: the positions of x's non-zero elements (true for bools, NaN counts as non-zero) in
//   row-major order, as i64 [rank, count]: column j holds the j-th one's index in every dim
//   (ONNX NonZero). count is known only once x's values are.
// Gradients: every op but Shape, OneHot, Range and NonZero is differentiable
// (ir/ops/array_grad.cc). The backward ops TileGrad, SliceGrad, PadGrad, GatherGrad and ConcatGrad
// (not differentiable themselves) take the forward op's attributes and, as `*_like`, the forward
// op's input, whose run-time shape their result takes; they add (scatter) dy back into zeros of
// that shape. Invalid input Values give invalid Values (the builder recorded the first error); bad
// attributes are reported by GraphBuilder::Build() with the node and the C++ line that built it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace kiln {

// `shape` may hold one -1 (inferred from the element count) and 0s (copy the input dim).
Value Reshape(At x, std::vector<int64_t> shape);
// Output dim i is input dim perm[i]; an empty perm reverses the dims.
Value Transpose(At x, std::vector<int64_t> perm = {});
// Joins one or more tensors (same dtype and rank, equal dims except `axis`) along `axis`.
Value Concat(const std::vector<Value>& values, int64_t axis,
             SourceLocation loc = SourceLocation::current());
// Splits `x` along `axis` into pieces of the given sizes (which sum to the dim).
std::vector<Value> Split(At x, int64_t axis, std::vector<int64_t> sizes);
// Splits `x` along `axis` into `num_outputs` equal pieces (which must divide the dim).
std::vector<Value> SplitEven(At x, int64_t axis, int64_t num_outputs);
// x[begins[k]:ends[k]:steps[k]] on axis axes[k]; axes default to 0..n-1, steps to 1.
Value Slice(At x, std::vector<int64_t> begins, std::vector<int64_t> ends,
            std::vector<int64_t> axes = {}, std::vector<int64_t> steps = {});
// Takes the slices of `data` along `axis` named by `indices` (i32 or i64, any shape).
Value Gather(At data, Value indices, int64_t axis = 0);
// mode: "constant", "reflect" or "edge"; `value` fills constant padding.
Value Pad(At x, std::vector<int64_t> pads, const std::string& mode = "constant",
          double value = 0.0);
// Repeats `x` multiples[i] times along dim i.
Value Tile(At x, std::vector<int64_t> multiples);
// Numpy broadcast of `x` to exactly `shape`.
Value BroadcastTo(At x, std::vector<int64_t> shape);
// Removes the given size-1 axes; with none given, every size-1 axis (needs known dims).
Value Squeeze(At x, std::vector<int64_t> axes = {});
// Inserts size-1 axes at `axes`, positions in the output.
Value Unsqueeze(At x, std::vector<int64_t> axes);
// 2-D [prod(dims[:axis]), prod(dims[axis:])]; axis in [-rank, rank].
Value Flatten(At x, int64_t axis = 1);
// The run-time shape of `x` as an i64 vector of length rank (op "Shape"; named ShapeOf because
// kiln::Shape is the shape class).
Value ShapeOf(At x);
// A `dtype` tensor with a new axis of length `depth` at `axis` (of the output): on_value where the
// axis position equals the index, off_value elsewhere.
Value OneHot(At indices, int64_t depth, DType dtype = f32, double on_value = 1.0,
             double off_value = 0.0, int64_t axis = -1);
// 1-D [start, start + delta, ...) up to `limit`, from three numeric scalars of one dtype.
Value Range(At start, Value limit, Value delta);
Value NonZero(At x);

// Backward ops (float dtypes; `dy` must have the forward output's shape).
// Sums the tiles of dy: dx[i] = sum of dy over the copies of x[i].
Value TileGrad(At dy, Value x_like, std::vector<int64_t> multiples);
// dy written into zeros shaped like x at the positions Slice took.
Value SliceGrad(At dy, Value x_like, std::vector<int64_t> begins, std::vector<int64_t> ends,
                std::vector<int64_t> axes = {}, std::vector<int64_t> steps = {});
// Each dy element added to the x element Pad copied it from (dropped for constant padding).
Value PadGrad(At dy, Value x_like, std::vector<int64_t> pads, const std::string& mode = "constant",
              double value = 0.0);
// dy scatter-added along `axis` into zeros shaped like data; repeated indices accumulate.
Value GatherGrad(At dy, Value indices, Value data_like, int64_t axis = 0);
// dy split along `axis` into pieces shaped like each of `values_like` (any dtype).
std::vector<Value> ConcatGrad(At dy, const std::vector<Value>& values_like, int64_t axis);

}  // namespace kiln
