// Reduction lowering: nodes that reduce over their trailing axes become one generated
// row-reduction kernel each (KernelSpec::row_reduction, compiler/kernel_spec.h), instead of a
// reference step. The leading dims of the input collapse into rows, the reduced trailing ones into
// cols; the kernel splits rows over threads like every kernel.
//
//   Softmax, LogSoftmax  axis with only size-1 dims after it; max, then sum of exp(x - max), then
//                        exp(x - max) / sum or (x - max) - log(sum), as the reference.
//   LayerNorm            x[axis:] normalized: mean, then the biased variance of (x - mean), then
//                        (x - mean) / sqrt(var + epsilon) * scale + bias.
//   Max, Min, Sum, Mean  reduced axes trailing (keepdims or not); at least one column for Max/Min
//                        (over zero elements the reference reports an error).
// Float dtypes only: f32 and f64 compute in their dtype, f16 and bf16 in f32 and are rounded once
// at the end (the reference computes in double and rounds once). Shapes must be fully known.
//
// Contract: each op above gets an OpLowering::row_reduction (compiler/op_lowerings.h): on success
// the spec's inputs are the node's inputs, in order (reshaped to [rows, cols] alignment; their
// buffers are unchanged), and its outputs the node's outputs, in order; the caller names it.
// Otherwise a kUnimplemented error says in a few words why not (the decision list of `kiln inspect
// --fusion`).
#pragma once

#include "compiler/op_lowerings.h"

namespace kiln::compiler {

void RegisterRowReductionLowerings(OpLowerings& lowerings);

}  // namespace kiln::compiler
