// Library step "batch_norm": kiln's BatchNorm (ir/ops/nn.h) in f32 with oneDNN's batch
// normalization on the plain layout (NC, NCW, NCHW or NCDHW), the primitive created once at load.
// Inputs x, scale, bias, mean, var; outputs y, batch_mean, batch_var. Training mode computes the
// batch statistics (biased variance, as kiln's op) into outputs 1 and 2; inference mode normalizes
// with the given mean/var and passes them through. Attributes: epsilon, training.
#include <omp.h>

#include <cstring>

#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/onednn.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

class BatchNormStep : public StepRunner {
 public:
  BatchNormStep(const Step& step, dnnl::batch_normalization_forward primitive, memory::desc data,
                memory::desc stats, bool training)
      : step_(step),
        primitive_(std::move(primitive)),
        data_(std::move(data)),
        stats_(std::move(stats)),
        training_(training) {}

  Status Run(StepEnv& env) const override {
    omp_set_num_threads(env.threads);
    const std::vector<int>& in = step_.inputs;
    const std::vector<int>& out = step_.outputs;
    auto stats = [&](int buffer) { return memory(stats_, OnednnEngine(), env.data[buffer]); };
    try {
      dnnl::stream stream(OnednnEngine());
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, memory(data_, OnednnEngine(), env.data[in[0]])},
          {DNNL_ARG_DST, memory(data_, OnednnEngine(), env.data[out[0]])},
          {DNNL_ARG_SCALE, stats(in[1])},
          {DNNL_ARG_SHIFT, stats(in[2])},
          {DNNL_ARG_MEAN, stats(training_ ? out[1] : in[3])},
          {DNNL_ARG_VARIANCE, stats(training_ ? out[2] : in[4])}};
      primitive_.execute(stream, args);
      stream.wait();
    } catch (const dnnl::error& e) {
      return step_.node.MakeNodeError(ErrorCode::kInternal,
                                      "oneDNN batch normalization failed: ", e.what());
    }
    if (!training_) {  // outputs 1 and 2 are the given statistics
      const size_t bytes = stats_.get_size();
      std::memcpy(env.data[out[1]], env.data[in[3]], bytes);
      std::memcpy(env.data[out[2]], env.data[in[4]], bytes);
    }
    return OkStatus();
  }

 private:
  const Step& step_;
  dnnl::batch_normalization_forward primitive_;
  memory::desc data_, stats_;
  bool training_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeBatchNormStep(const Step& step, const Executable& exe) {
  if (step.inputs.size() != 5 || step.outputs.size() != 3)
    return MakeError(ErrorCode::kInternal, "batch_norm takes 5 inputs and 3 outputs");
  KILN_ASSIGN_OR_RETURN(double epsilon, step.attrs.GetFloat("epsilon"));
  KILN_ASSIGN_OR_RETURN(bool training, step.attrs.GetBool("training"));
  const Shape& xs = exe.buffers[step.inputs[0]].type.shape;
  static const Tag kTags[] = {Tag::undef, Tag::undef, Tag::nc, Tag::ncw, Tag::nchw, Tag::ncdhw};
  if (xs.rank() < 2 || xs.rank() > 5)
    return MakeError(ErrorCode::kInternal, "batch_norm: x has rank ", xs.rank(), "; needs 2-5");
  const int64_t channels = xs[1];
  for (int id : {step.inputs[0], step.outputs[0]})
    if (!(exe.buffers[id].type == TensorType{f32, xs}))
      return MakeError(ErrorCode::kInternal, "batch_norm: x and y must be f32", xs.ToString());
  for (size_t i = 1; i < 5; ++i)
    if (!(exe.buffers[step.inputs[i]].type == TensorType{f32, Shape{channels}}))
      return MakeError(ErrorCode::kInternal, "batch_norm: input ", i, " must be f32[", channels,
                       "]");
  for (size_t i = 1; i < 3; ++i)
    if (!(exe.buffers[step.outputs[i]].type == TensorType{f32, Shape{channels}}))
      return MakeError(ErrorCode::kInternal, "batch_norm: output ", i, " must be f32[", channels,
                       "]");
  try {
    memory::desc data(OnednnDims(xs), memory::data_type::f32, kTags[xs.rank()]);
    memory::desc stats({channels}, memory::data_type::f32, Tag::x);
    auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    if (!training) flags = flags | dnnl::normalization_flags::use_global_stats;
    dnnl::batch_normalization_forward::primitive_desc pd(
        dnnl::batch_normalization_forward::desc(
            training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, data,
            static_cast<float>(epsilon), flags),
        OnednnEngine());
    return std::unique_ptr<StepRunner>(new BatchNormStep(
        step, dnnl::batch_normalization_forward(pd), std::move(data), std::move(stats), training));
  } catch (const dnnl::error& e) {
    return MakeError(ErrorCode::kInternal, "batch_norm ", xs.ToString(),
                     ": oneDNN refused it: ", e.what());
  }
}

}  // namespace kiln::cpu
