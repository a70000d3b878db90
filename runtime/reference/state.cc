// Reference kernels of op family "state" (see ir/ops/state.h for the semantics).
#include <cmath>

#include "runtime/reference/kernel.h"
#include "runtime/reference/scalar_math.h"
#include "runtime/variable_init.h"

namespace kiln::reference {
namespace {

Status ReadVariable(KernelContext& ctx) {
  VariableStore& vars = *ctx.state().variables;
  KILN_RETURN_IF_ERROR(vars.Materialize(ctx.node().name));
  const Tensor* value = vars.Find(ctx.node().name);
  if (!value) {
    Result<Tensor> init = MakeInitialValue(ctx.attrs());
    if (!init.ok()) return ctx.node().MakeNodeError(init.error().code(), init.error().message());
    vars.Set(ctx.node().name, std::move(*init));
    value = vars.Find(ctx.node().name);
  }
  if (value->dtype() != ctx.output_type(0).dtype || value->shape() != ctx.output_type(0).shape)
    return ctx.Fail("stored value ", DTypeName(value->dtype()), value->shape().ToString(),
                    " does not match the variable's type ", ctx.output_type(0).ToString());
  ctx.set_output(0, *value);
  return OkStatus();
}

// Assign, AssignAdd, AssignSub: sign 0 replaces, +1 adds, -1 subtracts (with a scale input:
// scale * value, rounded to the variable's dtype as a Mul node's result would be).
KernelFn AssignKernel(int sign) {
  return [sign](KernelContext& ctx) -> Status {
    VariableStore& vars = *ctx.state().variables;
    const std::string& var = ctx.node().inputs[0].node;
    Tensor value = ctx.input(1);
    if (ctx.num_inputs() == 3) {
      const double scale = ctx.input(2).GetDouble(0);
      value = value.Clone();
      for (int64_t i = 0; i < value.num_elements(); ++i)
        value.SetDouble(i, scale * value.GetDouble(i));
    }
    Tensor result;
    if (sign == 0) {
      result = value.Clone();
    } else {
      KILN_RETURN_IF_ERROR(vars.Materialize(var));
      const Tensor* current = vars.Find(var);
      const Tensor& base = current ? *current : ctx.input(0);
      result = base.Clone();
      bool integral = !IsFloat(base.dtype());
      for (int64_t i = 0; i < result.num_elements(); ++i) {
        if (integral)
          result.SetInt(i, sign > 0 ? WrapAdd(base.GetInt(i), value.GetInt(i))
                                    : WrapSub(base.GetInt(i), value.GetInt(i)));
        else
          result.SetDouble(i, base.GetDouble(i) + sign * value.GetDouble(i));
      }
    }
    vars.Set(var, result);
    ctx.set_output(0, result);
    return OkStatus();
  };
}

Status Forward(KernelContext& ctx) {
  ctx.set_output(0, ctx.input(0));
  return OkStatus();
}

Status CheckNumericsKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (std::isfinite(x.GetDouble(i))) continue;
    if (bad++ == 0) first = i;
  }
  if (bad)
    return MakeError(ErrorCode::kInvalidArgument,
                     "check-numerics: ", ctx.attrs().Find("what")->get<std::string>(), " has ",
                     x.GetDouble(first), " at element ", first, " (", bad, " of ", x.num_elements(),
                     " values are not finite)");
  ctx.set_output(0, x);
  return OkStatus();
}

}  // namespace

void RegisterStateKernels(KernelRegistry& r) {
  r.Register("Placeholder", [](KernelContext& ctx) -> Status {
    return ctx.node().MakeNodeError(ErrorCode::kInvalidArgument, "needs a feed of type ",
                                    ctx.output_type(0).ToString(), " but none was given");
  });
  r.Register("Constant", [](KernelContext& ctx) -> Status {
    ctx.set_output(0, ctx.attrs().Find("value")->get<Tensor>());
    return OkStatus();
  });
  r.Register("Variable", ReadVariable);
  r.Register("Assign", AssignKernel(0));
  r.Register("AssignAdd", AssignKernel(+1));
  r.Register("AssignSub", AssignKernel(-1));
  r.Register("Identity", Forward);
  r.Register("StopGradient", Forward);
  r.Register("CheckNumerics", CheckNumericsKernel);
  r.Register("NoOp", [](KernelContext&) { return OkStatus(); });
}

}  // namespace kiln::reference
