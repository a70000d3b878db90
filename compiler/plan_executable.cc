#include "compiler/plan_executable.h"

#include <numeric>
#include <set>

#include "compiler/assign_folding.h"
#include "compiler/codegen/emit_mlir.h"
#include "compiler/library_lowering.h"
#include "compiler/op_lowerings.h"
#include "ir/op_registry.h"
#include "runtime/invariant_steps.h"

namespace kiln::compiler {

namespace {

// A conv2d step whose first post-op sums its last input, the residual, into the output.
bool HasResidual(const Step& step) {
  const AttrValue* post_ops = step.attrs.Find("post_ops");
  return post_ops && post_ops->type() == AttrType::kInts &&
         !post_ops->get<std::vector<int64_t>>().empty() &&
         post_ops->get<std::vector<int64_t>>()[0] == 1;
}

}  // namespace

PlanOptions CpuPlanOptions() {
  PlanOptions options;
  options.can_emit = CanEmit;
  options.cpu_steps = true;
  return options;
}

Result<PlannedExecutable> PlanExecutable(const RunPlan& plan_given, const PlanOptions& options) {
  PlannedExecutable out;
  KILN_ASSIGN_OR_RETURN(out.expanded, ExpandDeferredNodes(plan_given, options.known_feeds));
  KILN_ASSIGN_OR_RETURN(out.optimized,
                        OptimizePlanGraph(out.expanded.plan, options.fold_batch_norm));
  const RunPlan& given = out.optimized.plan;
  KILN_ASSIGN_OR_RETURN(out.info, ResolveStaticTypes(given, options.known_feeds));
  const StaticInfo& info = out.info;
  // The ops the kernel generator emits, all elementwise with numpy broadcasting.
  auto emittable = [&](const Node& node) {
    if (!options.can_emit || node.output_types.size() != 1) return false;
    std::vector<DType> inputs;
    for (const TensorRef& in : node.inputs) inputs.push_back(info.types.at(in).dtype);
    return options.can_emit(node.op, inputs, info.types.at(TensorRef{node.name, 0}).dtype);
  };
  out.simplified = SimplifyWithStaticTypes(given, out.info, emittable);
  const RunPlan& plan = out.simplified.plan;
  out.epilogues = PlanEpilogues(plan, info, options.cpu_steps);
  auto fusible = [&](const Node& node) {
    if (!options.can_emit || node.output_types.size() != 1) return false;
    if (out.epilogues.absorbed.count(node.name)) return false;  // a convolution computes it
    const OpDef* def = OpRegistry::Global().Find(node.op);
    TensorRef result{node.name, 0};
    if (!def || def->stateful || info.values.count(result)) return false;
    const OpLowering* lowering = OpLowerings::Global().Find(node.op);
    if (lowering && lowering->keeps_reference && lowering->keeps_reference(node, info))
      return false;
    return emittable(node);
  };
  out.fusion = FuseElementwise(plan, info, fusible);
  KILN_ASSIGN_OR_RETURN(out.lowered, Lower(plan, info, out.fusion, out.epilogues));
  if (options.preferred_layouts)
    out.layouts = AssignLayouts(out.lowered.executable, options.preferred_layouts);
  if (options.cpu_steps) {
    LowerCpuRoutineSteps(out.lowered.executable);
    FoldIntoAssigns(out.lowered);
  }
  if (options.rewrite_steps) KILN_RETURN_IF_ERROR(options.rewrite_steps(out.lowered));
  // The cpu backend skips steps whose results cannot change while the variables keep their
  // versions (a bf16 inference plan's weight casts); the CUDA program does not yet.
  if (options.cpu_steps) {
    Executable& exe = out.lowered.executable;
    const std::vector<bool> invariant = InvariantSteps(exe);
    for (size_t s = 0; s < exe.steps.size(); ++s) exe.steps[s].invariant = invariant[s];
  }
  // Steps that may compute in place (buffer_assignment.h): generated kernels other than row
  // reductions and raw MLIR (each output element from the inputs at its index), bias_add, and
  // copies (a Reshape's output placed on its dying input is no copy at all), on any input; on the
  // cpu backend, a convolution on its residual (the sum post-op accumulates into the output, so
  // the residual is then already there).
  std::set<std::string> elementwise_kernels;
  for (const KernelSpec& spec : out.lowered.kernels)
    if (!spec.row_reduction && spec.raw_mlir.empty()) elementwise_kernels.insert(spec.name);
  out.memory = AssignBuffers(out.lowered.executable, [&](const Step& step) -> std::vector<int> {
    std::vector<int> every(step.inputs.size());
    std::iota(every.begin(), every.end(), 0);
    if (step.kind == Step::Kind::kKernel)
      return elementwise_kernels.count(step.callee) ? every : std::vector<int>{};
    if (step.kind != Step::Kind::kLibrary) return {};
    if (step.callee == "bias_add" || step.callee == "copy") return every;
    if (options.cpu_steps && step.callee == "conv2d" && HasResidual(step))
      return {static_cast<int>(step.inputs.size()) - 1};
    return {};
  });
  return out;
}

}  // namespace kiln::compiler
