// A step that calls a generated kernel (ABI in compiler/kernel_spec.h), splitting the rows of its
// iteration space over the session's threads when the work is large enough to pay for it.
#include <algorithm>

#include "runtime/cpu/kernel_signature.h"
#include "runtime/cpu/parallel_ranges.h"
#include "runtime/cpu/step.h"

namespace kiln::cpu {
namespace {

class KernelStep : public StepRunner {
 public:
  KernelStep(const Step& step, KernelEntry entry, int64_t elements)
      : step_(step), entry_(entry), elements_(elements) {}

  Status Run(StepEnv& env) const override {
    ForEachRange(step_.rows, elements_, env.threads, [&](int64_t begin, int64_t end) {
      std::vector<void*> pointers;
      for (int id : step_.inputs) pointers.push_back(env.data[id]);
      for (int id : step_.outputs) pointers.push_back(env.data[id]);
      std::vector<void*> args = {&begin, &end};
      for (void*& p : pointers) args.push_back(&p);
      entry_(args.data());
    });
    return OkStatus();
  }

 private:
  const Step& step_;
  KernelEntry entry_;
  int64_t elements_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeKernelStep(const Step& step, const Executable& exe,
                                                   const KernelLibrary* kernels) {
  if (!kernels)
    return MakeError(ErrorCode::kInternal, "kernel step ", step.callee,
                     " but the plan has no kernel library");
  KILN_ASSIGN_OR_RETURN(KernelEntry entry, kernels->Find(step.callee));
  if (step.rows < 1 || step.outputs.empty())
    return MakeError(ErrorCode::kInternal, "kernel step ", step.callee, " has ", step.rows,
                     " rows and ", step.outputs.size(), " outputs");
  const std::string signature = KernelStepSignature(step, exe);
  if (!kernels->Find(signature).ok())
    return MakeError(ErrorCode::kInvalidArgument, "kernel step ", step.callee, " of '",
                     step.node.name, "' does not match the code compiled for it: ", step.rows,
                     " rows over its operands' types and sizes (", signature,
                     ") is not a way the kernel was compiled to be called");
  // The work: the largest buffer (a row reduction reads [rows, cols] and may write only rows).
  int64_t elements = 0;
  for (const std::vector<int>* ids : {&step.inputs, &step.outputs})
    for (int id : *ids) elements = std::max(elements, exe.buffers[id].type.shape.NumElements());
  return std::unique_ptr<StepRunner>(new KernelStep(step, entry, elements));
}

}  // namespace kiln::cpu
