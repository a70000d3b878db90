// Lowering: a fused plan -> the steps and buffers of an Executable (offsets not yet assigned) and
// the KernelSpecs of its generated kernels.
//
// Each cluster becomes one kernel step (scalar constants folded into its body, iteration space
// collapsed to the fewest dimensions its broadcasting allows, so it splits well over threads); a
// cluster identical to an earlier one (same code, attributes compared exactly) calls its kernel.
// Library steps (runtime/cpu/library_steps.h): MatMul f32/f64 -> gemm (OpenBLAS); Conv2D and its
// backward ops f32/bf16 (computed in f32), BatchNorm and BatchNormGrad f32 -> oneDNN (batch_norm,
// batch_norm_grad); Conv2D f32 absorbs its bias,
// folded BatchNorm, residual Add and Relu as oneDNN post-ops, and a rank-2 MatMul its bias and Relu
// (compiler/epilogue_fusion.h); Sum/Mean/SumLike f32/f64 -> reduce_sum; BiasAdd f32/f64 ->
// bias_add (gemm, batch_norm(_grad) and bias_add also take bf16/f16, widened by the runtime);
// reshape-family ops -> copy; Slice, SliceGrad and constant Pad -> strided_copy
// (compiler/copy_lowering.h); SoftmaxCrossEntropy and its gradient op f32 -> one pass per row
// (softmax_cross_entropy, softmax_cross_entropy_grad); Variable -> variable_read (its buffer is bound to the stored value,
// kind kVariable); Assign* f32/f64 -> assign. Softmax, LogSoftmax, LayerNorm and Max/Min (and
// Sum/Mean not taken by reduce_sum) over trailing axes -> one row-reduction kernel each
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
