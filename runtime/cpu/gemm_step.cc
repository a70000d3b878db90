// Library step "gemm": a (batched) matrix multiply, f32 through kiln's packed AVX-512 kernel
// (packed_sgemm.h) where the CPU has AVX-512F and through OpenBLAS's sgemm otherwise, f64 through
// OpenBLAS's dgemm;
// bf16 operands (c bf16, or f32: MatMul's out_dtype) go through oneDNN's matmul where the CPU
// has bf16 arithmetic (onednn_matmul_step.cc), other bf16 and f16 ones through widened_step.cc.
// Parameters (attrs, all ints): m n k, trans_a trans_b (0/1), batch, stride_a stride_b (elements
// between consecutive matrices of a batch; 0 repeats the same matrix). Inputs a, b; output c,
// row-major [batch, m, n]. Leading dimensions follow from the shapes and transposes.
// An epilogue the compiler fused (compiler/epilogue_fusion.h; f32/f64, batch 1): attribute "bias"
// (1: inputs[2] holds n values added to every row: c is filled with them and the multiply runs
// with beta = 1) and "post_ops" (2, relu, or 3, tanh-approximated GELU computed in f64: applied to
// c after the multiply).
#include <cblas.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "ir/ops/math.h"
#include "runtime/cpu/few_rows_sgemm.h"
#include "runtime/cpu/gemm_params.h"
#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/packed_sgemm.h"
#include "runtime/cpu/product_adder.h"

namespace kiln::cpu {
namespace {

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
  if (p.gelu_tanh)
    for (int64_t i = 0; i < p.batch * p.m * p.n; ++i)
      c[i] = static_cast<T>(GeluTanhValue(static_cast<double>(c[i])));
}

class GemmStep : public StepRunner {
 public:
  GemmStep(const Step& step, GemmParams params, bool b_may_be_kept) : step_(step), params_(params) {
    SgemmProblem p = Problem(nullptr, nullptr, nullptr);
    if (params_.dtype == f32 && HasPackedSgemm() && b_may_be_kept &&
        !(p.batch > 1 && p.stride_b != 0) && p.m > kFewRows)
      kept_ = PackedSgemmB::BytesFor(p);
  }

  int64_t kept_bytes() const override { return kept_; }

  Status Run(StepEnv& env) const override {
    void* a = env.data[step_.inputs[0]];
    void* b = env.data[step_.inputs[1]];
    void* c = env.data[step_.outputs[0]];
    if (params_.dtype == f32 && HasPackedSgemm()) {
      SgemmProblem p = Problem(a, b, c);
      p.bias = static_cast<const float*>(Bias(env));
      std::lock_guard<std::mutex> lock(weights_.mutex);
      p.packed_b = PackedWeights(p, env);
      PackedSgemm(p, env.threads);
      return OkStatus();
    }
    openblas_set_num_threads(env.threads);
    if (params_.dtype == f32) {
      Gemm(params_, static_cast<const float*>(a), static_cast<const float*>(b),
           static_cast<float*>(c), static_cast<const float*>(Bias(env)));
    } else {
      Gemm(params_, static_cast<const double*>(a), static_cast<const double*>(b),
           static_cast<double*>(c), static_cast<const double*>(Bias(env)));
    }
    return OkStatus();
  }

 private:
  SgemmProblem Problem(const void* a, const void* b, void* c) const {
    SgemmProblem p;
    p.m = params_.m, p.n = params_.n, p.k = params_.k, p.batch = params_.batch;
    p.stride_a = params_.stride_a, p.stride_b = params_.stride_b;
    p.trans_a = params_.trans_a, p.trans_b = params_.trans_b;
    p.a = static_cast<const float*>(a), p.b = static_cast<const float*>(b);
    p.c = static_cast<float*>(c);
    p.relu = params_.relu, p.gelu_tanh = params_.gelu_tanh;
    return p;
  }

  const void* Bias(StepEnv& env) const {
    return params_.bias ? env.data[step_.inputs[2]] : nullptr;
  }

  // b packed for the kernel, kept from run to run while b is a constant (packed on the first run)
  // or the same version of a variable that the previous run read too (a model's weights at
  // inference: packed on the second run, then kept); nullptr when b changes every run (an
  // activation, a feed, weights that training updates every step: packing them whole each step
  // would cost a pass through memory that the product's own block-by-block packing avoids) or
  // differs across the batch, and for products of a few rows, which read b unpacked as fast as
  // packed (runtime/cpu/few_rows_sgemm.h) and need no copy of it.
  const float* PackedWeights(const SgemmProblem& p, const StepEnv& env) const {
    const uint64_t version = env.version(step_.inputs[1]);
    if (version == 0 || (p.batch > 1 && p.stride_b != 0) || p.m <= kFewRows) return nullptr;
    const bool seen_before = weights_.last_seen == version && weights_.last_source == p.b;
    weights_.last_seen = version;
    weights_.last_source = p.b;
    if (!seen_before && version != VariableStore::kConstantVersion) return nullptr;
    if (weights_.version != version || weights_.source != p.b) {
      weights_.packed.Pack(p, env.threads);
      weights_.version = version;
      weights_.source = p.b;
    }
    return weights_.packed.data();
  }

  const Step& step_;
  GemmParams params_;
  int64_t kept_ = 0;  // packed weights: b is a constant or a variable
  struct Weights {
    std::mutex mutex;      // runs of one program from several threads share the packed copy
    uint64_t version = 0;  // of the packed copy
    const void* source = nullptr;
    uint64_t last_seen = 0;  // the version the previous run read
    const void* last_source = nullptr;
    PackedSgemmB packed;
  };
  mutable Weights weights_;
};

// c += alpha * op(a) x op(b) through OpenBLAS's sgemm with beta 1 (CPUs without AVX-512).
class BlasProductAdder : public ProductAdder {
 public:
  explicit BlasProductAdder(const GemmParams& p) : p_(p) {}
  Status Add(const void* a, const void* b, float* c, float alpha, int threads) const override {
    openblas_set_num_threads(threads);
    cblas_sgemm(CblasRowMajor, p_.trans_a ? CblasTrans : CblasNoTrans,
                p_.trans_b ? CblasTrans : CblasNoTrans, p_.m, p_.n, p_.k, alpha,
                static_cast<const float*>(a), p_.trans_a ? p_.m : p_.k,
                static_cast<const float*>(b), p_.trans_b ? p_.k : p_.n, 1.0f, c, p_.n);
    return OkStatus();
  }

 private:
  GemmParams p_;
};

}  // namespace

Result<std::unique_ptr<ProductAdder>> MakeBlasProductAdder(const Step&, const GemmParams& p) {
  return std::unique_ptr<ProductAdder>(new BlasProductAdder(p));
}

Result<std::unique_ptr<StepRunner>> MakeGemmStep(const Step& step, const Executable& exe) {
  KILN_ASSIGN_OR_RETURN(GemmParams p, ReadGemmParams(step, exe));
  if (p.dtype != f32 && p.dtype != f64)
    return MakeError(ErrorCode::kInternal, "gemm supports f32 and f64, got ", DTypeName(p.dtype));
  const BufferDesc::Kind b_kind = exe.buffers[step.inputs[1]].kind;
  return std::unique_ptr<StepRunner>(new GemmStep(
      step, p, b_kind == BufferDesc::Kind::kConstant || b_kind == BufferDesc::Kind::kVariable));
}

}  // namespace kiln::cpu
