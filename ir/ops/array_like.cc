#include "ir/ops/array_like.h"

#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {

Value BroadcastLike(At x, Value like) {
  return internal::MakeOp("BroadcastLike", {x.value, like}, {}, x.loc);
}
Value ReshapeLike(At x, Value like) {
  return internal::MakeOp("ReshapeLike", {x.value, like}, {}, x.loc);
}

namespace {

Status InferBroadcastLike(InferContext& ctx) {
  Result<Shape> b = BroadcastShapes(ctx.shape(0), ctx.shape(1));
  if (!b.ok() || b->rank() != ctx.shape(1).rank() ||
      (ctx.shape(1).IsFullyKnown() && b->IsFullyKnown() && *b != ctx.shape(1)))
    return ctx.Fail("cannot broadcast ", ctx.shape(0).ToString(), " to ", ctx.shape(1).ToString());
  ctx.AddOutput(ctx.dtype(0), ctx.shape(1));
  return OkStatus();
}

Status InferReshapeLike(InferContext& ctx) {
  int64_t from = ctx.shape(0).NumElements(), to = ctx.shape(1).NumElements();
  if (from >= 0 && to >= 0 && from != to)
    return ctx.Fail("cannot reshape ", ctx.shape(0).ToString(), " (", from, " elements) like ",
                    ctx.shape(1).ToString(), " (", to, " elements)");
  ctx.AddOutput(ctx.dtype(0), ctx.shape(1));
  return OkStatus();
}

}  // namespace

void RegisterArrayLikeOps(OpRegistry& r) {
  r.Register(OpDefBuilder("BroadcastLike", "array")
                 .Input("x", "T")
                 .Input("like", "L")
                 .Output("y")
                 .Types("T", AllDTypes())
                 .Infer(InferBroadcastLike)
                 .Grad([](GradContext& ctx) {
                   ctx.SetInputGrad(0, internal::SumToShapeOf(ctx.grad(0), ctx.input(0)));
                   return OkStatus();
                 })
                 .Precision(PrecisionList::kNeutral)
                 .Flops(NoFlops())
                 .Build());
  r.Register(OpDefBuilder("ReshapeLike", "array")
                 .Input("x", "T")
                 .Input("like", "L")
                 .Output("y")
                 .Types("T", AllDTypes())
                 .Infer(InferReshapeLike)
                 .Grad([](GradContext& ctx) {
                   ctx.SetInputGrad(0, ReshapeLike(ctx.grad(0), ctx.input(0)));
                   return OkStatus();
                 })
                 .Precision(PrecisionList::kNeutral)
                 .Flops(NoFlops())
                 .Build());
}

}  // namespace kiln
