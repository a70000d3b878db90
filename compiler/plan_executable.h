// The compiler's pipeline from a RunPlan to an Executable, without generating code: static types
// (and compile-time values), rewrites those allow (static_simplify.h), epilogue fusion into
// convolutions, elementwise fusion, lowering to steps, buffer assignment. The JIT (cpu_compiler.h)
// and `kiln inspect` both start here.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/buffer_assignment.h"
#include "compiler/fusion.h"
#include "compiler/lower.h"
#include "compiler/static_simplify.h"
#include "compiler/static_types.h"

namespace kiln::compiler {

struct PlanOptions {
  // Whether the kernel generator has a scalar lowering of `op` computing `dtype` from `inputs`.
  // Without one, nothing is fused (every node becomes a library call or a reference step).
  std::function<bool(const std::string& op, const std::vector<DType>& inputs, DType dtype)>
      can_emit;
};

struct PlannedExecutable {
  StaticInfo info;
  SimplifiedPlan simplified;  // the plan the later stages saw (they point into its nodes)
  EpiloguePlan epilogues;
  FusionPlan fusion;
  LoweredPlan lowered;  // lowered.executable has its offsets assigned
  MemoryStats memory;
};

Result<PlannedExecutable> PlanExecutable(const RunPlan& plan, const PlanOptions& options);

}  // namespace kiln::compiler
