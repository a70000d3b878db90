// Library steps "batch_norm" and "batch_norm_grad": kiln's BatchNorm and BatchNormGrad
// (ir/ops/nn.h) in f32 with oneDNN's batch normalization on the dense layout (NC, NCW, NCHW or
// NCDHW) or the data buffers' blocked layout (runtime/cpu/layouts.h), the primitives created once
// at load.
// batch_norm: inputs x, scale, bias, mean, var; outputs y, batch_mean, batch_var. Training mode
// computes the batch statistics (biased variance, as kiln's op) into outputs 1 and 2; inference
// mode normalizes with the given mean/var and passes them through. Attributes: epsilon, training.
// batch_norm_grad: inputs dy, x, scale, mean, var (the batch statistics); outputs dx, dscale,
// dbias: oneDNN's training-mode backward pass (two sweeps over x and dy). Attribute: epsilon.
#include <omp.h>

#include <cstring>
#include <vector>

#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/onednn.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// Per-channel operands of a bf16 batch_norm step: oneDNN takes them in f32, so they go through f32
// scratch (scale, bias and given statistics widened before, batch statistics rounded after).
struct Bf16Stats {
  mutable std::vector<float> scratch[6];  // by operand: in 1-4, out 1-2
};

class BatchNormStep : public StepRunner {
 public:
  BatchNormStep(const Step& step, dnnl::batch_normalization_forward primitive, memory::desc data,
                memory::desc stats, bool training, bool bf16)
      : step_(step),
        primitive_(std::move(primitive)),
        data_(std::move(data)),
        stats_(std::move(stats)),
        training_(training),
        bf16_(bf16) {
    if (bf16_)
      for (std::vector<float>& v : bf16_stats_.scratch) v.resize(stats_.get_size() / sizeof(float));
  }

  Status Run(StepEnv& env) const override {
    omp_set_num_threads(env.threads);
    const std::vector<int>& in = step_.inputs;
    const std::vector<int>& out = step_.outputs;
    const int64_t channels = static_cast<int64_t>(stats_.get_size() / sizeof(float));
    // Operand k of {in 1-4, out 1-2}: its f32 memory (the buffer, or its scratch for bf16).
    auto stats = [&](int k) {
      const int buffer = k < 4 ? in[k + 1] : out[k - 3];
      void* data = bf16_ ? bf16_stats_.scratch[k].data() : env.data[buffer];
      if (bf16_ && k < 4) {
        const auto* bits = static_cast<const uint16_t*>(env.data[buffer]);
        for (int64_t c = 0; c < channels; ++c) bf16_stats_.scratch[k][c] = BFloat16ToFloat(bits[c]);
      }
      return memory(stats_, OnednnEngine(), data);
    };
    try {
      dnnl::stream stream(OnednnEngine());
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, memory(data_, OnednnEngine(), env.data[in[0]])},
          {DNNL_ARG_DST, memory(data_, OnednnEngine(), env.data[out[0]])},
          {DNNL_ARG_SCALE, stats(0)},
          {DNNL_ARG_SHIFT, stats(1)},
          {DNNL_ARG_MEAN, training_ ? stats(4) : stats(2)},
          {DNNL_ARG_VARIANCE, training_ ? stats(5) : stats(3)}};
      primitive_.execute(stream, args);
      stream.wait();
    } catch (const dnnl::error& e) {
      return step_.node.MakeNodeError(ErrorCode::kInternal,
                                      "oneDNN batch normalization failed: ", e.what());
    }
    const size_t bytes = env.executable->buffers[out[1]].bytes();
    for (int k : {1, 2}) {
      if (!training_)  // outputs 1 and 2 are the given statistics
        std::memcpy(env.data[out[k]], env.data[in[k + 2]], bytes);
      else if (bf16_)
        for (int64_t c = 0; c < channels; ++c)
          static_cast<uint16_t*>(env.data[out[k]])[c] =
              FloatToBFloat16(bf16_stats_.scratch[k + 3][c]);
    }
    return OkStatus();
  }

 private:
  const Step& step_;
  dnnl::batch_normalization_forward primitive_;
  memory::desc data_, stats_;
  bool training_, bf16_;
  Bf16Stats bf16_stats_;
};

}  // namespace

