// The compiler's pipeline from a RunPlan to an Executable, without generating code: Deferred
// nodes expanded (deferred_expansion.h), the graph passes on the plan's subgraph
// (plan_graph_passes.h), static types (and compile-time values), rewrites those allow
// (static_simplify.h), epilogue fusion into convolutions, elementwise fusion, lowering to steps,
// layouts, a target's rewrites, buffer assignment. The JIT (cpu_compiler.h) and `kiln inspect` both
// start here.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "compiler/buffer_assignment.h"
#include "compiler/deferred_expansion.h"
#include "compiler/fusion.h"
#include "compiler/layout_assignment.h"
#include "compiler/lower.h"
#include "compiler/plan_graph_passes.h"
#include "compiler/static_simplify.h"
#include "compiler/static_types.h"

namespace kiln::compiler {

struct PlanOptions {
  // Whether the kernel generator has a scalar lowering of `op` computing `dtype` from `inputs`.
  // Without one, nothing is fused (every node becomes a library call or a reference step).
  std::function<bool(const std::string& op, const std::vector<DType>& inputs, DType dtype)>
      can_emit;
  // Which layouts the runtime's steps compute in (compiler/layout_assignment.h); null: every
  // buffer stays dense.
  LayoutQuery preferred_layouts = DefaultLayoutQuery();
  // Rewrites the lowered steps after layouts, before buffer assignment (it may add steps, arena
  // buffers and kernels; raw-MLIR kernels never compute in place). Null: none.
  std::function<Status(LoweredPlan&)> rewrite_steps;
  // Whether the plan runs on the cpu backend alone, so that its steps may use what only that
  // backend has: convolutions absorbing a Clip (compiler/epilogue_fusion.h), OneHot as the
  // "one_hot" routine, Gather and GatherGrad as "gather" and "gather_grad" (LowerCpuRoutineSteps).
  // The CUDA backend's plans leave these out.
  bool cpu_steps = false;
  // Whether an inference BatchNorm after a convolution is folded into it (passes/
  // fold_batch_norm.h; the CUDA backend's plans).
  bool fold_batch_norm = false;
  // Feeds whose values the plan may take as known (runtime/cpu/plan_compiler.h, known_feeds).
  std::set<TensorRef> known_feeds;
};

struct PlannedExecutable {
  ExpandedPlan expanded;    // the plan with its Deferred nodes expanded (deferred_expansion.h)
  OptimizedPlan optimized;  // the plan after the graph passes (the later stages point into it)
  StaticInfo info;
  SimplifiedPlan simplified;  // the plan the later stages saw (they point into its nodes)
  EpiloguePlan epilogues;
  FusionPlan fusion;
  LoweredPlan lowered;  // lowered.executable has its layouts and offsets assigned
  LayoutStats layouts;
  MemoryStats memory;
};

Result<PlannedExecutable> PlanExecutable(const RunPlan& plan, const PlanOptions& options);

// The options of the cpu backend's plans (its JIT, `kiln compile --target cpu`, `kiln bench` and
// `kiln inspect`): the kernel generator's ops (CanEmit), the runtime's layouts, cpu_steps.
PlanOptions CpuPlanOptions();

}  // namespace kiln::compiler
