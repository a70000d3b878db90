// Lowering: a fused plan -> the steps and buffers of an Executable (offsets not yet assigned) and
// the KernelSpecs of its generated kernels.
//
// Each cluster becomes one kernel step (scalar constants folded into its body, iteration space
// collapsed to the fewest dimensions its broadcasting allows, so it splits well over threads);
// MatMul in f32/f64 becomes an OpenBLAS gemm library call; every other node runs its reference
// kernel (the list of those is the compiler's to-do list, shown by `kiln inspect --fusion`).
// Values known at compile time become constants and run no step. Steps keep the plan's order
// except where a cluster gathers nodes: units are ordered topologically, earliest node first.
#pragma once

#include <string>
#include <vector>

#include "compiler/fusion.h"
#include "compiler/kernel_spec.h"
#include "compiler/static_types.h"
#include "runtime/executable.h"

namespace kiln::compiler {

struct LoweredPlan {
  Executable executable;  // arena offsets unassigned (see buffer_assignment.h)
  std::vector<KernelSpec> kernels;
  std::vector<std::string> decisions;  // one line per library call or reference step
};

Result<LoweredPlan> Lower(const RunPlan& plan, const StaticInfo& info, const FusionPlan& fusion);

// The iteration space of a kernel reduced to the fewest dimensions: adjacent dimensions merge
// when every input is either full or broadcast in both. Rewrites spec.shape and input shapes.
void CollapseDimensions(KernelSpec& spec);

}  // namespace kiln::compiler
