#include "ir/ops/collective.h"

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {

std::vector<Value> AllReduce(const std::vector<Value>& xs, const std::string& reduction,
                             SourceLocation loc) {
  AttrMap attrs;
  attrs.Set("reduction", reduction);
  return internal::MakeOpN("AllReduce", xs, std::move(attrs), loc, xs.size());
}

bool IsCollective(const Node& node) {
  const OpDef* def = OpRegistry::Global().Find(node.op);
  return def && def->collective;
}

namespace {

Status InferAllReduce(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string reduction, ctx.attrs().GetString("reduction"));
  if (reduction != "sum" && reduction != "mean" && reduction != "mean_over_share")
    return ctx.Fail("reduction '", reduction, "': expected sum, mean or mean_over_share");
  if (ctx.num_inputs() == 0) return ctx.Fail("needs at least one input");
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.dtype(i) != ctx.dtype(0))
      return ctx.Fail("input ", i, " is ", DTypeName(ctx.dtype(i)), ", input 0 ",
                      DTypeName(ctx.dtype(0)), ": one all-reduce takes one dtype");
    ctx.AddOutput(ctx.dtype(i), ctx.shape(i));
  }
  return OkStatus();
}

Status AllReduceGrad(GradContext& ctx) {
  std::vector<Value> grads;
  std::vector<int> which;
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.grad(i).valid()) {
      grads.push_back(ctx.grad(i));
      which.push_back(i);
    }
  if (grads.empty()) return OkStatus();
  KILN_ASSIGN_OR_RETURN(std::string reduction, ctx.attrs().GetString("reduction"));
  // The data-parallel convention's adjoints (collective.h).
  const std::string adjoint = reduction == "sum"    ? "mean_over_share"
                              : reduction == "mean" ? "mean"
                                                    : "sum";
  std::vector<Value> reduced = AllReduce(grads, adjoint);
  for (size_t k = 0; k < which.size(); ++k) ctx.SetInputGrad(which[k], reduced[k]);
  return OkStatus();
}

}  // namespace

void RegisterCollectiveOps(OpRegistry& r) {
  r.Register(OpDefBuilder("AllReduce", "collective")
                 .VariadicInput("x", "T")
                 .VariadicOutput("y")
                 .Types("T", FloatTypes())
                 .RequiredAttr("reduction", AttrType::kString)
                 .Infer(InferAllReduce)
                 .Collective()  // its values come from the other ranks: never folded or merged
                 .Grad(AllReduceGrad)
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
}

}  // namespace kiln
