// Library lowering: which library routine (runtime/cpu/library_steps.h) runs a node, chosen by op,
// dtype and the plan's static shapes, with the routine's parameters:
//   MatMul (f32/f64, and bf16/f16 which the runtime runs natively or widened) -> gemm, when its
//     batch broadcasting is one strided loop; Conv2D and both backward convolutions (f32/bf16) ->
//     conv2d*; BatchNorm / BatchNormGrad (float, rank 2-5) -> batch_norm / batch_norm_grad;
//     SoftmaxCrossEntropy and its gradient (f32) -> softmax_cross_entropy(_grad); Sum, Mean,
//     SumLike and GlobalAvgPool (float; bf16/f16 widened) -> reduce_sum; BiasAdd -> bias_add;
//     reshape-family ops -> copy; Assign* (f32/f64/i32/i64) -> assign; Variable -> variable_read.
// Pooling, Slice/Pad and the row reductions have lowerings of their own (pool_lowering.h,
// copy_lowering.h, reduction_fusion.h), as do the epilogues fused into Conv2D/MatMul calls
// (epilogue_fusion.h), which lower.cc attaches to the step chosen here.
//
// Each op above gets an OpLowering::library (compiler/op_lowerings.h). Contract: it returns true
// after setting step.kind (kLibrary), step.callee and step.attrs when a routine runs the node;
// false leaves `step` as it was (the node needs another lowering).
#pragma once

#include <optional>
#include <string>

#include "compiler/op_lowerings.h"

namespace kiln::compiler {

void RegisterLibraryLowerings(OpLowerings& lowerings);

// Turns reference steps into routines of the cpu runtime (their ops' OpLowering::cpu_routine), for
// plans of the cpu backend alone (PlanOptions::cpu_steps): OneHot with i32/i64 indices into an
// f32/f64 output into "one_hot" (runtime/cpu/one_hot_step.cc; attributes depth, axis normalized,
// on_value, off_value); Gather (any dtype) and GatherGrad (f32, f64) with i32/i64 indices into
// "gather" and "gather_grad" (runtime/cpu/gather_step.cc; attribute axis, normalized); Sum, Mean,
// Prod, Max and Min over integers into "reduce_integer" (runtime/cpu/reduce_integer_step.cc;
// attributes reduced, as reduce_sum's, and op).
void LowerCpuRoutineSteps(Executable& exe);

// The "reduce_sum" attributes (reduced: per input dim 1 when summed away; scale: 1, or 1/count
// for a mean) of a Sum, Mean, SumLike or GlobalAvgPool over an input of shape `x` (`like`: a
// SumLike's second input), whatever the dtype; nullopt for another op or bad axes.
std::optional<AttrMap> ReduceSumAttrs(const Node& node, const Shape& x, const Shape* like);
// The routine of a convolution op ("conv2d", "conv2d_backprop_input", "conv2d_backprop_filter"),
// whose attributes are the node's with defaults; nullopt for another op.
std::optional<std::string> ConvRoutine(const std::string& op);

}  // namespace kiln::compiler
