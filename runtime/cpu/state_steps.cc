// Library steps for data movement and variable updates that need no generated code:
//   "copy"    output 0 gets input 0's bytes (Reshape, Flatten, Squeeze, Unsqueeze, Identity, ...:
//             ops that only relabel a dense buffer's shape); other inputs (shapes) are not read.
//   "assign"  Assign (mode 0), AssignAdd (+1), AssignSub (-1) on an f32 or f64 variable: the new
//             value is computed into a fresh tensor that replaces the stored one (values are
//             replaced, never mutated: earlier reads keep theirs), and the step's output buffer
//             (kind kVariable) is pointed at it.
#include <cstring>

#include "runtime/cpu/library_steps.h"

namespace kiln::cpu {
namespace {

class CopyStep : public StepRunner {
 public:
  CopyStep(int from, int to, int64_t bytes) : from_(from), to_(to), bytes_(bytes) {}
  Status Run(StepEnv& env) const override {
    std::memcpy(env.data[to_], env.data[from_], static_cast<size_t>(bytes_));
    return OkStatus();
  }

 private:
  int from_, to_;
  int64_t bytes_;
};

template <typename T>
void Combine(int64_t mode, const T* base, const T* value, T* out, int64_t n) {
  if (mode == 0) {
    std::memcpy(out, value, static_cast<size_t>(n) * sizeof(T));
  } else if (mode > 0) {
    for (int64_t i = 0; i < n; ++i) out[i] = base[i] + value[i];
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = base[i] - value[i];
  }
}

class AssignStep : public StepRunner {
 public:
  AssignStep(const Step& step, int64_t mode) : step_(step), mode_(mode) {}
  Status Run(StepEnv& env) const override {
    const Executable& exe = *env.executable;
    const std::string& name = step_.node.inputs[0].node;
    const TensorType& type = exe.buffers[step_.outputs[0]].type;
    // The base is the variable's current value (an Assign earlier in the plan may have replaced
    // what input 0 was bound to), as the reference kernel does.
    const Tensor* current = env.variables->Find(name);
    const void* base = current ? current->raw_data() : env.data[step_.inputs[0]];
    if (current && (current->dtype() != type.dtype || current->shape() != type.shape))
      return step_.node.MakeNodeError(ErrorCode::kInvalidArgument, "stored value of '", name,
                                      "' is ", DTypeName(current->dtype()),
                                      current->shape().ToString(), ", expected ", type.ToString());
    Tensor result(type.dtype, type.shape);
    const void* value = env.data[step_.inputs[1]];
    if (type.dtype == f32)
      Combine(mode_, static_cast<const float*>(base), static_cast<const float*>(value),
              result.data<float>(), result.num_elements());
    else
      Combine(mode_, static_cast<const double*>(base), static_cast<const double*>(value),
              result.data<double>(), result.num_elements());
    env.variables->Set(name, result);
    env.pinned.push_back(result);
    env.data[step_.outputs[0]] = env.pinned.back().raw_data();
    return OkStatus();
  }

 private:
  const Step& step_;
  int64_t mode_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeCopyStep(const Step& step, const Executable& exe) {
  if (step.inputs.empty() || step.outputs.size() != 1 ||
      exe.buffers[step.inputs[0]].bytes() != exe.buffers[step.outputs[0]].bytes())
    return MakeError(ErrorCode::kInternal, "copy '", step.node.name,
                     "': needs an input and one output of the same size");
  return std::unique_ptr<StepRunner>(
      new CopyStep(step.inputs[0], step.outputs[0], exe.buffers[step.outputs[0]].bytes()));
}

Result<std::unique_ptr<StepRunner>> MakeAssignStep(const Step& step, const Executable& exe) {
  KILN_ASSIGN_OR_RETURN(int64_t mode, step.attrs.GetInt("mode"));
  if (step.inputs.size() != 2 || step.outputs.size() != 1 || step.node.inputs.empty())
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "': needs the variable, the value and one output");
  const TensorType& out = exe.buffers[step.outputs[0]].type;
  for (int id : {step.inputs[0], step.inputs[1]})
    if (!(exe.buffers[id].type == out) || (out.dtype != f32 && out.dtype != f64))
      return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                       "': needs f32 or f64 operands of one type");
  if (exe.buffers[step.outputs[0]].kind != BufferDesc::Kind::kVariable)
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "': its output must be a variable buffer");
  return std::unique_ptr<StepRunner>(new AssignStep(step, mode));
}

}  // namespace kiln::cpu
