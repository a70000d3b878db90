#include "runtime/cpu/kernel_signature.h"

namespace kiln::cpu {

std::string KernelStepSignature(const Step& step, const Executable& exe) {
  std::string signature = step.callee + "__sig_r" + std::to_string(step.rows);
  for (const std::vector<int>* ids : {&step.inputs, &step.outputs})
    for (int id : *ids) {
      signature += "_";
      if (id < 0 || id >= static_cast<int>(exe.buffers.size())) {
        signature += "missing";
        continue;
      }
      const BufferDesc& b = exe.buffers[id];
      signature += std::string(DTypeName(b.type.dtype)) + "b" + std::to_string(b.bytes());
    }
  return signature;
}

std::set<std::string> KernelStepSignatures(const Executable& exe) {
  std::set<std::string> signatures;
  for (const Step& step : exe.steps)
    if (step.kind == Step::Kind::kKernel) signatures.insert(KernelStepSignature(step, exe));
  return signatures;
}

}  // namespace kiln::cpu
