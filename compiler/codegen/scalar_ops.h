// Internal to compiler/codegen: the scalar body of each kiln elementwise op, as MLIR arith/math/scf
// ops, with the numerics of the reference kernels (runtime/reference/math.cc):
// - Maximum/Minimum/Relu/Clip/Sign propagate NaN; Maximum/Minimum return a canonical NaN.
// - Round is round-half-to-even (math.roundeven); Floor/Ceil are math.floor/ceil.
// - Integers wrap (two's complement); Div truncates toward zero, x / -1 is the wrapping negation
//   and x / 0 gives 0 (the reference reports an error instead: keep integer Div out of fused
//   kernels if that error matters); Pow on integers is exact repeated squaring (negative
//   exponents: 1 for base 1, +-1 for base -1, else 0); u8 uses unsigned div/compare/min/max.
// - Comparisons produce bool (i1 in the region); NaN compares false (Equal too).
// - Cast has Tensor::CastTo's semantics: float -> integer saturates (NaN -> 0) and truncates,
//   anything -> bool is x != 0 (NaN -> true), i64 -> f32 rounds through double.
// - Clip on integers clamps in double and truncates, as the reference.
// - Transcendental ops are MLIR math ops; the lowering (compiler/mlir/common.h) replaces f32
//   exp/log/tanh/erf/expm1 by MLIR's polynomial approximations (exp: up to ~80 ulp near the ends
//   of its range, log 1 ulp, tanh/erf 4 ulp) and sin/cos and the f64 ones by libm/libdevice calls.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/scalar_writer.h"
#include "compiler/kernel_spec.h"
#include "ir/status.h"

namespace kiln::compiler::internal {

// Whether `op` has a scalar body (for some dtypes).
bool HasScalarOp(const std::string& op);

// Checks arity and operand/result dtypes (see emit_mlir.h's CheckEmittable).
Status CheckScalarOp(const std::string& op, const std::vector<DType>& arg_dtypes, DType result);

// Emits `op` applied to `args` (already checked) and returns the SSA name of its result, in the
// compute type of op.dtype and rounded to it. Fails only on bad attributes.
Result<std::string> EmitScalarOp(ScalarWriter& w, const KernelSpec::Op& op,
                                 const std::vector<Scalar>& args);

}  // namespace kiln::compiler::internal
