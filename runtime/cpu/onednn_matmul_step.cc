// Library step "gemm" over bf16 operands through oneDNN's matmul, on CPUs where oneDNN has a
// native bf16 implementation (AVX-512 BF16 or AMX: brgemm). Same parameters as gemm_step.cc (m n
// k, trans_a trans_b, batch, stride_a stride_b, and the fused epilogue "bias"/"post_ops"):
// transposes and batch broadcasting (stride 0) are expressed as strides of the memory
// descriptors, so nothing is copied; oneDNN accumulates in float32 and rounds c once (or writes
// it as is when c is float32: MatMul's out_dtype). The
// primitive is created once, at load; where oneDNN offers only its reference implementation or
// none (AVX2 CPUs), the factory returns kUnimplemented and the caller widens to OpenBLAS sgemm
// instead (library_step.cc). Also the bf16 way of runtime/cpu/product_adder.h: the same matmul
// adding into an f32 c (a sum post-op, the scale an output scale given per run).
#include <omp.h>

#include <dnnl.hpp>
#include <optional>

#include "runtime/cpu/gemm_params.h"
#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/onednn.h"
#include "runtime/cpu/product_adder.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;

class OnednnMatmulStep : public StepRunner {
 public:
  OnednnMatmulStep(const Step& step, dnnl::matmul primitive, memory::desc a, memory::desc b,
                   memory::desc c, std::optional<memory::desc> bias)
      : step_(step),
        primitive_(std::move(primitive)),
        a_(std::move(a)),
        b_(std::move(b)),
        c_(std::move(c)),
        bias_(std::move(bias)) {}

  Status Run(StepEnv& env) const override {
    omp_set_num_threads(env.threads);
    try {
      dnnl::stream stream(OnednnEngine());
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, memory(a_, OnednnEngine(), env.data[step_.inputs[0]])},
          {DNNL_ARG_WEIGHTS, memory(b_, OnednnEngine(), env.data[step_.inputs[1]])},
          {DNNL_ARG_DST, memory(c_, OnednnEngine(), env.data[step_.outputs[0]])}};
      if (bias_) args[DNNL_ARG_BIAS] = memory(*bias_, OnednnEngine(), env.data[step_.inputs[2]]);
      primitive_.execute(stream, args);
      stream.wait();
    } catch (const dnnl::error& e) {
      return MakeError(ErrorCode::kInternal, "oneDNN matmul failed: ", e.what());
    }
    return OkStatus();
  }

 private:
  const Step& step_;
  dnnl::matmul primitive_;
  memory::desc a_, b_, c_;
  std::optional<memory::desc> bias_;
};

// c += alpha * op(a) x op(b): the matmul with a sum post-op, alpha its output scale given per run.
class OnednnProductAdder : public ProductAdder {
 public:
  OnednnProductAdder(dnnl::matmul primitive, memory::desc a, memory::desc b, memory::desc c)
      : primitive_(std::move(primitive)), a_(std::move(a)), b_(std::move(b)), c_(std::move(c)) {}

  Status Add(const void* a, const void* b, float* c, float alpha, int threads) const override {
    omp_set_num_threads(threads);
    try {
      dnnl::stream stream(OnednnEngine());
      memory::desc scale_desc({1}, memory::data_type::f32, memory::format_tag::x);
      primitive_.execute(
          stream, {{DNNL_ARG_SRC, memory(a_, OnednnEngine(), const_cast<void*>(a))},
                   {DNNL_ARG_WEIGHTS, memory(b_, OnednnEngine(), const_cast<void*>(b))},
                   {DNNL_ARG_DST, memory(c_, OnednnEngine(), c)},
                   {DNNL_ARG_ATTR_OUTPUT_SCALES, memory(scale_desc, OnednnEngine(), &alpha)}});
      stream.wait();
    } catch (const dnnl::error& e) {
      return MakeError(ErrorCode::kInternal, "oneDNN matmul failed: ", e.what());
    }
    return OkStatus();
  }

 private:
  dnnl::matmul primitive_;
  memory::desc a_, b_, c_;
};

