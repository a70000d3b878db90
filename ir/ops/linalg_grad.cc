// Gradients of op family "linalg", written with the same op functions a user would call. Ranks are
// known at build time; dims may be unknown (-1), so shapes are only ever taken from run-time
// tensors (SumToShapeOf, the backward ops' *_like inputs).
#include "ir/ops/linalg_grad.h"

#include <algorithm>
#include <vector>

#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/reduce.h"

namespace kiln::internal {
namespace {

// y = op(A) @ op(B) on stacks of matrices (op = transpose when the flag is set). 1-D operands are
// first promoted as numpy does (a -> [1, K], b -> [K, 1], and dy gets the removed dims back), so
// that every case is the matrix case:
//   dA = dY @ op(B)^T, stored as op(A) is: (dY @ op(B)^T)^T when transpose_a;
//   dB = op(A)^T @ dY, stored as op(B) is: (op(A)^T @ dY)^T when transpose_b.
// The products have the broadcast batch dims; SumToShapeOf reduces them to each operand's
// (except a weight matrix under a stack of activations: its gradient is one product over all
// rows).
// With out_dtype f32 over 16-bit operands, dy is rounded to the operands' dtype first.
Status MatMulGrad(GradContext& ctx) {
  Value a = ctx.input(0), b = ctx.input(1), dy = ctx.grad(0);
  if (dy.dtype() != a.dtype()) dy = Cast(dy, a.dtype());
  bool a_vector = a.rank() == 1, b_vector = b.rank() == 1;
  bool ta = ctx.attrs().Find("transpose_a")->get<bool>() && !a_vector;
  bool tb = ctx.attrs().Find("transpose_b")->get<bool>() && !b_vector;
  Value a2 = a_vector ? Unsqueeze(a, {0}) : a;
  Value b2 = b_vector ? Unsqueeze(b, {1}) : b;
  int64_t rank = std::max(a2.rank(), b2.rank());  // of the promoted product
  std::vector<int64_t> restored;
  if (a_vector) restored.push_back(rank - 2);
  if (b_vector) restored.push_back(rank - 1);
  Value dy2 = restored.empty() ? dy : Unsqueeze(dy, restored);
  Value da = ta ? MatMul(b2, dy2, tb, true) : MatMul(dy2, b2, false, !tb);
  Value db;
  const int64_t k = a2.shape().dims().back(), n = dy2.shape().dims().back();
  if (!a_vector && !b_vector && !ta && a2.rank() > 2 && b2.rank() == 2 && k > 0 && n > 0) {
    // Activations [..., M, K] times one weight matrix (a Linear layer over a sequence): dB is a
    // single product over every row of the batch, [K, rows] @ [rows, N], instead of one product
    // per batch entry summed afterwards (which writes batch x K x N floats).
    Value rows_a = Reshape(a2, {-1, k}), rows_dy = Reshape(dy2, {-1, n});
    db = tb ? MatMul(rows_dy, rows_a, true, false) : MatMul(rows_a, rows_dy, true, false);
  } else {
    db = tb ? MatMul(dy2, a2, true, ta) : MatMul(a2, dy2, !ta, false);
  }
  if (a_vector) da = Squeeze(da, {rank - 2});
  if (b_vector) db = Squeeze(db, {rank - 1});
  ctx.SetInputGrad(0, SumToShapeOf(da, a));
  ctx.SetInputGrad(1, SumToShapeOf(db, b));
  return OkStatus();
}

// y = x + bias broadcast along `axis`: dx = dy, dbias = dy summed over every other axis.
Status BiasAddGrad(GradContext& ctx) {
  Value dy = ctx.grad(0);
  int rank = ctx.input(0).rank();
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.attrs().Find("axis")->get<int64_t>(), rank));
  std::vector<int64_t> others;
  for (int i = 0; i < rank; ++i)
    if (i != axis) others.push_back(i);
  ctx.SetInputGrad(0, dy);
  ctx.SetInputGrad(1, Sum(dy, others));
  return OkStatus();
}

Status Conv2DGrad(GradContext& ctx) {
  const AttrMap& attrs = ctx.attrs();
  Conv2DOptions o;
  o.strides = attrs.Find("strides")->get<std::vector<int64_t>>();
  o.pads = attrs.Find("pads")->get<std::vector<int64_t>>();
  o.dilations = attrs.Find("dilations")->get<std::vector<int64_t>>();
  o.groups = attrs.Find("groups")->get<int64_t>();
  Value x = ctx.input(0), w = ctx.input(1), dy = ctx.grad(0);
  ctx.SetInputGrad(0, Conv2DBackpropInput(dy, w, x, o));
  ctx.SetInputGrad(1, Conv2DBackpropFilter(x, dy, w, o));
  return OkStatus();
}

}  // namespace

const std::map<std::string, GradFn>& LinalgGradients() {
  static const std::map<std::string, GradFn> grads = {
      {"MatMul", MatMulGrad},
      {"BiasAdd", BiasAddGrad},
      {"Conv2D", Conv2DGrad},
  };
  return grads;
}

}  // namespace kiln::internal