namespace {

// The plain-layout descriptors of a step over x [N, C, ...] (rank 2-5) and its [C] statistics,
// after checking that `data` buffers have x's shape and `stats` buffers are [C], all f32.
struct BatchNormDescs {
  memory::desc data, stats;
};

Result<BatchNormDescs> CheckedDescs(const char* callee, const Executable& exe, const Shape& xs,
                                    const std::vector<int>& data, const std::vector<int>& stats,
                                    DType dtype = f32) {
  static const Tag kTags[] = {Tag::undef, Tag::undef, Tag::nc, Tag::ncw, Tag::nchw, Tag::ncdhw};
  if (xs.rank() < 2 || xs.rank() > 5)
    return MakeError(ErrorCode::kInternal, callee, ": x has rank ", xs.rank(), "; needs 2-5");
  for (int id : data)
    if (!(exe.buffers[id].type == TensorType{dtype, xs}))
      return MakeError(ErrorCode::kInternal, callee, ": every operand shaped like x must be ",
                       DTypeName(dtype), xs.ToString(), ", got ", exe.buffers[id].type.ToString());
  for (int id : stats)
    if (!(exe.buffers[id].type == TensorType{dtype, Shape{xs[1]}}))
      return MakeError(ErrorCode::kInternal, callee, ": every per-channel operand must be ",
                       DTypeName(dtype), "[", xs[1], "], got ", exe.buffers[id].type.ToString());
  // The data operands share one layout (checked at load: runtime/cpu/layouts.h).
  const memory::data_type type = OnednnType(dtype);
  return BatchNormDescs{
      BufferMemoryDesc(exe.buffers[data[0]], OnednnDims(xs), type, kTags[xs.rank()]),
      memory::desc({xs[1]}, memory::data_type::f32, Tag::x)};
}

dnnl::normalization_flags ScaleShift() {
  return dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
}

dnnl::batch_normalization_forward::primitive_desc ForwardDesc(const memory::desc& data,
                                                              double epsilon, bool training) {
  auto flags = ScaleShift();
  if (!training) flags = flags | dnnl::normalization_flags::use_global_stats;
  return dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(
          training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, data,
          static_cast<float>(epsilon), flags),
      OnednnEngine());
}

class BatchNormGradStep : public StepRunner {
 public:
  BatchNormGradStep(const Step& step, dnnl::batch_normalization_backward primitive,
                    BatchNormDescs descs)
      : step_(step), primitive_(std::move(primitive)), descs_(std::move(descs)) {}

  Status Run(StepEnv& env) const override {
    omp_set_num_threads(env.threads);
    const std::vector<int>& in = step_.inputs;
    const std::vector<int>& out = step_.outputs;
    auto data = [&](int buffer) { return memory(descs_.data, OnednnEngine(), env.data[buffer]); };
    auto stats = [&](int buffer) { return memory(descs_.stats, OnednnEngine(), env.data[buffer]); };
    try {
      dnnl::stream stream(OnednnEngine());
      primitive_.execute(stream, {{DNNL_ARG_DIFF_DST, data(in[0])},
                                  {DNNL_ARG_SRC, data(in[1])},
                                  {DNNL_ARG_SCALE, stats(in[2])},
                                  // oneDNN 2.6 refuses (invalid_arguments) a use_shift backward
                                  // pass without a shift, which the math does not read.
                                  {DNNL_ARG_SHIFT, stats(in[2])},
                                  {DNNL_ARG_MEAN, stats(in[3])},
                                  {DNNL_ARG_VARIANCE, stats(in[4])},
                                  {DNNL_ARG_DIFF_SRC, data(out[0])},
                                  {DNNL_ARG_DIFF_SCALE, stats(out[1])},
                                  {DNNL_ARG_DIFF_SHIFT, stats(out[2])}});
      stream.wait();
    } catch (const dnnl::error& e) {
      return step_.node.MakeNodeError(ErrorCode::kInternal,
                                      "oneDNN batch normalization backward failed: ", e.what());
    }
    return OkStatus();
  }

