// Plugins the loader must refuse (tests/runtime/plugin_test.cc), one fault per build
// (tests/CMakeLists.txt compiles this file once per KILN_BAD_PLUGIN_* macro).
#include <stdexcept>

#include "runtime/plugin_api.h"

namespace {

[[maybe_unused]] kiln::OpDefBuilder Identityish(const char* name) {
  return kiln::OpDefBuilder(name, "plugin")
      .Input("x", "T")
      .Output("y")
      .Types("T", kiln::FloatTypes())
      .Infer(kiln::SameAsInput(0))
      .Precision(kiln::PrecisionList::kFollow)
      .Flops(kiln::NoFlops());
}

[[maybe_unused]] kiln::Status Copy(kiln::reference::KernelContext& ctx) {
  ctx.set_output(0, ctx.input(0));
  return kiln::OkStatus();
}

}  // namespace

#if defined(KILN_BAD_PLUGIN_no_gradient)
KILN_PLUGIN("bad_no_gradient", registrar) {
  registrar.AddOp(Identityish("NoGradientOp").Build(), Copy);  // neither Grad nor NotDifferentiable
}
#elif defined(KILN_BAD_PLUGIN_taken_name)
KILN_PLUGIN("bad_taken_name", registrar) {
  registrar.AddOp(Identityish("FreshOp").NotDifferentiable().Build(), Copy);
  registrar.AddOp(Identityish("Relu").NotDifferentiable().Build(), Copy);  // kiln's own op
}
#elif defined(KILN_BAD_PLUGIN_throws)
KILN_PLUGIN("bad_throws", registrar) { throw std::runtime_error("registration failed on purpose"); }
#elif defined(KILN_BAD_PLUGIN_no_ops)
KILN_PLUGIN("bad_no_ops", registrar) {}
#endif
