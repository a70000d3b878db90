// Library step "check_indices": the range check of a Gather's (or GatherGrad's) indices, for the
// CUDA device's kernels, which trust theirs. Input: the indices (i32 or i64, any shape); no
// output; attributes axis and data (the gathered tensor's shape): every index must lie in
// [-n, n) for n = data[axis], as the reference Gather requires; the first that does not fails the
// step naming the node, with the reference kernel's words.
#include "runtime/cpu/library_steps.h"

namespace kiln::cpu {

Status CheckGatherIndices(const Step& step, const void* indices, DType dtype, int64_t count,
                          int64_t axis, const Shape& data) {
  const int64_t n = data[static_cast<int>(axis)];
  for (int64_t k = 0; k < count; ++k) {
    const int64_t v = dtype == i32 ? static_cast<const int32_t*>(indices)[k]
                                   : static_cast<const int64_t*>(indices)[k];
    if (v < -n || v >= n)
      return step.node.MakeNodeError(ErrorCode::kInvalidArgument, "index ", v,
                                     " is out of range for axis ", axis, " of size ", n, " (data ",
                                     data.ToString(), ", indices element ", k, ")");
  }
  return OkStatus();
}

namespace {

class CheckIndicesStep : public StepRunner {
 public:
  CheckIndicesStep(const Step& step, DType dtype, int64_t count, int64_t axis, Shape data)
      : step_(step), dtype_(dtype), count_(count), axis_(axis), data_(std::move(data)) {}

  Status Run(StepEnv& env) const override {
    return CheckGatherIndices(step_, env.data[step_.inputs[0]], dtype_, count_, axis_, data_);
  }

 private:
  const Step& step_;
  DType dtype_;
  int64_t count_, axis_;
  Shape data_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeCheckIndicesStep(const Step& step, const Executable& exe) {
  if (step.inputs.size() != 1 || !step.outputs.empty())
    return MakeError(ErrorCode::kInternal, "check_indices takes 1 input and no output");
  const TensorType& indices = exe.buffers[step.inputs[0]].type;
  KILN_ASSIGN_OR_RETURN(int64_t axis, step.attrs.GetInt("axis"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> data, step.attrs.GetInts("data"));
  if ((indices.dtype != i32 && indices.dtype != i64) || axis < 0 ||
      axis >= static_cast<int64_t>(data.size()))
    return MakeError(ErrorCode::kInternal, "check_indices: i32/i64 indices and an axis of data ",
                     Shape(data).ToString(), ", got ", indices.ToString(), " and axis ", axis);
  return std::unique_ptr<StepRunner>(new CheckIndicesStep(
      step, indices.dtype, indices.shape.NumElements(), axis, Shape(std::move(data))));
}

}  // namespace kiln::cpu
