#include "runtime/cuda/device_copies.h"

namespace kiln::cuda {

bool IsDeviceCopy(const Step& step, const Executable& exe) {
  return step.kind == Step::Kind::kLibrary && step.callee == "copy" && !step.inputs.empty() &&
         step.outputs.size() == 1 &&
         exe.buffers[step.inputs[0]].bytes() == exe.buffers[step.outputs[0]].bytes() &&
         exe.buffers[step.outputs[0]].kind == BufferDesc::Kind::kArena;
}

bool IsDeviceAssign(const Step& step, const Executable& exe) {
  if (step.kind != Step::Kind::kLibrary || step.callee != "assign" ||
      (step.inputs.size() != 2 && step.inputs.size() != 3) || step.outputs.size() != 1 ||
      step.node.inputs.empty())
    return false;
  Result<int64_t> mode = step.attrs.GetInt("mode");
  const BufferDesc& old_value = exe.buffers[step.inputs[0]];
  const BufferDesc& out = exe.buffers[step.outputs[0]];
  if (!mode.ok() || *mode < -1 || *mode > 1 || !(exe.buffers[step.inputs[1]].type == out.type) ||
      !(old_value.type == out.type) || old_value.kind != BufferDesc::Kind::kVariable ||
      out.kind != BufferDesc::Kind::kVariable)
    return false;
  if (step.inputs.size() == 3 &&
      (*mode == 0 || !IsFloat(out.type.dtype) ||
       !(exe.buffers[step.inputs[2]].type == TensorType{out.type.dtype, Shape{}})))
    return false;
  const std::string& variable = step.node.inputs[0].node;
  const Step* begin = exe.steps.data();
  const Step* end = begin + exe.steps.size();
  if (&step < begin || &step >= end) return false;
  int reads = 0, assigns = 0;
  for (const Step& s : exe.steps) {
    if (s.kind != Step::Kind::kLibrary) continue;
    if (s.callee == "variable_read" && s.node.name == variable)
      reads += s.outputs.size() == 1 && s.outputs[0] == step.inputs[0] ? 1 : 2;
    if (s.callee == "assign" && !s.node.inputs.empty() && s.node.inputs[0].node == variable)
      ++assigns;
  }
  if (reads != 1 || assigns != 1) return false;
  for (const Step* s = &step + 1; s < end; ++s)
    for (int id : s->inputs)
      if (id == step.inputs[0]) return false;
  return true;
}

}  // namespace kiln::cuda
