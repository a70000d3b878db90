// Gradients of op family "reduce". The output gradient is given back its reduced axes (size 1)
// and broadcast to the input's run-time shape, so unknown dims work.
#include "ir/ops/reduce_grad.h"

#include "ir/ops/array.h"
#include "ir/ops/array_elements.h"
#include "ir/ops/array_like.h"
#include "ir/ops/math.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/reduce.h"

namespace kiln::internal {
namespace {

struct Reduced {
  std::vector<int64_t> axes;  // normalized, ascending
  bool keepdims = false;
};

Result<Reduced> ReducedAxes(GradContext& ctx) {
  Reduced r;
  r.keepdims = ctx.attrs().Find("keepdims")->get<bool>();
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes,
                        NormalizeReduceAxes(ctx.attrs().Find("axes")->get<std::vector<int64_t>>(),
                                            ctx.input(0).rank()));
  r.axes.assign(axes.begin(), axes.end());
  std::sort(r.axes.begin(), r.axes.end());
  return r;
}

// `v` (shaped like the op's output) with the reduced axes restored as size 1.
Value KeepDims(Value v, const Reduced& r) {
  if (r.keepdims || r.axes.empty()) return v;
  return Unsqueeze(v, r.axes);
}

Status SumGrad(GradContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Reduced r, ReducedAxes(ctx));
  ctx.SetInputGrad(0, BroadcastLike(KeepDims(ctx.grad(0), r), ctx.input(0)));
  return OkStatus();
}

Status MeanGrad(GradContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Reduced r, ReducedAxes(ctx));
  Value x = ctx.input(0);
  ctx.SetInputGrad(0, BroadcastLike(KeepDims(ctx.grad(0), r), x) / CountOverAxes(x, r.axes));
  return OkStatus();
}

// Max and Min: the gradient goes to the elements equal to the result, split evenly among ties.
Status ExtremumGrad(GradContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Reduced r, ReducedAxes(ctx));
  Value x = ctx.input(0);
  Value hit = MaskLike(Equal(x, BroadcastLike(KeepDims(ctx.output(0), r), x)), x);
  Value ties = BroadcastLike(Sum(hit, r.axes, true), x);
  ctx.SetInputGrad(0, BroadcastLike(KeepDims(ctx.grad(0), r), x) * hit / ties);
  return OkStatus();
}

// Prod: d/dx_i = prod_{j != i} x_j, computed as y / x_i. Exact for non-zero inputs; where an
// input is 0 this gives inf/NaN (a product with a zero needs the exclusive product: not yet done).
Status ProdGrad(GradContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Reduced r, ReducedAxes(ctx));
  Value x = ctx.input(0);
  Value y = BroadcastLike(KeepDims(ctx.output(0), r), x);
  ctx.SetInputGrad(0, BroadcastLike(KeepDims(ctx.grad(0), r), x) * y / x);
  return OkStatus();
}

Status SumLikeGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, BroadcastLike(ctx.grad(0), ctx.input(0)));
  return OkStatus();
}

// TopK: each value's gradient goes back to the element it was taken from (the indices differ).
Status TopKGrad(GradContext& ctx) {
  if (!ctx.grad(0).valid()) return OkStatus();
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().GetInt("axis"));
  Value x = ctx.input(0);
  ctx.SetInputGrad(0, ScatterElements(ZerosLike(x), ctx.output(1), ctx.grad(0), axis, "add"));
  return OkStatus();
}

}  // namespace

const std::map<std::string, GradFn>& ReduceGradients() {
  static const std::map<std::string, GradFn> grads = {
      {"Sum", SumGrad},   {"Mean", MeanGrad},       {"Max", ExtremumGrad}, {"Min", ExtremumGrad},
      {"Prod", ProdGrad}, {"SumLike", SumLikeGrad}, {"TopK", TopKGrad},
  };
  return grads;
}

}  // namespace kiln::internal
