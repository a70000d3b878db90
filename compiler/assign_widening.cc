#include "compiler/assign_widening.h"

#include <algorithm>
#include <map>
#include <set>

namespace kiln::compiler {
namespace {

// The spec when it is one Cast of a bf16 input to f32, written as the only output.
bool IsLoneWideningCast(const KernelSpec& spec) {
  return !spec.row_reduction && spec.raw_mlir.empty() && spec.inputs.size() == 1 &&
         spec.inputs[0].dtype == bf16 && spec.ops.size() == 1 && spec.ops[0].op == "Cast" &&
         spec.ops[0].args == std::vector<int>{0} && spec.ops[0].dtype == f32 &&
         spec.outputs == std::vector<int>{1};
}

}  // namespace

int FoldWideningIntoAssigns(LoweredPlan& lowered) {
  Executable& exe = lowered.executable;
  std::map<std::string, const KernelSpec*> specs;
  for (const KernelSpec& spec : lowered.kernels) specs[spec.name] = &spec;
  std::vector<int> readers(exe.buffers.size(), 0), producer(exe.buffers.size(), -1);
  for (size_t s = 0; s < exe.steps.size(); ++s) {
    for (int id : exe.steps[s].inputs) ++readers[id];
    for (int id : exe.steps[s].outputs) producer[id] = static_cast<int>(s);
  }
  for (int id : exe.fetches) ++readers[id];

  std::set<size_t> folded;
  for (Step& assign : exe.steps) {
    if (assign.kind != Step::Kind::kLibrary || assign.callee != "assign" ||
        assign.inputs.size() < 2 || assign.outputs.size() != 1)
      continue;
    const int value = assign.inputs[1];
    const TensorType& variable = exe.buffers[assign.outputs[0]].type;
    if (variable.dtype != f32 || !(exe.buffers[value].type == variable) || readers[value] != 1 ||
        producer[value] < 0)
      continue;
    const Step& cast = exe.steps[producer[value]];
    auto spec = specs.find(cast.callee);
    if (cast.kind != Step::Kind::kKernel || spec == specs.end() ||
        !IsLoneWideningCast(*spec->second) || cast.inputs.size() != 1 || cast.outputs.size() != 1 ||
        !(exe.buffers[cast.inputs[0]].type == TensorType{bf16, variable.shape}))
      continue;
    assign.inputs[1] = cast.inputs[0];
    folded.insert(static_cast<size_t>(producer[value]));
  }
  if (folded.empty()) return 0;

  std::vector<Step> kept;
  kept.reserve(exe.steps.size() - folded.size());
  std::set<std::string> called;
  for (size_t s = 0; s < exe.steps.size(); ++s) {
    if (folded.count(s)) continue;
    if (exe.steps[s].kind == Step::Kind::kKernel) called.insert(exe.steps[s].callee);
    kept.push_back(std::move(exe.steps[s]));
  }
  exe.steps = std::move(kept);
  lowered.kernels.erase(std::remove_if(lowered.kernels.begin(), lowered.kernels.end(),
                                       [&](const KernelSpec& spec) {
                                         return IsLoneWideningCast(spec) &&
                                                !called.count(spec.name);
                                       }),
                        lowered.kernels.end());
  return static_cast<int>(folded.size());
}

}  // namespace kiln::compiler
