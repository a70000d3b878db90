// Shape vectors known only at run time (see ShapeDim in convert_context.h). kiln's shape ops take
// their shapes as attributes, so a shape that depends on an unknown dim (a dynamic batch or
// sequence axis) is turned into a tensor of zeros of that shape, built from Range, and the ONNX op
// becomes a shape-following op on it (ReshapeLike, broadcasting Add).
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/array_like.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"

namespace kiln::onnx_import {

Result<std::vector<ShapeDim>> ShapeDims(const OnnxNode& n, int i) {
  KILN_ASSIGN_OR_RETURN(Value s, n.input(i));
  if (s.rank() != 1 || s.shape()[0] < 0 || !IsInteger(s.dtype()))
    return n.Unsupported("input ", i, " '", n.input_name(i),
                         "' must be a 1-D integer shape of known length, got ",
                         DTypeName(s.dtype()), s.shape().ToString());
  const int64_t rank = s.shape()[0];
  if (rank > kMaxDynamicRank)
    return n.Fail("input ", i, " '", n.input_name(i), "' has ", rank, " entries; at most ",
                  kMaxDynamicRank, " dims are supported");
  std::optional<std::vector<DimEntry>> partial = n.Partial(i);
  if (partial && static_cast<int64_t>(partial->size()) != rank) partial.reset();
  Value s64 = s.dtype() == i64 ? s : Cast(s, i64);
  std::vector<ShapeDim> dims(rank);
  for (int64_t k = 0; k < rank; ++k) {
    if (partial && (*partial)[k].of.empty())
      dims[k].value = (*partial)[k].value;
    else
      dims[k].runtime = Reshape(Slice(s64, {k}, {k + 1}), {});
  }
  return dims;
}

Result<Value> ZerosOfDims(const OnnxNode& n, const std::vector<ShapeDim>& dims, DType dtype) {
  const int rank = static_cast<int>(dims.size());
  std::vector<int64_t> static_shape(rank, 1);
  for (int k = 0; k < rank; ++k) {
    if (dims[k].runtime.valid()) continue;
    if (dims[k].value < 0) return n.Fail("dim ", k, " of the shape is negative: ", dims[k].value);
    static_shape[k] = dims[k].value;
  }
  // The dims known at import in one constant; each run-time dim adds zeros broadcast along it.
  KILN_ASSIGN_OR_RETURN(Tensor zeros, NewTensor(n, i64, Shape(static_shape)));
  GraphBuilder& g = n.g();
  Value acc = g.Constant(zeros);
  const Value start = g.Constant(Tensor::Scalar<int64_t>(0));
  const Value delta = g.Constant(Tensor::Scalar<int64_t>(1));
  for (int k = 0; k < rank; ++k) {
    if (!dims[k].runtime.valid()) continue;
    std::vector<int64_t> along(rank, 1);
    along[k] = -1;
    acc = Add(acc, ZerosLike(Reshape(Range(start, dims[k].runtime, delta), along)));
  }
  return dtype == i64 ? acc : Cast(acc, dtype);
}

Result<Value> ReshapeToDims(const OnnxNode& n, Value x, std::vector<ShapeDim> dims,
                            bool allowzero) {
  GraphBuilder& g = n.g();
  auto scalar = [&g](int64_t v) { return g.Constant(Tensor::Scalar<int64_t>(v)); };
  // x's dim k, a number when known at import.
  auto dim_of_x = [&](int k) {
    if (x.shape()[k] >= 0) return ShapeDim{x.shape()[k], Value()};
    return ShapeDim{0, Reshape(Slice(ShapeOf(x), {k}, {k + 1}), {})};
  };
  int infer = -1;
  std::vector<int> runtime;  // entries read at run time: they may be 0 or -1 there
  for (int k = 0; k < static_cast<int>(dims.size()); ++k) {
    if (dims[k].runtime.valid()) {
      runtime.push_back(k);
      if (!allowzero && k < x.rank()) {  // a 0 copies x's dim k
        ShapeDim d = dim_of_x(k);
        Value copy = d.runtime.valid() ? d.runtime : scalar(d.value);
        dims[k].runtime = Select(Equal(dims[k].runtime, scalar(0)), copy, dims[k].runtime);
      }
      continue;
    }
    int64_t v = dims[k].value;
    if (v == 0 && !allowzero) {
      if (k >= x.rank())
        return n.Fail("shape entry ", k, " is 0 (copy) but the input has rank ", x.rank());
      dims[k] = dim_of_x(k);
    } else if (v == -1) {
      if (infer >= 0) return n.Fail("the shape has more than one -1");
      infer = k;
    } else if (v < 0) {
      return n.Fail("shape entry ", k, " is ", v, "; only -1 may be negative");
    }
  }
  if (infer < 0 && runtime.empty()) return n.Fail("internal: no entry is known at run time");
  // The element count of x over the product of the other entries. A run-time -1 makes the
  // product of all entries negative, hence its absolute value.
  int64_t known = 1;
  Value product;
  for (int k = 0; k < static_cast<int>(dims.size()); ++k) {
    if (k == infer) continue;
    if (!dims[k].runtime.valid()) {
      known *= dims[k].value;
      if (known <= 0 || known > (int64_t{1} << 40)) known = 1;  // x is then empty or invalid
    } else {
      product = product.valid() ? Mul(product, dims[k].runtime) : dims[k].runtime;
    }
  }
  Value divisor = scalar(known);
  if (product.valid()) divisor = Abs(Mul(divisor, product));
  Value inferred = Div(Prod(ShapeOf(x)), Maximum(divisor, scalar(1)));
  if (infer >= 0) {
    dims[infer].runtime = inferred;
  } else {
    for (int k : runtime)
      dims[k].runtime = Select(Equal(dims[k].runtime, scalar(-1)), inferred, dims[k].runtime);
  }
  KILN_ASSIGN_OR_RETURN(Value like, ZerosOfDims(n, dims, i64));
  return ReshapeLike(x, like);
}

}  // namespace kiln::onnx_import
