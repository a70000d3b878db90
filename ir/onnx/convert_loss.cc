// ONNX losses, composed of kiln ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (LogSoftmax over axis 1, then the NLL loss; over [N, C] logits, kiln's SoftmaxCrossEntropy op,
// its mean or its row losses weighted and reduced). The picked class is selected with a one-hot
// mask over the class axis (C must be known at import); a target equal to ignore_index contributes
// neither loss nor weight. Reductions: "none", "sum", "mean" (the sum divided by the total weight
// of the counted targets, as ONNX).
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"

namespace kiln::onnx_import {
namespace {

// A loss node's targets: `target` [N, ...] with each target equal to ignore_index (when the node
// has one) replaced by 0, and `ignored` marking those (invalid without ignore_index).
struct LossTargets {
  Value target, ignored;
};

Result<LossTargets> ReadTargets(OnnxNode& n) {
  LossTargets t;
  KILN_ASSIGN_OR_RETURN(t.target, n.input(1));
  if (n.has_attr("ignore_index")) {
    KILN_ASSIGN_OR_RETURN(int64_t ignore, n.Int("ignore_index", 0));
    t.ignored = Equal(t.target, n.g().Scalar(static_cast<double>(ignore), t.target.dtype()));
    t.target = Select(t.ignored, ZerosLike(t.target), t.target);
  }
  return t;
}

Result<std::string> ReadReduction(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(std::string reduction, n.String("reduction", "mean"));
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return n.Fail("reduction must be none, sum or mean, got '", reduction, "'");
  return reduction;
}

// Each target's loss `loss` [N, ...] weighted (input 2, the optional class weights; an ignored
// target weighs 0) and reduced.
Result<Value> WeightAndReduce(OnnxNode& n, Value loss, const LossTargets& t,
                              const std::string& reduction) {
  Value weight;
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Value w, n.input(2));
    weight = Gather(w, t.target);
  }
  if (t.ignored.valid()) {
    Value zero = n.g().Scalar(0, loss.dtype());
    weight = Select(t.ignored, zero, weight.valid() ? weight : OnesLike(loss));
  }
  if (weight.valid()) loss = Mul(loss, weight);
  if (reduction == "none") return loss;
  if (reduction == "sum") return Sum(loss);
  return weight.valid() ? Div(Sum(loss), Sum(weight)) : Mean(loss);
}

// The loss of log-probabilities `logp` [N, C, ...] against the node's targets.
Result<Value> NllLoss(OnnxNode& n, Value logp) {
  KILN_ASSIGN_OR_RETURN(std::string reduction, ReadReduction(n));
  if (logp.rank() < 2) return n.Fail("needs input of rank >= 2, got ", logp.shape().ToString());
  int64_t classes = logp.shape()[1];
  if (classes < 0) return n.NotKnownYet("needs the number of classes (dim 1) known at import");
  KILN_ASSIGN_OR_RETURN(LossTargets t, ReadTargets(n));
  Value mask = OneHot(t.target, classes, logp.dtype(), 1.0, 0.0, /*axis=*/1);
  return WeightAndReduce(n, Neg(Sum(Mul(mask, logp), {1})), t, reduction);
}

Status ConvertNll(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value loss, NllLoss(n, x));
  n.SetOutput(0, loss);
  return OkStatus();
}

Status ConvertSoftmaxCrossEntropy(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  // Logits [N, C] (PyTorch's F.cross_entropy, which always exports an ignore_index) use kiln's
  // own op: one pass per row forward and one backward, where the composition takes a one-hot
  // mask, a LogSoftmax and a reduction (and their gradients). Weights, ignored targets and the
  // reductions other than a plain mean are composed around its row losses. A label outside
  // [0, C) (and not ignored) is then a run-time error naming the node, as the specification
  // requires labels in range.
  KILN_ASSIGN_OR_RETURN(Value target, n.input(1));
  KILN_ASSIGN_OR_RETURN(std::string reduction, ReadReduction(n));
  if (x.rank() == 2 && target.rank() == 1 && !n.wants_output(1) && IsFloat(x.dtype())) {
    if (!n.has_input(2) && !n.has_attr("ignore_index") && reduction == "mean") {
      n.SetOutput(0, SoftmaxCrossEntropy(x, target));
      return OkStatus();
    }
    KILN_ASSIGN_OR_RETURN(LossTargets t, ReadTargets(n));
    KILN_ASSIGN_OR_RETURN(
        Value loss, WeightAndReduce(n, SoftmaxCrossEntropy(x, t.target, "none"), t, reduction));
    n.SetOutput(0, loss);
    return OkStatus();
  }
  Value logp = LogSoftmax(x, 1);
  KILN_ASSIGN_OR_RETURN(Value loss, NllLoss(n, logp));
  n.SetOutput(0, loss);
  n.SetOutput(1, logp);
  return OkStatus();
}

}  // namespace

void AddLossConverters(ConverterTable& t) {
  t["NegativeLogLikelihoodLoss"] = ConvertNll;
  t["SoftmaxCrossEntropyLoss"] = ConvertSoftmaxCrossEntropy;
}

}  // namespace kiln::onnx_import
