#include "ir/ops/array_elements.h"

#include "ir/ops/math.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {

Value GatherElements(At data, Value indices, int64_t axis) {
  AttrMap a;
  a.Set("axis", axis);
  return internal::MakeOp("GatherElements", {data.value, indices}, std::move(a), data.loc);
}

Value ScatterElements(At data, Value indices, Value updates, int64_t axis,
                      const std::string& reduction) {
  AttrMap a;
  a.Set("axis", axis);
  a.Set("reduction", reduction);
  return internal::MakeOp("ScatterElements", {data.value, indices, updates}, std::move(a),
                          data.loc);
}

namespace {

// Checks indices (input 1) against data (input 0): same rank, axis in range, dims off the axis
// no larger than data's. Returns the normalized axis.
Result<int> CheckIndices(const InferContext& ctx) {
  const Shape& data = ctx.shape(0);
  const Shape& idx = ctx.shape(1);
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().GetInt("axis"));
  if (data.rank() == 0) return ctx.Fail("data must have rank >= 1, got a scalar");
  Result<int> a = NormalizeAxis(axis, data.rank());
  if (!a.ok()) return ctx.Fail("axis ", axis, " is out of range for data ", data.ToString());
  if (idx.rank() != data.rank())
    return ctx.Fail("indices ", idx.ToString(), " must have data's rank ", data.rank(), " (data ",
                    data.ToString(), ")");
  for (int d = 0; d < data.rank(); ++d)
    if (d != *a && idx[d] >= 0 && data[d] >= 0 && idx[d] > data[d])
      return ctx.Fail("indices ", idx.ToString(), " is larger than data ", data.ToString(),
                      " in dim ", d);
  return a;
}

Status InferGatherElements(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckIndices(ctx).status());
  ctx.AddOutput(ctx.dtype(0), ctx.shape(1));
  return OkStatus();
}

Status InferScatterElements(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckIndices(ctx).status());
  KILN_ASSIGN_OR_RETURN(std::string reduction, ctx.attrs().GetString("reduction"));
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    return ctx.Fail("reduction must be none, add or mul, got '", reduction, "'");
  const Shape& idx = ctx.shape(1);
  const Shape& upd = ctx.shape(2);
  bool same = idx.rank() == upd.rank();
  for (int d = 0; same && d < idx.rank(); ++d) same = idx[d] < 0 || upd[d] < 0 || idx[d] == upd[d];
  if (!same)
    return ctx.Fail("updates ", upd.ToString(), " must have the shape of indices ", idx.ToString());
  ctx.AddOutput(ctx.dtype(0), ctx.shape(0));
  return OkStatus();
}

int64_t AxisAttr(const GradContext& ctx) { return ctx.attrs().Find("axis")->get<int64_t>(); }

Status GatherElementsGrad(GradContext& ctx) {
  ctx.SetInputGrad(
      0, ScatterElements(ZerosLike(ctx.input(0)), ctx.input(1), ctx.grad(0), AxisAttr(ctx), "add"));
  return OkStatus();
}

Status ScatterElementsGrad(GradContext& ctx) {
  const std::string& reduction = ctx.attrs().Find("reduction")->get<std::string>();
  if (reduction == "mul")
    return ctx.node().MakeNodeError(ErrorCode::kUnimplemented,
                                    "ScatterElements with reduction 'mul' has no gradient");
  Value dy = ctx.grad_or_zeros(0);
  int64_t axis = AxisAttr(ctx);
  ctx.SetInputGrad(0, reduction == "add" ? dy
                                         : ScatterElements(dy, ctx.input(1),
                                                           ZerosLike(ctx.input(2)), axis, "none"));
  ctx.SetInputGrad(2, GatherElements(dy, ctx.input(1), axis));
  return OkStatus();
}

}  // namespace

void RegisterArrayElementsOps(OpRegistry& r) {
  r.Register(OpDefBuilder("GatherElements", "array")
                 .Input("data", "T")
                 .Input("indices", "I")
                 .Output("y")
                 .Types("T", AllDTypes())
                 .Types("I", IndexTypes())
                 .Attr("axis", AttrType::kInt, int64_t{0})
                 .Infer(InferGatherElements)
                 .Grad(GatherElementsGrad)
                 .Precision(PrecisionList::kNeutral)
                 .Flops(NoFlops())
                 .Build());
  r.Register(OpDefBuilder("ScatterElements", "array")
                 .Input("data", "T")
                 .Input("indices", "I")
                 .Input("updates", "T")
                 .Output("y")
                 .Types("T", AllDTypes())
                 .Types("I", IndexTypes())
                 .Attr("axis", AttrType::kInt, int64_t{0})
                 .Attr("reduction", AttrType::kString, "none")
                 .Infer(InferScatterElements)
                 .Grad(ScatterElementsGrad)
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
}

}  // namespace kiln
