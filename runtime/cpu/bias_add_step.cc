// Library step "bias_add": kiln's BiasAdd (ir/ops/linalg.h) in f32 or f64: y = x + bias along
// `axis` (attribute; negative counts from the end), one pass over contiguous runs (vectorizable),
// summed in the dtype itself.
#include <vector>

#include "runtime/cpu/library_steps.h"

namespace kiln::cpu {
namespace {

class BiasAddStep : public StepRunner {
 public:
  BiasAddStep(const Step& step, DType dtype, int64_t outer, int64_t channels, int64_t inner)
      : step_(step), dtype_(dtype), outer_(outer), channels_(channels), inner_(inner) {}

  Status Run(StepEnv& env) const override {
    if (dtype_ == f32)
      Add<float>(env);
    else
      Add<double>(env);
    return OkStatus();
  }

 private:
  template <typename T>
  void Add(StepEnv& env) const {
    const T* x = static_cast<const T*>(env.data[step_.inputs[0]]);
    const T* b = static_cast<const T*>(env.data[step_.inputs[1]]);
    T* y = static_cast<T*>(env.data[step_.outputs[0]]);
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t c = 0; c < channels_; ++c) {
        const int64_t base = (o * channels_ + c) * inner_;
        const T bias = b[c];
        for (int64_t i = 0; i < inner_; ++i) y[base + i] = x[base + i] + bias;
      }
  }

  const Step& step_;
  DType dtype_;
  int64_t outer_, channels_, inner_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeBiasAddStep(const Step& step, const Executable& exe) {
  KILN_ASSIGN_OR_RETURN(int64_t axis, step.attrs.GetInt("axis"));
  if (step.inputs.size() != 2 || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, "bias_add: needs x, bias and one output");
  const TensorType& x = exe.buffers[step.inputs[0]].type;
  const int rank = x.shape.rank();
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || (x.dtype != f32 && x.dtype != f64) ||
      !(exe.buffers[step.outputs[0]].type == x) ||
      !(exe.buffers[step.inputs[1]].type == TensorType{x.dtype, Shape{x.shape[axis]}}))
    return MakeError(ErrorCode::kInternal, "bias_add: malformed step for ", x.ToString());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int d = static_cast<int>(axis) + 1; d < rank; ++d) inner *= x.shape[d];
  return std::unique_ptr<StepRunner>(new BiasAddStep(step, x.dtype, outer, x.shape[axis], inner));
}

}  // namespace kiln::cpu