// The bf16 operands a and b of `p` as oneDNN describes them: [batch, rows, cols] with element
// strides (a transposed operand is stored [cols, rows]), a batch that repeats one matrix (stride
// 0) as a batch of 1 that oneDNN broadcasts.
std::pair<memory::desc, memory::desc> Operands(const GemmParams& p) {
  auto operand = [&](int64_t stride, int64_t rows, int64_t cols, bool transposed) {
    const memory::dim batch = stride == 0 ? 1 : p.batch;
    const memory::dim step = batch == 1 ? rows * cols : stride;
    const memory::dims strides =
        transposed ? memory::dims{step, 1, rows} : memory::dims{step, cols, 1};
    return memory::desc({batch, rows, cols}, memory::data_type::bf16, strides);
  };
  return {operand(p.stride_a, p.m, p.k, p.trans_a), operand(p.stride_b, p.k, p.n, p.trans_b)};
}

// kUnimplemented unless oneDNN has a native (not reference) implementation of `pd`.
Status CheckNative(const dnnl::matmul::primitive_desc& pd) {
  const std::string impl = pd.impl_info_str();
  if (impl.rfind("ref", 0) == 0)
    return MakeError(ErrorCode::kUnimplemented,
                     "oneDNN has only its reference bf16 matmul on this CPU (", impl, ")");
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<ProductAdder>> MakeOnednnProductAdder(const Step& step,
                                                             const GemmParams& p) {
  if (p.dtype != bf16 || p.out_dtype != f32 || p.batch != 1)
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "': oneDNN adds bf16 products into f32 only");
  auto [a, b] = Operands(p);
  memory::desc c({1, p.m, p.n}, memory::data_type::f32, memory::format_tag::abc);
  dnnl::primitive_attr attr;
  attr.set_output_scales(0, {DNNL_RUNTIME_F32_VAL});
  dnnl::post_ops ops;
  ops.append_sum(1.0f);
  attr.set_post_ops(ops);
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, OnednnEngine());
    KILN_RETURN_IF_ERROR(CheckNative(pd));
    return std::unique_ptr<ProductAdder>(new OnednnProductAdder(dnnl::matmul(pd), a, b, c));
  } catch (const dnnl::error& e) {
    return MakeError(ErrorCode::kUnimplemented,
                     "oneDNN has no bf16 matmul that adds into f32 on this CPU: ", e.what());
  }
}

Result<std::unique_ptr<StepRunner>> MakeOnednnMatmulStep(const Step& step, const Executable& exe) {
  KILN_ASSIGN_OR_RETURN(GemmParams p, ReadGemmParams(step, exe));
  if (p.dtype != bf16)
    return MakeError(ErrorCode::kUnimplemented, "oneDNN matmul step: bf16 only, got ",
                     DTypeName(p.dtype));
  const auto bf = memory::data_type::bf16;
  auto [a, b] = Operands(p);
  const auto out = p.out_dtype == f32 ? memory::data_type::f32 : bf;
  memory::desc c({p.batch, p.m, p.n}, out, memory::format_tag::abc);
  std::optional<memory::desc> bias;
  if (p.bias) bias = memory::desc({1, 1, p.n}, out, memory::format_tag::abc);
  dnnl::primitive_attr attr;
  if (p.relu || p.gelu_tanh) {
    dnnl::post_ops ops;
    ops.append_eltwise(
        1.f, p.relu ? dnnl::algorithm::eltwise_relu : dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f);
    attr.set_post_ops(ops);
  }
  try {
    dnnl::matmul::primitive_desc pd(
        bias ? dnnl::matmul::desc(a, b, *bias, c) : dnnl::matmul::desc(a, b, c), attr,
        OnednnEngine());
    KILN_RETURN_IF_ERROR(CheckNative(pd));
    return std::unique_ptr<StepRunner>(new OnednnMatmulStep(step, dnnl::matmul(pd), a, b, c, bias));
  } catch (const dnnl::error& e) {
    return MakeError(ErrorCode::kUnimplemented,
                     "oneDNN has no bf16 matmul on this CPU: ", e.what());
  }
}

bool HasNativeBf16Matmul() {
  static const bool native = [] {
    Step step;
    step.kind = Step::Kind::kLibrary;
    step.callee = "gemm";
    for (const char* key : {"m", "n", "k"}) step.attrs.Set(key, int64_t{16});
    for (const char* key : {"batch"}) step.attrs.Set(key, int64_t{1});
    for (const char* key : {"stride_a", "stride_b", "trans_a", "trans_b"})
      step.attrs.Set(key, int64_t{0});
    Executable exe;
    for (int i = 0; i < 3; ++i) {
      BufferDesc b;
      b.type = TensorType{bf16, Shape{16, 16}};
      exe.buffers.push_back(b);
    }
    step.inputs = {0, 1};
    step.outputs = {2};
    return MakeOnednnMatmulStep(step, exe).ok();
  }();
  return native;
}

}  // namespace kiln::cpu
