// Library steps "max_pool2d", "avg_pool2d", "max_pool2d_grad", "avg_pool2d_grad": oneDNN pooling
// on NCHW buffers or buffers in one blocked layout (runtime/cpu/layouts.h), f32 or bf16 (bf16 where
// oneDNN has it for this CPU; elsewhere the caller widens to f32, library_step.cc). Primitives are
// created once, at load. Attributes, written by the compiler (compiler/lower.cc) so that oneDNN's
// geometry gives kiln's output size: kernel [kh, kw], strides [sh, sw], pads [top, left, bottom,
// right] with bottom and right as oneDNN needs them (ceil mode's extra rows included, never
// negative); avg_* also include_pad (0/1: divide by the whole kernel, or by the real elements of
// the window). Inputs and outputs as the ops: max_pool2d/avg_pool2d x -> y; max_pool2d_grad (x, dy)
// -> dx, which reruns the forward pass on x for the workspace (the argmax) that oneDNN's backward
// pass reads; avg_pool2d_grad (dy, x_like) -> dx, x_like unread. Gradients of ties go to the
// window's first largest element, as in the reference. NaN: oneDNN's max pooling skips NaNs, where
// kiln's (like PyTorch's) propagates them (a NaN is the window's maximum and takes its gradient).
// The max steps therefore scan x first (one more read of it, about as fast as the pooling) and run
// the node's reference kernel instead when x holds a NaN (on dense copies of blocked operands), so
// a NaN is never hidden from
// --check-numerics or the user.
#include <omp.h>

#include <dnnl.hpp>
#include <optional>

#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/onednn.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;

enum class PoolKind { kMax, kAvg, kMaxGrad, kAvgGrad };

bool HasNaN(const void* data, int64_t n, DType dtype, int threads) {
  bool found = false;
  if (dtype == f32) {
    const auto* x = static_cast<const float*>(data);
#pragma omp parallel for num_threads(threads) reduction(|| : found) schedule(static)
    for (int64_t i = 0; i < n; ++i) found = found || x[i] != x[i];
  } else {  // bf16: all exponent bits set and a nonzero mantissa
    const auto* x = static_cast<const uint16_t*>(data);
#pragma omp parallel for num_threads(threads) reduction(|| : found) schedule(static)
    for (int64_t i = 0; i < n; ++i) found = found || (x[i] & 0x7fff) > 0x7f80;
  }
  return found;
}

class PoolStep : public StepRunner {
 public:
  PoolStep(const Step& step, PoolKind kind, dnnl::primitive forward,
           std::optional<dnnl::primitive> backward, memory::desc x, memory::desc y,
           memory workspace, memory y_scratch, std::unique_ptr<StepRunner> nan_fallback)
      : step_(step),
        kind_(kind),
        forward_(std::move(forward)),
        backward_(std::move(backward)),
        x_(std::move(x)),
        y_(std::move(y)),
        workspace_(std::move(workspace)),
        y_scratch_(std::move(y_scratch)),
        nan_fallback_(std::move(nan_fallback)) {}

  int64_t kept_bytes() const override {
    int64_t bytes = 0;
    for (const memory* m : {&workspace_, &y_scratch_})
      if (m->get(true)) bytes += static_cast<int64_t>(m->get_desc().get_size());
    return bytes;
  }

  Status Run(StepEnv& env) const override {
    if (nan_fallback_) {
      const BufferDesc& x = env.executable->buffers[step_.inputs[0]];
      if (HasNaN(env.data[step_.inputs[0]], x.type.shape.NumElements(), x.type.dtype, env.threads))
        return nan_fallback_->Run(env);
    }
    omp_set_num_threads(env.threads);
    const dnnl::engine& engine = OnednnEngine();
    try {
      dnnl::stream stream(engine);
      switch (kind_) {
        case PoolKind::kMax:
        case PoolKind::kAvg:
          forward_.execute(stream, {{DNNL_ARG_SRC, Plain(x_, env, step_.inputs[0])},
                                    {DNNL_ARG_DST, Plain(y_, env, step_.outputs[0])}});
          break;
        case PoolKind::kMaxGrad:
          forward_.execute(stream, {{DNNL_ARG_SRC, Plain(x_, env, step_.inputs[0])},
                                    {DNNL_ARG_DST, y_scratch_},
                                    {DNNL_ARG_WORKSPACE, workspace_}});
          backward_->execute(stream, {{DNNL_ARG_DIFF_DST, Plain(y_, env, step_.inputs[1])},
                                      {DNNL_ARG_DIFF_SRC, Plain(x_, env, step_.outputs[0])},
                                      {DNNL_ARG_WORKSPACE, workspace_}});
          break;
        case PoolKind::kAvgGrad:
          backward_->execute(stream, {{DNNL_ARG_DIFF_DST, Plain(y_, env, step_.inputs[0])},
                                      {DNNL_ARG_DIFF_SRC, Plain(x_, env, step_.outputs[0])}});
          break;
      }
      stream.wait();
    } catch (const dnnl::error& e) {
      return MakeError(ErrorCode::kInternal, "oneDNN pooling failed: ", e.what());
    }
    return OkStatus();
  }

 private:
  static memory Plain(const memory::desc& desc, StepEnv& env, int buffer) {
    return memory(desc, OnednnEngine(), env.data[buffer]);
  }

  const Step& step_;
  PoolKind kind_;
  dnnl::primitive forward_;
  std::optional<dnnl::primitive> backward_;
  memory::desc x_, y_;  // x/dx and y/dy
  // max_pool2d_grad's forward results, allocated at load (dnnl's execute takes non-const memory).
  mutable memory workspace_, y_scratch_;
  std::unique_ptr<StepRunner> nan_fallback_;  // max pooling: the reference kernel
};

