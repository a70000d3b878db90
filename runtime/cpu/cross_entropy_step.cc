// Library steps "softmax_cross_entropy" and "softmax_cross_entropy_grad": kiln's
// SoftmaxCrossEntropy and SoftmaxCrossEntropyGrad (ir/ops/nn.h) over f32 logits [N, C] and i32 or
// i64 labels [N], each one pass per row (max, then the exponentials and their sum: AVX-512 where
// the CPU has it, runtime/cpu/row_exp.h), rows split over the session's threads. Sums are
// accumulated in double; the loss adds its rows in row order, so the result does not depend on the
// thread count. A label outside [0, C) fails the step, naming the node and the first bad index, as
// the reference kernel does.
//   check_labels: input labels (any shape: the fed labels a Reshape made [N]), attribute
//                 classes: only that check (the CUDA device's cross-entropy kernels trust their
//                 labels; this step runs before them); indices are flat.
//   softmax_cross_entropy:      inputs logits, labels; output loss f32 [] (the mean over rows)
//                               or f32 [N] (each row's, reduction "none").
//   softmax_cross_entropy_grad: inputs logits, labels, dloss f32 [] or [N]; output dlogits
//                               [N, C] = (softmax(logits) - onehot(labels)) * dloss / N, or
//                               * dloss[n] for row n.
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/row_exp.h"

namespace kiln::cpu {
namespace {

int64_t Label(const void* labels, DType dtype, int64_t n) {
  return dtype == i32 ? static_cast<const int32_t*>(labels)[n]
                      : static_cast<const int64_t*>(labels)[n];
}

// OK when every label lies in [0, classes); otherwise the error of the first that does not, naming
// the step's node.
Status CheckLabels(const Step& step, const void* labels, DType dtype, int64_t rows,
                   int64_t classes) {
  for (int64_t n = 0; n < rows; ++n) {
    const int64_t label = Label(labels, dtype, n);
    if (label < 0 || label >= classes)
      return step.node.MakeNodeError(ErrorCode::kInvalidArgument, "label ", label, " at index ", n,
                                     " is out of range [0, ", classes, ")");
  }
  return OkStatus();
}

class CheckLabelsStep : public StepRunner {
 public:
  CheckLabelsStep(const Step& step, int64_t rows, int64_t classes, DType dtype)
      : step_(step), rows_(rows), classes_(classes), dtype_(dtype) {}
  Status Run(StepEnv& env) const override {
    return CheckLabels(step_, env.data[step_.inputs[0]], dtype_, rows_, classes_);
  }

 private:
  const Step& step_;
  int64_t rows_, classes_;
  DType dtype_;
};

class CrossEntropyStep : public StepRunner {
 public:
  CrossEntropyStep(const Step& step, bool grad, bool per_row, int64_t rows, int64_t cols,
                   DType labels)
      : step_(step), grad_(grad), per_row_(per_row), rows_(rows), cols_(cols), labels_(labels) {}

  Status Run(StepEnv& env) const override {
    const float* logits = static_cast<const float*>(env.data[step_.inputs[0]]);
    const void* labels = env.data[step_.inputs[1]];
    KILN_RETURN_IF_ERROR(CheckLabels(step_, labels, labels_, rows_, cols_));  // before any write
    if (grad_) {
      const float* dloss = static_cast<const float*>(env.data[step_.inputs[2]]);
      float* out = static_cast<float*>(env.data[step_.outputs[0]]);
      const double mean_scale = static_cast<double>(dloss[0]) / static_cast<double>(rows_);
#pragma omp parallel for num_threads(env.threads) schedule(static)
      for (int64_t n = 0; n < rows_; ++n) {
        const double scale = per_row_ ? static_cast<double>(dloss[n]) : mean_scale;
        const float* x = logits + n * cols_;
        float* d = out + n * cols_;
        const float max = RowMax(x, cols_);
        const double sum = SumExp(x, cols_, max, d);
        const float mul = static_cast<float>(scale / sum);
        for (int64_t c = 0; c < cols_; ++c) d[c] *= mul;
        d[Label(labels, n)] -= static_cast<float>(scale);
      }
      return OkStatus();
    }
    std::vector<double> row_loss(rows_);
    float* out = static_cast<float*>(env.data[step_.outputs[0]]);
#pragma omp parallel for num_threads(env.threads) schedule(static)
    for (int64_t n = 0; n < rows_; ++n) {
      const float* x = logits + n * cols_;
      const float max = RowMax(x, cols_);
      const double sum = SumExp(x, cols_, max, nullptr);
      row_loss[n] = max + std::log(sum) - x[Label(labels, n)];
      if (per_row_) out[n] = static_cast<float>(row_loss[n]);
    }
    if (per_row_) return OkStatus();
    double total = 0;
    for (double l : row_loss) total += l;
    *static_cast<float*>(env.data[step_.outputs[0]]) =
        static_cast<float>(total / static_cast<double>(rows_));  // no rows: NaN, as PyTorch
    return OkStatus();
  }

 private:
  int64_t Label(const void* labels, int64_t n) const { return cpu::Label(labels, labels_, n); }

  const Step& step_;
  bool grad_;
  bool per_row_;  // the loss of each row (reduction "none"); its gradient takes dloss [N]
  int64_t rows_, cols_;
  DType labels_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeCheckLabelsStep(const Step& step, const Executable& exe) {
  if (step.inputs.size() != 1 || !step.outputs.empty())
    return MakeError(ErrorCode::kInternal, "check_labels takes 1 input and no output");
  const TensorType& labels = exe.buffers[step.inputs[0]].type;
  KILN_ASSIGN_OR_RETURN(int64_t classes, step.attrs.GetInt("classes"));
  if (labels.dtype != i32 && labels.dtype != i64)
    return MakeError(ErrorCode::kInternal, "check_labels: i32/i64 labels, got ", labels.ToString());
  return std::unique_ptr<StepRunner>(
      new CheckLabelsStep(step, labels.shape.NumElements(), classes, labels.dtype));
}

Result<std::unique_ptr<StepRunner>> MakeCrossEntropyStep(const Step& step, const Executable& exe) {
  const bool grad = step.callee == "softmax_cross_entropy_grad";
  if (step.inputs.size() != (grad ? 3u : 2u) || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, step.callee, " takes ", grad ? 3 : 2,
                     " inputs and 1 output");
  const TensorType& logits = exe.buffers[step.inputs[0]].type;
  const TensorType& labels = exe.buffers[step.inputs[1]].type;
  const TensorType& out = exe.buffers[step.outputs[0]].type;
  const TensorType scalar{f32, Shape{}}, per_row{f32, labels.shape};
  const TensorType& loss = grad ? exe.buffers[step.inputs[2]].type : out;
  const bool ok = logits.dtype == f32 && logits.shape.rank() == 2 &&
                  (labels.dtype == i32 || labels.dtype == i64) &&
                  labels.shape == Shape{logits.shape[0]} && (!grad || out == logits) &&
                  (loss == scalar || loss == per_row);
  if (!ok)
    return MakeError(ErrorCode::kInternal, step.callee, ": f32 logits [N, C], i32/i64 labels [N]",
                     grad ? " and an f32 dloss [] or [N]" : " and an f32 loss [] or [N]", ", got ",
                     logits.ToString(), " and ", labels.ToString());
  return std::unique_ptr<StepRunner>(new CrossEntropyStep(
      step, grad, loss == per_row, logits.shape[0], logits.shape[1], labels.dtype));
}

}  // namespace kiln::cpu
