// Kernel generation, step 1: KernelSpecs -> the text of one MLIR module (no MLIR headers here, so
// this compiles fast and its output can be compared with golden files).
//
// Contract: EmitKernelModule returns a module with one `func.func @NAME` per spec, following the
// ABI of compiler/kernel_spec.h:
//     func.func @NAME(%begin: i64, %end: i64, %in0: memref<..>, ..., %out0: memref<..>, ...)
// Every buffer argument is a statically shaped, identity-layout memref, so that with MLIR's
// bare-pointer calling convention each one is exactly one `T*`. The memref shapes are the
// *canonical* shapes of the iteration space: dimensions of size 1 are dropped and neighbouring
// dimensions that every operand treats alike (all present or all broadcast) are merged, so that a
// [64, 16, 8, 8] + [64, 16, 8, 8] kernel is one loop of 65536 and the loop vectorizes; an input's
// broadcast dimensions are left out of its memref (a scalar input is memref<T>). The element
// layout is the dense row-major layout of the full shapes, as the ABI requires. Rows [begin, end)
// of dimension 0 of KernelSpec::shape become a subview of the first canonical dimension.
// The body is one linalg.generic with parallel iterators whose region holds arith/math/scf ops that
// reproduce the reference kernels (runtime/reference/math.cc) -- see scalar_ops.h for the op list
// and numerics. bool is stored as i8 (0/1), bf16 as its 16 raw bits (i16); f16 and bf16 compute
// in f32 and are rounded to their dtype after every op, as the reference rounds every op's output.
// An elementwise kernel's func carries `passthrough = ["kiln.parallel_loops"]` (an LLVM function
// attribute after translation): each iteration of its loops touches only its own elements, even
// when an output is an input's very buffer, which compiler/mlir/parallel_loops.h tells LLVM's
// vectorizer so that an in-place kernel still vectorizes.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/kernel_spec.h"
#include "ir/dtype.h"
#include "ir/status.h"

namespace kiln::compiler {

// The LLVM function attribute that marks a kernel whose loops' iterations are independent.
inline constexpr char kParallelLoopsAttribute[] = "kiln.parallel_loops";

struct EmitOptions {
  // For the host (JIT and ahead-of-time code), never the device: a row reduction's max (min) of
  // an f32 input row folds 16 columns at a time with vector ops (emit_reduction.h), which LLVM 16
  // does not vectorize by itself.
  bool host_vectors = false;
  // Names of empty functions to define beside the kernels: the plan's kernel-step signatures
  // (runtime/cpu/kernel_signature.h), which the runtime looks for before it runs a step.
  std::set<std::string> markers;
};

// The MLIR text of one module holding every spec's kernel. Errors (kInvalidArgument for a
// malformed spec, kUnimplemented for an op or dtype the generator does not support) name the
// kernel, the op, its graph node and the dtypes involved.
Result<std::string> EmitKernelModule(const std::vector<KernelSpec>& specs,
                                     const EmitOptions& options = {});

// Whether the generator can emit `op` (a kiln op name or "Constant") applied to operands of
// `arg_dtypes` producing `result_dtype`; CheckEmittable says why not. The fusion planner asks
// before putting a node into a generated kernel. Attributes are checked at emission time.
bool CanEmit(const std::string& op, const std::vector<DType>& arg_dtypes, DType result_dtype);
// Whether `op` has a scalar body at all (for some dtypes): an elementwise op that fuses into
// generated kernels (compiler/op_lowerings.h).
bool HasScalarBody(const std::string& op);
Status CheckEmittable(const std::string& op, const std::vector<DType>& arg_dtypes,
                      DType result_dtype);

}  // namespace kiln::compiler
