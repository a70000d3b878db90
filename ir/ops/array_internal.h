// Internal to op family "array": the inference functions that RegisterArrayOps (ir/ops/array.cc)
// registers, defined in ir/ops/array_layout.cc and ir/ops/array_index.cc, and the attribute
// interpretations that the reference kernels (runtime/reference/array*.cc) and the compiler's
// lowerings (compiler/copy_lowering.cc) share with inference, so that all read an attribute the
// same way. Not part of the public API.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/attr.h"
#include "ir/checked_math.h"
#include "ir/op_registry.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln::internal {

// Inference (array_layout.cc): ops that rearrange or broadcast all elements.
Status InferReshape(InferContext& ctx);
Status InferTranspose(InferContext& ctx);
Status InferSqueeze(InferContext& ctx);
Status InferUnsqueeze(InferContext& ctx);
Status InferFlatten(InferContext& ctx);
Status InferBroadcastTo(InferContext& ctx);
Status InferTile(InferContext& ctx);
Status InferShape(InferContext& ctx);
// Shape's value: its input's dims, once they are all known.
Result<std::vector<Tensor>> ShapeValue(const InferContext& ctx);
// Inference (array_index.cc): ops that select, join or create elements.
Status InferConcat(InferContext& ctx);
Status InferSplit(InferContext& ctx);
Status InferSlice(InferContext& ctx);
Status InferGather(InferContext& ctx);
Status InferPad(InferContext& ctx);
Status InferOneHot(InferContext& ctx);
Status InferRange(InferContext& ctx);
Status InferNonZero(InferContext& ctx);
// Inference (array_grad.cc): the backward ops, whose output has the run-time shape of their
// "like" input (the forward op's input) and whose incoming gradient must fit the forward output.
Status InferTileGrad(InferContext& ctx);
Status InferSliceGrad(InferContext& ctx);
Status InferPadGrad(InferContext& ctx);
Status InferGatherGrad(InferContext& ctx);
Status InferConcatGrad(InferContext& ctx);

// Forward output shapes from given input shapes and the node's attributes (the forward ops'
// inference, shared with the backward ops'); errors name the bad attribute or shape.
Result<Shape> TiledShape(const InferContext& ctx, const Shape& in);  // array_layout.cc
Result<Shape> ConcatenatedShape(const InferContext& ctx, const std::vector<Shape>& in);
Result<Shape> SlicedShape(const InferContext& ctx, const Shape& in);
Result<Shape> GatheredShape(const InferContext& ctx, const Shape& data, const Shape& indices);
Result<Shape> PaddedShape(const InferContext& ctx, const Shape& in);

// "[1, -1, 0]": an int-list attribute for error messages.
inline std::string IntsToString(const std::vector<int64_t>& v) { return Shape(v).ToString(); }

// Transpose's permutation for an input of `rank` (an empty `perm` attribute reverses the dims).
// The caller has validated it (InferTranspose does).
std::vector<int64_t> TransposePermutation(const AttrMap& attrs, int rank);

// One dimension of a Slice, before clamping.
struct SliceDim {
  int64_t begin = 0;
  int64_t end = INT64_MAX;
  int64_t step = 1;
};
// Slice's attributes (begins, ends, axes, steps, defaults filled) as one SliceDim per input
// dimension (untouched dims take everything), or an error describing the bad attribute.
Result<std::vector<SliceDim>> SliceDims(const AttrMap& attrs, int rank);
// First input index and element count of a slice of a dimension of known size `dim`, clamped as
// Python's slice.indices does.
struct SliceExtent {
  int64_t start = 0;
  int64_t count = 0;
};
SliceExtent ClampSlice(const SliceDim& s, int64_t dim);

// Range's length from its three scalar inputs; an error when delta is 0 or the length is not
// finite or too large.
Result<int64_t> RangeLength(const Tensor& start, const Tensor& limit, const Tensor& delta);

}  // namespace kiln::internal
