// ONNX losses, composed of kiln ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (LogSoftmax over axis 1, then the NLL loss; kiln's SoftmaxCrossEntropy op for the plain mean
// over [N, C] logits). The picked class is selected with a one-hot mask
// over the class axis (C must be known at import); a target equal to ignore_index contributes
// neither loss nor weight. Reductions: "none", "sum", "mean" (the sum divided by the total weight
// of the counted targets, as ONNX).
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"

namespace kiln::onnx_import {
namespace {

// The loss of log-probabilities `logp` [N, C, ...] against `target` [N, ...] (inputs 1 and 2 of
// the node are target and the optional weight).
Result<Value> NllLoss(OnnxNode& n, Value logp) {
  KILN_ASSIGN_OR_RETURN(Value target, n.input(1));
  KILN_ASSIGN_OR_RETURN(std::string reduction, n.String("reduction", "mean"));
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return n.Fail("reduction must be none, sum or mean, got '", reduction, "'");
  if (logp.rank() < 2) return n.Fail("needs input of rank >= 2, got ", logp.shape().ToString());
  int64_t classes = logp.shape()[1];
  if (classes < 0) return n.NotKnownYet("needs the number of classes (dim 1) known at import");
  GraphBuilder& g = n.g();
  Value ignored;
  if (n.has_attr("ignore_index")) {
    KILN_ASSIGN_OR_RETURN(int64_t ignore, n.Int("ignore_index", 0));
    ignored = Equal(target, g.Scalar(static_cast<double>(ignore), target.dtype()));
    target = Select(ignored, ZerosLike(target), target);
  }
  Value mask = OneHot(target, classes, logp.dtype(), 1.0, 0.0, /*axis=*/1);
  Value loss = Neg(Sum(Mul(mask, logp), {1}));
  Value weight;
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Value w, n.input(2));
    weight = Gather(w, target);
  }
  if (ignored.valid()) {
    Value zero = g.Scalar(0, logp.dtype());
    weight = Select(ignored, zero, weight.valid() ? weight : OnesLike(loss));
  }
  if (weight.valid()) loss = Mul(loss, weight);
  if (reduction == "none") return loss;
  if (reduction == "sum") return Sum(loss);
  return weight.valid() ? Div(Sum(loss), Sum(weight)) : Mean(loss);
}

Status ConvertNll(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value loss, NllLoss(n, x));
  n.SetOutput(0, loss);
  return OkStatus();
}

Status ConvertSoftmaxCrossEntropy(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  // The common case, PyTorch's F.cross_entropy(logits [N, C], labels [N]), is kiln's own op: one
  // pass per row forward and one backward, where the composition takes a one-hot mask, a
  // LogSoftmax and a reduction (and their gradients). A label outside [0, C) is then a run-time
  // error naming the node, as the specification requires labels in range.
  KILN_ASSIGN_OR_RETURN(Value target, n.input(1));
  KILN_ASSIGN_OR_RETURN(std::string reduction, n.String("reduction", "mean"));
  if (x.rank() == 2 && target.rank() == 1 && !n.has_input(2) && !n.has_attr("ignore_index") &&
      reduction == "mean" && !n.wants_output(1) && IsFloat(x.dtype())) {
    n.SetOutput(0, SoftmaxCrossEntropy(x, target));
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