Result<PoolKind> KindOf(const std::string& callee) {
  if (callee == "max_pool2d") return PoolKind::kMax;
  if (callee == "avg_pool2d") return PoolKind::kAvg;
  if (callee == "max_pool2d_grad") return PoolKind::kMaxGrad;
  if (callee == "avg_pool2d_grad") return PoolKind::kAvgGrad;
  return MakeError(ErrorCode::kInternal, "not a pooling routine: ", callee);
}

}  // namespace

Result<std::unique_ptr<StepRunner>> MakePoolStep(const Step& step, const Executable& exe) {
  KILN_ASSIGN_OR_RETURN(PoolKind kind, KindOf(step.callee));
  const bool max = kind == PoolKind::kMax || kind == PoolKind::kMaxGrad;
  const bool grad = kind == PoolKind::kMaxGrad || kind == PoolKind::kAvgGrad;
  const size_t inputs = grad ? 2 : 1;
  if (step.inputs.size() != inputs || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, step.callee, " takes ", inputs, " inputs and 1 output");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, step.attrs.GetInts("kernel"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, step.attrs.GetInts("strides"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, step.attrs.GetInts("pads"));
  int64_t include_pad = 0;
  if (!max) {
    KILN_ASSIGN_OR_RETURN(include_pad, step.attrs.GetInt("include_pad"));
  }
  if (kernel.size() != 2 || strides.size() != 2 || pads.size() != 4)
    return MakeError(ErrorCode::kInternal, step.callee, ": malformed attributes");
  // x (or dx) and y (or dy) by role.
  const int x_id = kind == PoolKind::kAvgGrad ? step.inputs[1]
                   : grad                     ? step.outputs[0]
                                              : step.inputs[0];
  const int y_id = kind == PoolKind::kMaxGrad   ? step.inputs[1]
                   : kind == PoolKind::kAvgGrad ? step.inputs[0]
                                                : step.outputs[0];
  const TensorType& xt = exe.buffers[x_id].type;
  const TensorType& yt = exe.buffers[y_id].type;
  const DType dtype = xt.dtype;
  if (dtype == f16)
    return MakeError(ErrorCode::kUnimplemented, step.callee, ": no f16 pooling in oneDNN here");
  if ((dtype != f32 && dtype != bf16) || xt.shape.rank() != 4 || yt.dtype != dtype ||
      yt.shape.rank() != 4 ||
      (kind == PoolKind::kMaxGrad &&
       !(exe.buffers[step.inputs[0]].type == exe.buffers[step.outputs[0]].type)))
    return MakeError(ErrorCode::kInternal, step.callee, ": needs f32 or bf16 NCHW operands, got ",
                     xt.ToString(), " and ", yt.ToString());
  const memory::data_type type = OnednnType(dtype);
  // x and y share one layout (checked at load: runtime/cpu/layouts.h); avg_pool2d_grad's x is
  // x_like, whose layout does not matter (it is not read): dx, which is written, has x's type.
  const int x_memory = kind == PoolKind::kAvgGrad ? step.outputs[0] : x_id;
  if (!(exe.buffers[x_memory].type == xt))
    return MakeError(ErrorCode::kInternal, step.callee, ": dx must have x's type ", xt.ToString());
  const memory::desc x =
      BufferMemoryDesc(exe.buffers[x_memory], OnednnDims(xt.shape), type, memory::format_tag::nchw);
  const memory::desc y =
      BufferMemoryDesc(exe.buffers[y_id], OnednnDims(yt.shape), type, memory::format_tag::nchw);
  const memory::dims k = {kernel[0], kernel[1]}, s = {strides[0], strides[1]};
  const memory::dims pl = {pads[0], pads[1]}, pr = {pads[2], pads[3]};
  const auto algo = max           ? dnnl::algorithm::pooling_max
                    : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                  : dnnl::algorithm::pooling_avg_exclude_padding;
  try {
    const auto prop = grad ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    dnnl::pooling_forward::primitive_desc forward(
        dnnl::pooling_forward::desc(prop, algo, x, y, s, k, pl, pr), OnednnEngine());
    const std::string impl = forward.impl_info_str();
    if (dtype == bf16 && impl.rfind("ref", 0) == 0)
      return MakeError(ErrorCode::kUnimplemented,
                       "oneDNN has only its reference bf16 pooling on this CPU (", impl, ")");
    std::optional<dnnl::primitive> backward;
    memory workspace, y_scratch;
    if (grad) {
      dnnl::pooling_backward::primitive_desc pd(
          dnnl::pooling_backward::desc(algo, x, y, s, k, pl, pr), OnednnEngine(), forward);
      backward = dnnl::pooling_backward(pd);
      if (kind == PoolKind::kMaxGrad) {
        workspace = memory(forward.workspace_desc(), OnednnEngine());
        y_scratch = memory(y, OnednnEngine());
      }
    }
    std::unique_ptr<StepRunner> nan_fallback;
    if (max) {
      KILN_ASSIGN_OR_RETURN(nan_fallback, MakeDenseStep(step, exe, MakeReferenceStep));
    }
    return std::unique_ptr<StepRunner>(new PoolStep(step, kind, dnnl::pooling_forward(forward),
                                                    std::move(backward), x, y, std::move(workspace),
                                                    std::move(y_scratch), std::move(nan_fallback)));
  } catch (const dnnl::error& e) {
    return MakeError(dtype == bf16 ? ErrorCode::kUnimplemented : ErrorCode::kInternal, step.callee,
                     " ", xt.ToString(), " -> ", yt.ToString(), ": oneDNN refused it: ", e.what());
  }
}

}  // namespace kiln::cpu
