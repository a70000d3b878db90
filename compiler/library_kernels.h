// Library steps as generated kernels, for a target without the cpu backend's libraries (the CUDA
// device): strided_copy (compiler/strided_copy_kernel.h), conv2d with its fused epilogue and both
// backward convolutions, max/avg pooling and their gradients, batch_norm and batch_norm_grad,
// reduce_sum, concat and split, and the reference step Gather when its indices are a constant
// whose values are all in range (compiler/codegen/emit_library_kernels.h for their semantics). Each
// becomes one kernel with one iteration per output element (per whole element for split; batch
// norm adds a loop over the channels), written directly as MLIR (KernelSpec::raw_mlir).
//
// softmax_cross_entropy and its gradient (f32 logits, i32/i64 labels) become kernels too; each gets
// a check_labels step (a host routine of runtime/cpu failing the node on a label outside [0, C), as
// the cpu step does) before it, or at the start of the plan when the labels are a feed or a
// constant, and the loss kernel a scratch arena buffer for its row losses. A 16-bit batch_norm in
// training, and batch_norm_grad, get two f32 scratch buffers (the per-channel values unrounded).
//
// Contract of ReplaceLibraryStepsWithKernels: before buffer assignment, replaces each library step
// it covers by a kKernel step (rows = the kernel's shape[0]; the attributes of the routine it
// computes, plus "library": the routine, or the reference op, it replaces) calling a kernel
// appended to
// `lowered.kernels`, and leaves the others as they are: another routine, a buffer in a blocked
// layout, a dtype the kernel does not take (convolutions, pooling, batch_norm and batch_norm_grad
// f32/bf16/f16; reduce_sum and bias_add f32/f64/bf16/f16),
// an empty output or piece. Malformed attributes or operands of a covered routine are kInternal
// (the compiler wrote them).
#pragma once

#include "compiler/lower.h"

namespace kiln::compiler {

Status ReplaceLibraryStepsWithKernels(LoweredPlan& lowered);

}  // namespace kiln::compiler
