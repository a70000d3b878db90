// A plugin built against the installed package (kiln::headers only): the op "Cube", y = x^3,
// with its gradient 3 x^2 dy. train_step uses it in its model; the module carries it, so
// run_module and run_module_c load it too.
#include "ir/ops/math.h"
#include "runtime/plugin_api.h"

namespace {

kiln::Status CubeGradient(kiln::GradContext& ctx) {
  kiln::Value x = ctx.input(0);
  ctx.SetInputGrad(0, ctx.grad(0) * (x * x * 3.0));
  return kiln::OkStatus();
}

kiln::Status CubeKernel(kiln::reference::KernelContext& ctx) {
  const std::vector<double> x = ctx.input(0).ToDoubles();
  for (size_t i = 0; i < x.size(); ++i) ctx.output(0).SetDouble(i, x[i] * x[i] * x[i]);
  return kiln::OkStatus();
}

}  // namespace

KILN_PLUGIN("consumer_cube", registrar) {
  registrar.AddOp(kiln::OpDefBuilder("Cube", "plugin")
                      .Input("x", "T")
                      .Output("y")
                      .Types("T", kiln::FloatTypes())
                      .Infer(kiln::SameAsInput(0))
                      .Grad(CubeGradient)
                      .Precision(kiln::PrecisionList::kKeep32)
                      .Flops(kiln::FlopsPerOutputElement(2))
                      .Build(),
                  CubeKernel);
}
