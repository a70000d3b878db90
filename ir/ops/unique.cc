#include "ir/ops/unique.h"

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {
namespace {

Status InferUnique(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  KILN_ASSIGN_OR_RETURN(bool flatten, ctx.attrs().GetBool("flatten"));
  Shape y{kUnknownDim};
  int64_t slices = x.IsFullyKnown() ? x.NumElements() : kUnknownDim;
  if (!flatten) {
    KILN_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs().GetInt("axis"));
    Result<int> axis = NormalizeAxis(axis_attr, x.rank());
    if (!axis.ok()) return ctx.Fail("attribute 'axis': ", axis.error().message());
    y = x;
    y.set_dim(*axis, kUnknownDim);
    slices = x[*axis];
  }
  ctx.AddOutput(ctx.dtype(0), std::move(y));
  ctx.AddOutput(i64, Shape{kUnknownDim});
  ctx.AddOutput(i64, Shape{slices});
  ctx.AddOutput(i64, Shape{kUnknownDim});
  return OkStatus();
}

}  // namespace

UniqueResult Unique(At x, std::optional<int64_t> axis, bool sorted) {
  AttrMap a;
  a.Set("flatten", !axis.has_value());
  a.Set("axis", axis.value_or(0));
  a.Set("sorted", sorted);
  std::vector<Value> out = internal::MakeOpN("Unique", {x.value}, std::move(a), x.loc, 4);
  return {out.at(0), out.at(1), out.at(2), out.at(3)};
}

void RegisterUniqueOps(OpRegistry& r) {
  r.Register(OpDefBuilder("Unique", "array")
                 .Input("x", "T")
                 .Output("y")
                 .Output("indices")
                 .Output("inverse")
                 .Output("counts")
                 .Types("T", AllDTypes())
                 .Attr("flatten", AttrType::kBool, true)
                 .Attr("axis", AttrType::kInt, int64_t{0})
                 .Attr("sorted", AttrType::kBool, true)
                 .Infer(InferUnique)
                 .NotDifferentiable()
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
}

}  // namespace kiln
