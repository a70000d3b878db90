// Internal to compiler/codegen: the MLIR text of a row-reduction kernel (KernelSpec::row_reduction,
// see compiler/kernel_spec.h), called by EmitKernelModule after it checked the spec's ops.
//
// The function has the usual ABI (begin/end rows, then one identity-layout memref per input in
// its own [rows, cols]-aligned shape, then the outputs: memref<rows x cols> for per-element values,
// memref<rows> for per-row values). Its body is an scf.parallel over the rows [begin, end) (a plain
// loop on the host, one GPU thread per row on NVPTX); inside, each reduction of the spec, in op
// order, is one scf.for over the columns with the accumulator in iter_args, recomputing the
// per-element ops it needs (loads and arithmetic are cheaper than writing a temporary row); a last
// scf.for computes and stores every per-element output, and per-row outputs are stored once per
// row. Per-row ops (e.g. 1 / sqrt(var + eps)) are computed once per row, between the loops.
// ReduceSum adds with `fastmath<reassoc>` so that LLVM vectorizes it (the summation order then
// differs from a sequential loop, within the float tolerance); ReduceMax/ReduceMin propagate NaN,
// like kiln's Max/Min. With `host_vectors` (host code only: the GPU lowering reads the scalar
// form), the max (min) of an f32 input's row first folds the columns 16 at a time (vector.load,
// a compare and select per lane that keeps NaN out of the lanes, and beside it whether a lane saw
// NaN), then the lanes, then the remaining columns one at a time from there; the result is the
// same value (a maximum does not depend on the order it is taken in). The accumulator starts at 0,
// -inf or +inf: over zero columns ReduceMax gives -inf (the lowering does not use it there; the
// reference reports an error).
#pragma once

#include <string>
#include <vector>

#include "compiler/kernel_spec.h"
#include "ir/status.h"

namespace kiln::compiler::internal {

// "ReduceSum", "ReduceMax", "ReduceMin".
bool IsRowReduction(const std::string& op);
// One float argument (f32 or f64) and a result of the same dtype.
Status CheckRowReductionOp(const std::string& op, const std::vector<DType>& arg_dtypes,
                           DType result);

// The function text of one row-reduction kernel whose ops CheckSpec accepted. Fails with
// kInvalidArgument when the shape is not [rows, cols] or an input does not broadcast to it.
Result<std::string> EmitRowReductionKernel(const KernelSpec& spec, bool host_vectors = false);

}  // namespace kiln::compiler::internal
