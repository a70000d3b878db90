// The "variable_read" library step: binds a Variable node's buffer (kind kVariable) to the
// variable's current value in the store, without copying it, at the step's place in the plan (so
// it sees exactly what the reference executor's Variable kernel would: an Assign earlier in the
// plan, or the initializer the first time). The value is pinned in the StepEnv for the rest of the
// run, so a later Assign, which replaces the stored tensor, cannot free what later steps read.
#include "ir/op_registry.h"
#include "runtime/cpu/library_steps.h"
#include "runtime/variable_init.h"

namespace kiln::cpu {
namespace {

class VariableReadStep : public StepRunner {
 public:
  VariableReadStep(const Step& step, int buffer, AttrMap attrs)
      : step_(step), buffer_(buffer), attrs_(std::move(attrs)) {}

  Status Run(StepEnv& env) const override {
    const std::string& name = step_.node.name;
    KILN_RETURN_IF_ERROR(env.variables->Materialize(name));
    const Tensor* value = env.variables->Find(name);
    if (!value) {
      Result<Tensor> init = MakeInitialValue(attrs_);
      if (!init.ok()) return step_.node.MakeNodeError(init.error().code(), init.error().message());
      env.variables->Set(name, std::move(*init));
      value = env.variables->Find(name);
    }
    const TensorType& type = env.executable->buffers[buffer_].type;
    if (value->dtype() != type.dtype || value->shape() != type.shape)
      return step_.node.MakeNodeError(ErrorCode::kInvalidArgument, "stored value ",
                                      DTypeName(value->dtype()), value->shape().ToString(),
                                      " does not match the variable's type ", type.ToString());
    env.pinned.push_back(*value);
    env.data[buffer_] = const_cast<void*>(env.pinned.back().raw_data());
    if (buffer_ < static_cast<int>(env.versions.size()))
      env.versions[buffer_] = env.variables->Version(name);
    return OkStatus();
  }

 private:
  const Step& step_;
  int buffer_;
  AttrMap attrs_;  // the node's, with the schema's defaults
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeVariableReadStep(const Step& step, const Executable& exe) {
  if (!step.inputs.empty() || step.outputs.size() != 1 ||
      exe.buffers[step.outputs[0]].kind != BufferDesc::Kind::kVariable)
    return MakeError(ErrorCode::kInternal, "variable_read '", step.node.name,
                     "' must have no inputs and one output of kind variable");
  const OpDef* def = OpRegistry::Global().Find("Variable");
  return std::unique_ptr<StepRunner>(
      new VariableReadStep(step, step.outputs[0], def->WithDefaults(step.node.attrs)));
}

}  // namespace kiln::cpu
