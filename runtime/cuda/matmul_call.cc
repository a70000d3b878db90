#include "runtime/cuda/matmul_call.h"

#include <sstream>

#include "runtime/cpu/gemm_params.h"

namespace kiln::cuda {
namespace {

// Elements from a strided batch's start to the end of its last stored matrix.
Result<int64_t> BatchSpan(int64_t batch, int64_t stride, int64_t rows, int64_t cols, int64_t ld,
                          const char* name) {
  if (rows < 1 || cols < 1 || batch < 1 || stride < 0 || ld < rows)
    return MakeError(ErrorCode::kInternal, "matmul: matrix ", name, " of ", rows, " x ", cols,
                     " with leading dimension ", ld, ", batch ", batch, " and stride ", stride);
  int64_t last = 0, matrix = 0, span = 0;
  if (__builtin_mul_overflow(batch - 1, stride, &last) ||
      __builtin_mul_overflow(ld, cols - 1, &matrix) ||
      __builtin_add_overflow(matrix, rows, &matrix) || __builtin_add_overflow(last, matrix, &span))
    return MakeError(ErrorCode::kInternal, "matmul: matrix ", name,
                     " spans more than 2^63 elements");
  return span;
}

}  // namespace

std::string MatmulCall::ToString() const {
  const char* activations[] = {"", " relu", " gelu_tanh"};
  std::ostringstream os;
  os << "matmul m=" << m << " n=" << n << " k=" << k << (trans_a ? " A^T" : " A")
     << (trans_b ? " B^T" : " B") << " batch=" << batch << " " << DTypeName(ab_type) << "->"
     << DTypeName(d_type) << (bias ? " bias" : "") << activations[static_cast<int>(activation)]
     << (tf32 ? " tf32" : "");
  return os.str();
}

bool IsDeviceGemm(const Step& step, const Executable& exe) {
  if (step.kind != Step::Kind::kLibrary || step.callee != "gemm" || step.inputs.empty())
    return false;
  const DType t = exe.buffers[step.inputs[0]].type.dtype;
  Result<int64_t> k = step.attrs.GetInt("k");
  return (t == f32 || t == f16 || t == bf16) && k.ok() && *k > 0;
}

Result<MatmulCall> MatmulCallForGemm(const Step& step, const Executable& exe) {
  KILN_ASSIGN_OR_RETURN(cpu::GemmParams p, cpu::ReadGemmParams(step, exe));
  if (!IsDeviceGemm(step, exe))
    return MakeError(ErrorCode::kUnimplemented, "gemm of ", DTypeName(p.dtype),
                     " operands and k=", p.k, ": the device runs f32, f16 and bf16 with k > 0");
  MatmulCall call;
  call.ab_type = p.dtype;
  call.d_type = p.out_dtype;
  // Row-major X (r x c) is column-major X^T (c x r) with leading dimension c.
  call.m = p.n;
  call.n = p.m;
  call.k = p.k;
  call.trans_a = p.trans_b;  // B stored k x n (n x k transposed): column-major n x k (k x n)
  call.trans_b = p.trans_a;
  call.lda = p.trans_b ? p.k : p.n;
  call.ldb = p.trans_a ? p.m : p.k;
  call.ldd = p.n;
  call.batch = p.batch;
  call.stride_a = p.stride_b;
  call.stride_b = p.stride_a;
  call.stride_d = p.m * p.n;
  call.bias = p.bias;
  call.activation = p.relu        ? MatmulCall::Activation::kRelu
                    : p.gelu_tanh ? MatmulCall::Activation::kGeluTanh
                                  : MatmulCall::Activation::kNone;
  if (step.attrs.Has("tf32")) {
    KILN_ASSIGN_OR_RETURN(int64_t tf32, step.attrs.GetInt("tf32"));
    call.tf32 = tf32 != 0 && p.dtype == f32;
  }
  call.a_operand = 1;
  call.b_operand = 0;
  call.bias_operand = p.bias ? 2 : -1;
  call.d_operand = static_cast<int>(step.inputs.size());
  return call;
}

Result<MatmulSpans> SpansOf(const MatmulCall& call) {
  MatmulSpans spans;
  KILN_ASSIGN_OR_RETURN(
      spans.a, BatchSpan(call.batch, call.stride_a, call.a_rows(), call.a_cols(), call.lda, "A"));
  KILN_ASSIGN_OR_RETURN(
      spans.b, BatchSpan(call.batch, call.stride_b, call.b_rows(), call.b_cols(), call.ldb, "B"));
  KILN_ASSIGN_OR_RETURN(spans.d,
                        BatchSpan(call.batch, call.stride_d, call.m, call.n, call.ldd, "D"));
  spans.bias = call.bias ? call.m : 0;
  return spans;
}

}  // namespace kiln::cuda
