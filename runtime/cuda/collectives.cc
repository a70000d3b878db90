#include "runtime/cuda/collectives.h"

namespace kiln::cuda {

bool IsDeviceCollective(const Step& step, const Executable& exe) {
  if (step.kind != Step::Kind::kReference || step.node.op != "AllReduce" || step.inputs.empty() ||
      step.inputs.size() != step.outputs.size())
    return false;
  Result<std::string> reduction = step.node.attrs.GetString("reduction");
  if (!reduction.ok() || (*reduction != "sum" && *reduction != "mean")) return false;
  const DType dtype = exe.buffers[step.inputs[0]].type.dtype;
  if (!IsFloat(dtype)) return false;
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    const BufferDesc& in = exe.buffers[step.inputs[i]];
    const BufferDesc& out = exe.buffers[step.outputs[i]];
    if (in.type.dtype != dtype || out.type.dtype != dtype || in.bytes() != out.bytes())
      return false;
  }
  return true;
}

}  // namespace kiln::cuda
