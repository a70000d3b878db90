// ONNX activations (LeakyRelu, Elu, Selu, Celu, HardSigmoid, HardSwish, ThresholdedRelu, PRelu,
// Shrink) and Softmax, LogSoftmax, Hardmax, composed of kiln math ops where kiln has no single op.
// Before opset 13 the Softmax family works on the input flattened to 2-D at `axis` (default 1).
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/array_like.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"

namespace kiln::onnx_import {
namespace {

Value Zero(OnnxNode& n, Value like) { return n.g().Scalar(0, like.dtype()); }

Status ConvertActivation(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  const std::string& op = n.op_type();
  Value y;
  if (op == "LeakyRelu") {
    KILN_ASSIGN_OR_RETURN(double alpha, n.Float("alpha", 0.01));
    y = LeakyRelu(x, alpha);
  } else if (op == "Elu") {
    KILN_ASSIGN_OR_RETURN(double alpha, n.Float("alpha", 1.0));
    y = Elu(x, alpha);
  } else if (op == "Selu") {
    KILN_ASSIGN_OR_RETURN(double alpha, n.Float("alpha", 1.67326319217681884765625));
    KILN_ASSIGN_OR_RETURN(double gamma, n.Float("gamma", 1.05070102214813232421875));
    y = Select(Greater(x, Zero(n, x)), x, (Exp(x) - 1.0) * alpha) * gamma;
  } else if (op == "Celu") {
    KILN_ASSIGN_OR_RETURN(double alpha, n.Float("alpha", 1.0));
    y = Relu(x) + Minimum(Zero(n, x), (Exp(x / alpha) - 1.0) * alpha);
  } else if (op == "HardSigmoid") {
    KILN_ASSIGN_OR_RETURN(double alpha, n.Float("alpha", 0.2));
    KILN_ASSIGN_OR_RETURN(double beta, n.Float("beta", 0.5));
    y = Clip(x * alpha + beta, 0.0, 1.0);
  } else if (op == "HardSwish") {
    y = x * Clip(x * (1.0 / 6.0) + 0.5, 0.0, 1.0);
  } else if (op == "ThresholdedRelu") {
    KILN_ASSIGN_OR_RETURN(double alpha, n.Float("alpha", 1.0));
    y = Select(Greater(x, n.g().Scalar(alpha, x.dtype())), x, ZerosLike(x));
  } else if (op == "Shrink") {
    KILN_ASSIGN_OR_RETURN(double bias, n.Float("bias", 0.0));
    KILN_ASSIGN_OR_RETURN(double lambd, n.Float("lambd", 0.5));
    Value lo = n.g().Scalar(-lambd, x.dtype()), hi = n.g().Scalar(lambd, x.dtype());
    Value b = n.g().Scalar(bias, x.dtype());
    y = Select(Less(x, lo), Add(x, b), Select(Greater(x, hi), Sub(x, b), ZerosLike(x)));
  } else if (op == "PRelu") {
    KILN_ASSIGN_OR_RETURN(Value slope, n.input(1));
    y = Select(Less(x, Zero(n, x)), Mul(x, slope), x);
  }
  n.SetOutput(0, y);
  return OkStatus();
}

// Softmax, LogSoftmax, Hardmax along one axis of a tensor.
Result<Value> SoftmaxAlong(OnnxNode& n, Value x, int axis) {
  const std::string& op = n.op_type();
  if (!x.valid() || axis >= x.rank()) return n.Fail("cannot apply ", op, " to this input");
  if (op == "Softmax") return Softmax(x, axis);
  if (op == "LogSoftmax") return LogSoftmax(x, axis);
  int64_t depth = x.shape()[axis];
  if (depth < 0) return n.NotKnownYet("Hardmax needs the size of its axis known at import");
  return OneHot(ArgMax(x, axis, /*keepdims=*/false), depth, x.dtype(), 1.0, 0.0, axis);
}

Status ConvertSoftmax(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  int rank = x.rank();
  KILN_ASSIGN_OR_RETURN(int64_t axis_attr, n.Int("axis", n.opset() >= 13 ? -1 : 1));
  if (rank == 0) return n.Fail("needs an input of rank >= 1");
  KILN_ASSIGN_OR_RETURN(int axis, Axis(n, axis_attr, rank));
  Value y;
  if (n.opset() >= 13 || axis == rank - 1) {
    KILN_ASSIGN_OR_RETURN(y, SoftmaxAlong(n, x, axis));
  } else {
    // Older opsets: over all of dims [axis, rank) at once.
    KILN_ASSIGN_OR_RETURN(Value flat, SoftmaxAlong(n, Flatten(x, axis), 1));
    y = ReshapeLike(flat, x);
  }
  n.SetOutput(0, y);
  return OkStatus();
}

}  // namespace

void AddActivationConverters(ConverterTable& t) {
  for (const char* op : {"LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish",
                         "ThresholdedRelu", "Shrink", "PRelu"})
    t[op] = ConvertActivation;
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) t[op] = ConvertSoftmax;
}

}  // namespace kiln::onnx_import
