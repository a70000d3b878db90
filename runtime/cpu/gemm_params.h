// The parameters of a "gemm" library step, read and checked against its buffers once, at load:
// shared by the OpenBLAS step (gemm_step.cc) and the oneDNN bf16 step (onednn_matmul_step.cc).
#pragma once

#include "runtime/cpu/step.h"

namespace kiln::cpu {

// c[i] = op(a[i]) x op(b[i]) for i < batch, row-major [batch, m, n]; a[i] starts at
// i * stride_a elements (0 repeats one matrix), likewise b. With the fused epilogue
// (compiler/epilogue_fusion.h), `bias` adds inputs[2] (n values) to every row and `relu` or
// `gelu_tanh` (Gelu with approximate = "tanh", ir/ops/math.h's GeluTanhValue) follows.
struct GemmParams {
  int64_t m = 0, n = 0, k = 0, batch = 1, stride_a = 0, stride_b = 0;
  bool trans_a = false, trans_b = false;
  bool bias = false, relu = false, gelu_tanh = false;
  DType dtype = f32;      // of a and b
  DType out_dtype = f32;  // of c and the bias: dtype, or f32 for bf16/f16 operands (MatMul's
                          // out_dtype)
};

// Reads the step's attributes (m n k, trans_a trans_b, batch, stride_a stride_b, and "bias" and
// "post_ops" when fused) and checks that every matrix the loop touches lies inside its buffer and
// that the operands share one dtype (c: theirs, or f32 for 16-bit operands). Errors are kInternal:
// the compiler wrote a bad step.
Result<GemmParams> ReadGemmParams(const Step& step, const Executable& exe);

}  // namespace kiln::cpu
