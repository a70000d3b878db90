// Library step "gemm": a (batched) matrix multiply through OpenBLAS, f32 (sgemm) and f64 (dgemm);
// bf16/f16 operands go through widened_step.cc.
// Parameters (attrs, all ints): m n k, trans_a trans_b (0/1), batch, stride_a stride_b (elements
// between consecutive matrices of a batch; 0 repeats the same matrix). Inputs a, b; output c,
// row-major [batch, m, n]. Leading dimensions follow from the shapes and transposes.
// An epilogue the compiler fused (compiler/epilogue_fusion.h; f32/f64, batch 1): attribute "bias"
// (1: inputs[2] holds n values added to every row: c is filled with them and the multiply runs
// with beta = 1) and "post_ops" (only 2, relu: applied to c after the multiply).
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "runtime/cpu/library_steps.h"

namespace kiln::cpu {
namespace {

struct GemmParams {
  int64_t m, n, k, batch, stride_a, stride_b;
  bool trans_a, trans_b;
  bool bias = false, relu = false;
};

template <typename T>
void Gemm(const GemmParams& p, const T* a, const T* b, T* c, const T* bias = nullptr) {
  const CBLAS_TRANSPOSE ta = p.trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = p.trans_b ? CblasTrans : CblasNoTrans;
  const int64_t lda = p.trans_a ? p.m : p.k, ldb = p.trans_b ? p.k : p.n;
  const T beta = bias ? T(1) : T(0);
  if (bias)
    for (int64_t r = 0; r < p.batch * p.m; ++r) std::copy(bias, bias + p.n, c + r * p.n);
  for (int64_t i = 0; i < p.batch; ++i) {
    const T* ai = a + i * p.stride_a;
    const T* bi = b + i * p.stride_b;
    T* ci = c + i * p.m * p.n;
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, ta, tb, p.m, p.n, p.k, 1.0f, ai, lda, bi, ldb, beta, ci, p.n);
    else
      cblas_dgemm(CblasRowMajor, ta, tb, p.m, p.n, p.k, 1.0, ai, lda, bi, ldb, beta, ci, p.n);
  }
  if (p.relu)
    for (int64_t i = 0; i < p.batch * p.m * p.n; ++i) c[i] = c[i] > T(0) ? c[i] : T(0);
}

class GemmStep : public StepRunner {
 public:
  GemmStep(const Step& step, GemmParams params, DType dtype)
      : step_(step), params_(params), dtype_(dtype) {}

  Status Run(StepEnv& env) const override {
    openblas_set_num_threads(env.threads);
    void* a = env.data[step_.inputs[0]];
    void* b = env.data[step_.inputs[1]];
    void* c = env.data[step_.outputs[0]];
    if (dtype_ == f32) {
      Gemm(params_, static_cast<const float*>(a), static_cast<const float*>(b),
           static_cast<float*>(c), static_cast<const float*>(Bias(env)));
    } else {
      Gemm(params_, static_cast<const double*>(a), static_cast<const double*>(b),
           static_cast<double*>(c), static_cast<const double*>(Bias(env)));
    }
    return OkStatus();
  }

 private:
  const void* Bias(StepEnv& env) const {
    return params_.bias ? env.data[step_.inputs[2]] : nullptr;
  }

  const Step& step_;
  GemmParams params_;
  DType dtype_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeGemmStep(const Step& step, const Executable& exe) {
  GemmParams p;
  KILN_ASSIGN_OR_RETURN(p.m, step.attrs.GetInt("m"));
  KILN_ASSIGN_OR_RETURN(p.n, step.attrs.GetInt("n"));
  KILN_ASSIGN_OR_RETURN(p.k, step.attrs.GetInt("k"));
  KILN_ASSIGN_OR_RETURN(p.batch, step.attrs.GetInt("batch"));
  KILN_ASSIGN_OR_RETURN(p.stride_a, step.attrs.GetInt("stride_a"));
  KILN_ASSIGN_OR_RETURN(p.stride_b, step.attrs.GetInt("stride_b"));
  KILN_ASSIGN_OR_RETURN(int64_t ta, step.attrs.GetInt("trans_a"));
  KILN_ASSIGN_OR_RETURN(int64_t tb, step.attrs.GetInt("trans_b"));
  p.trans_a = ta != 0;
  p.trans_b = tb != 0;
  if (step.attrs.Has("post_ops")) {
    KILN_ASSIGN_OR_RETURN(int64_t bias, step.attrs.GetInt("bias"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> post_ops, step.attrs.GetInts("post_ops"));
    p.bias = bias != 0;
    for (int64_t op : post_ops) {
      if (op != 2) return MakeError(ErrorCode::kInternal, "gemm: unknown post-op ", op);
      p.relu = true;
    }
  }
  if (step.inputs.size() != 2u + p.bias || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, "gemm takes ", 2 + p.bias, " inputs and 1 output");
  const BufferDesc& a = exe.buffers[step.inputs[0]];
  const BufferDesc& b = exe.buffers[step.inputs[1]];
  const BufferDesc& c = exe.buffers[step.outputs[0]];
  DType dtype = c.type.dtype;
  if ((dtype != f32 && dtype != f64) || a.type.dtype != dtype || b.type.dtype != dtype)
    return MakeError(ErrorCode::kInternal, "gemm supports f32 and f64, got ", a.type.ToString(),
                     " x ", b.type.ToString(), " -> ", c.type.ToString());
  if (p.bias && !(exe.buffers[step.inputs[2]].type == TensorType{dtype, Shape{p.n}}))
    return MakeError(ErrorCode::kInternal, "gemm: the bias must be ", DTypeName(dtype), "[", p.n,
                     "], got ", exe.buffers[step.inputs[2]].type.ToString());
  // Every matrix the loop touches must lie inside its buffer.
  auto last = [&](int64_t stride, int64_t size) { return (p.batch - 1) * stride + size; };
  if (p.m < 1 || p.n < 1 || p.k < 0 || p.batch < 1 || p.stride_a < 0 || p.stride_b < 0 ||
      last(p.stride_a, p.m * p.k) > a.type.shape.NumElements() ||
      last(p.stride_b, p.k * p.n) > b.type.shape.NumElements() ||
      p.batch * p.m * p.n != c.type.shape.NumElements())
    return MakeError(ErrorCode::kInternal,
                     "gemm parameters do not fit its buffers: ", a.type.ToString(), " x ",
                     b.type.ToString(), " -> ", c.type.ToString());
  return std::unique_ptr<StepRunner>(new GemmStep(step, p, dtype));
}

}  // namespace kiln::cpu