 private:
  const Step& step_;
  dnnl::batch_normalization_backward primitive_;
  BatchNormDescs descs_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeBatchNormStep(const Step& step, const Executable& exe) {
  if (step.inputs.size() != 5 || step.outputs.size() != 3)
    return MakeError(ErrorCode::kInternal, "batch_norm takes 5 inputs and 3 outputs");
  KILN_ASSIGN_OR_RETURN(double epsilon, step.attrs.GetFloat("epsilon"));
  KILN_ASSIGN_OR_RETURN(bool training, step.attrs.GetBool("training"));
  const Shape& xs = exe.buffers[step.inputs[0]].type.shape;
  const DType dtype = exe.buffers[step.inputs[0]].type.dtype;
  const bool bf16_data = dtype == bf16;
  const std::vector<int>& in = step.inputs;
  const std::vector<int>& out = step.outputs;
  // 16-bit: natively only bf16 throughout; f16, or bf16 data with other statistics, widened.
  if (dtype != f32)
    for (const std::vector<int>* ids : {&in, &out})
      for (int id : *ids)
        if (dtype != bf16 || exe.buffers[id].type.dtype != bf16)
          return MakeError(ErrorCode::kUnimplemented, "batch_norm: no native ",
                           DTypeName(exe.buffers[id].type.dtype), " code");
  KILN_ASSIGN_OR_RETURN(BatchNormDescs descs,
                        CheckedDescs("batch_norm", exe, xs, {in[0], out[0]},
                                     {in[1], in[2], in[3], in[4], out[1], out[2]}, dtype));
  try {
    auto pd = ForwardDesc(descs.data, epsilon, training);
    // bf16 only where oneDNN has fast code for it (its blocked layouts on AVX-512 BF16); else
    // kUnimplemented, and the caller runs the f32 step on widened copies.
    const std::string impl = pd.impl_info_str();
    if (bf16_data && impl.find("jit") == std::string::npos)
      return MakeError(ErrorCode::kUnimplemented, "batch_norm: no fast bf16 code here (", impl,
                       ")");
    return std::unique_ptr<StepRunner>(new BatchNormStep(
        step, dnnl::batch_normalization_forward(pd), descs.data, descs.stats, training, bf16_data));
  } catch (const dnnl::error& e) {
    return MakeError(bf16_data ? ErrorCode::kUnimplemented : ErrorCode::kInternal, "batch_norm ",
                     xs.ToString(), ": oneDNN refused it: ", e.what());
  }
}

Result<std::unique_ptr<StepRunner>> MakeBatchNormGradStep(const Step& step, const Executable& exe) {
  if (step.inputs.size() != 5 || step.outputs.size() != 3)
    return MakeError(ErrorCode::kInternal, "batch_norm_grad takes 5 inputs and 3 outputs");
  KILN_ASSIGN_OR_RETURN(double epsilon, step.attrs.GetFloat("epsilon"));
  const Shape& xs = exe.buffers[step.inputs[1]].type.shape;
  const std::vector<int>& in = step.inputs;
  const std::vector<int>& out = step.outputs;
  KILN_ASSIGN_OR_RETURN(BatchNormDescs descs,
                        CheckedDescs("batch_norm_grad", exe, xs, {in[0], in[1], out[0]},
                                     {in[2], in[3], in[4], out[1], out[2]}));
  try {
    dnnl::batch_normalization_backward::primitive_desc pd(
        dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, descs.data, descs.data,
                                                 static_cast<float>(epsilon), ScaleShift()),
        OnednnEngine(), ForwardDesc(descs.data, epsilon, /*training=*/true));
    return std::unique_ptr<StepRunner>(
        new BatchNormGradStep(step, dnnl::batch_normalization_backward(pd), std::move(descs)));
  } catch (const dnnl::error& e) {
    return MakeError(ErrorCode::kInternal, "batch_norm_grad ", xs.ToString(),
                     ": oneDNN refused it: ", e.what());
  }
}

}  // namespace kiln::cpu
