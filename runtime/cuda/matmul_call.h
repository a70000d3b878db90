// MatmulCall: one cuBLASLt matmul as the cuda backend issues it, in cuBLASLt's own terms
// (column-major matrices, leading dimensions, strided batches, an epilogue), derived from a plan's
// "gemm" step (runtime/cpu/gemm_params.h) at load. Both devices run the same descriptor: the GPU
// through cublasLtMatmul (driver_matmul.cc), the simulated device through RunMatmulOnHost, which
// is the definition of what the call computes. Keeping the row-major to column-major translation
// out of the simulator's routine means a wrong translation fails the differential tests here
// instead of first showing on a GPU.
//
// Semantics (cuBLASLt's, for every batch i < batch, with X_i = X + i * stride_x elements):
//   D_i = epilogue(alpha * op(A_i) op(B_i) + beta * C_i),   D_i is m x n, op(A_i) m x k
// where a stored matrix is column-major with its leading dimension (A is (trans_a ? k : m) rows by
// (trans_a ? m : k) columns), C is D (beta = 0: C is never read), and the epilogue adds bias[r] to
// row r of D (bias: m values of D's dtype, the same for every batch) and/or applies an
// activation after it: ReLU, or GELU in its tanh approximation (cuBLASLt's GELU; ir/ops/math.h's
// GeluTanhValue, which the simulated device computes in f64 from the f32 value). A and B share
// `ab_type` (f32, f16 or bf16); D and the bias are `d_type`: f32, or ab_type. The products
// accumulate in f32. With `tf32` (f32 operands; a gemm step's attribute "tf32" = 1, which the
// compiler sets when the user allows TF32) the call may use TF32 tensor cores: the simulated device
// then rounds every element of A and B to TF32 (the 13 low mantissa bits rounded off, to nearest,
// ties away from zero, as PTX's cvt.rna.tf32.f32) before multiplying, which is how cuBLAS feeds f32
// data to TF32 tensor cores.
#pragma once

#include <cstdint>
#include <string>

#include "ir/status.h"
#include "runtime/cuda/device.h"
#include "runtime/executable.h"

namespace kiln::cuda {

struct MatmulCall {
  enum class Activation { kNone, kRelu, kGeluTanh };
  DType ab_type = f32;
  DType d_type = f32;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_d = 0;  // elements
  float alpha = 1.0f, beta = 0.0f;
  bool bias = false;
  Activation activation = Activation::kNone;
  bool tf32 = false;
  // Which step operand (inputs, then outputs) each matrix is; bias_operand is -1 without a bias.
  int a_operand = -1, b_operand = -1, bias_operand = -1, d_operand = -1;

  // Stored rows and columns of A and B (before op).
  int64_t a_rows() const { return trans_a ? k : m; }
  int64_t a_cols() const { return trans_a ? m : k; }
  int64_t b_rows() const { return trans_b ? n : k; }
  int64_t b_cols() const { return trans_b ? k : n; }
  // "matmul m=5 n=300 k=8 A^T B batch=1 f32->f32 bias relu", for messages.
  std::string ToString() const;
};

// The device addresses of one call's operands (bias 0 without one).
struct MatmulOperands {
  DevicePtr a = 0, b = 0, bias = 0, d = 0;
};

// Whether a "gemm" step can run as a cuBLASLt call: f32, f16 or bf16 operands, k > 0.
bool IsDeviceGemm(const Step& step, const Executable& exe);

// The cuBLASLt call computing `step` (a "gemm" step, checked by cpu::ReadGemmParams): row-major
// C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so the step's B is the call's A.
Result<MatmulCall> MatmulCallForGemm(const Step& step, const Executable& exe);

// Elements of A, B and D (and the bias) the call touches, from each one's start; with the
// operands' buffer sizes this is the load-time range check. Errors on overflow or a leading
// dimension smaller than the stored rows.
struct MatmulSpans {
  int64_t a = 0, b = 0, bias = 0, d = 0;
};
Result<MatmulSpans> SpansOf(const MatmulCall& call);

// The call computed on the host from host pointers (the simulated device's cuBLASLt), split over
// `threads` threads by columns of D.
void RunMatmulOnHost(const MatmulCall& call, const void* a, const void* b, const void* bias,
                     void* d, int threads);

}  // namespace kiln::cuda
