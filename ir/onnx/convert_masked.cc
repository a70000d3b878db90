// ONNX ops composed from masks and products built at import: Trilu (a triangular mask selects the
// kept elements; its diagonal k may be fed at run time: the mask then compares a constant of
// column-minus-row offsets with it) and CumSum (a product with a triangular matrix of ones along
// the axis; integer sums are exact, float sums are rounded in a different order than a running
// sum; the axis must be known at import unless the input has rank 1, where it can only be 0).
// Both need the affected dims known at import.
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"

namespace kiln::onnx_import {
namespace {

Status ConvertTrilu(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(int64_t upper, n.Int("upper", 1));
  if (x.rank() < 2) return n.Fail("needs an input of rank >= 2, got ", x.shape().ToString());
  int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
  if (rows < 0 || cols < 0)
    return n.NotKnownYet("needs the last two dims known at import, got ", x.shape().ToString());
  const Value zero = n.g().Scalar(0, x.dtype());
  if (n.has_input(1) && !n.known(1)) {  // k fed at run time
    KILN_ASSIGN_OR_RETURN(Value k, n.input(1));
    if (k.shape().NumElements() != 1 || !IsInteger(k.dtype()))
      return n.Fail("input 1 'k' must be one integer, got ", DTypeName(k.dtype()),
                    k.shape().ToString());
    KILN_ASSIGN_OR_RETURN(Tensor offsets, NewTensor(n, i64, Shape{rows, cols}));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) offsets.SetInt(i * cols + j, j - i);
    const Value d = n.g().Constant(offsets);
    const Value k64 = Reshape(k.dtype() == i64 ? k : Cast(k, i64), {});
    n.SetOutput(0, Select(upper ? GreaterEqual(d, k64) : LessEqual(d, k64), x, zero));
    return OkStatus();
  }
  int64_t k = 0;
  if (n.has_input(1)) {
    KILN_ASSIGN_OR_RETURN(double kd, n.ConstScalar(1));
    k = static_cast<int64_t>(kd);
  }
  KILN_ASSIGN_OR_RETURN(Tensor mask, NewTensor(n, boolean, Shape{rows, cols}));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask.SetInt(i * cols + j, upper ? j - i >= k : j - i <= k);
  n.SetOutput(0, Select(n.g().Constant(mask), x, zero));
  return OkStatus();
}

Status ConvertCumSum(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(int64_t exclusive, n.Int("exclusive", 0));
  KILN_ASSIGN_OR_RETURN(int64_t reverse, n.Int("reverse", 0));
  int rank = x.rank();
  if (rank == 0) return n.Fail("needs an input of rank >= 1");
  // Of rank 1, the only axis is 0 (ONNX allows -1 for it too), whatever value is fed.
  int axis = 0;
  if (rank > 1 || n.known(1)) {
    KILN_ASSIGN_OR_RETURN(double axis_d, n.ConstScalar(1));
    KILN_ASSIGN_OR_RETURN(axis, Axis(n, static_cast<int64_t>(axis_d), rank));
  }
  int64_t len = x.shape()[axis];
  if (len < 0) return n.NotKnownYet("needs the size of the summed axis known at import");
  // y[..., i] = sum over j of x[..., j] * u[j][i]: u[j][i] = 1 when j is summed into i.
  KILN_ASSIGN_OR_RETURN(Tensor u, NewTensor(n, x.dtype(), Shape{len, len}));
  for (int64_t j = 0; j < len; ++j)
    for (int64_t i = 0; i < len; ++i) {
      bool in = reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
      u.SetDouble(j * len + i, in ? 1 : 0);
    }
  std::vector<int64_t> perm;
  for (int i = 0; i < rank; ++i)
    if (i != axis) perm.push_back(i);
  perm.push_back(axis);  // the summed axis last
  std::vector<int64_t> back(rank);
  for (int i = 0; i < rank; ++i) back[perm[i]] = i;
  bool moved = axis != rank - 1;
  Value t = moved ? Transpose(x, perm) : x;
  Value y = MatMul(t, n.g().Constant(u));
  n.SetOutput(0, moved ? Transpose(y, back) : y);
  return OkStatus();
}

}  // namespace

void AddMaskedConverters(ConverterTable& t) {
  t["Trilu"] = ConvertTrilu;
  t["CumSum"] = ConvertCumSum;
}

}  // namespace kiln::onnx_import
