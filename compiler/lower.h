// Lowering: a fused plan -> the steps and buffers of an Executable (offsets not yet assigned) and
// the KernelSpecs of its generated kernels.
//
// Each cluster becomes one kernel step (scalar constants folded into its body, iteration space
// collapsed to the fewest dimensions its broadcasting allows, so it splits well over threads); a
// cluster identical to an earlier one (same code, attributes compared exactly) calls its kernel.
// Library steps (runtime/cpu/library_steps.h) as compiler/library_lowering.h chooses them, with
// the epilogues compiler/epilogue_fusion.h fused into Conv2D and MatMul calls; pooling
// (pool_lowering.h) and Slice, SliceGrad and constant Pad (copy_lowering.h) as library steps too;
// Variable buffers are bound to the stored values (kind kVariable), as are Assign* outputs.
// Softmax, LogSoftmax, LayerNorm and Max/Min (and Sum/Mean not taken by reduce_sum) over
// trailing axes -> one row-reduction kernel each
// (compiler/reduction_fusion.h). Every other node runs its reference kernel (the compiler's to-do
// list, shown by `kiln inspect --fusion`). Values known at compile time become constants and run
// no step. Steps keep the plan's order except where a cluster gathers nodes: units are ordered
// topologically, earliest node first.
#pragma once

#include <string>
#include <vector>

#include "compiler/epilogue_fusion.h"
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

// Nodes that `epilogues` absorbs run no step of their own: the step of their Conv2D or MatMul
// computes them.
Result<LoweredPlan> Lower(const RunPlan& plan, const StaticInfo& info, const FusionPlan& fusion,
                          const EpiloguePlan& epilogues);

// The iteration space of a kernel reduced to the fewest dimensions: adjacent dimensions merge
// when every input is either full or broadcast in both. Rewrites spec.shape and input shapes.
void CollapseDimensions(KernelSpec& spec);

}  // namespace kiln::compiler
