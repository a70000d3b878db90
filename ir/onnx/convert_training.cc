// ONNX's training optimizers (domain ai.onnx.preview.training, opset 1) as their formulas over
// kiln's ops, every tensor group updated alike (R the learning rate, T the update count, both
// scalars; G_r = norm_coefficient * X + G):
//   Adagrad(R, T, X..., G..., H...) -> X'..., H'...:
//     H' = H + G_r^2;  X' = X - R / (1 + T * decay_factor) * G_r / (sqrt(H') + epsilon)
//   Momentum(R, T, X..., G..., V...) -> X'..., V'...:
//     V' = alpha * V + (T > 0 ? beta : 1) * G_r;
//     X' = X - R * V' ("standard") or X - R * (G_r + alpha * V') ("nesterov")
//   Adam(R, T, X..., G..., V..., H...) -> X'..., V'..., H'...:
//     V' = alpha * V + (1 - alpha) * G_r;  H' = beta * H + (1 - beta) * G_r^2;
//     R' = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
//     X' = (1 - norm_coefficient_post) * (X - R' * V' / (sqrt(H') + epsilon))
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"

namespace kiln::onnx_import {
namespace {

// The node's inputs after R and T as `groups` lists of equal length (X, G, then the states).
Result<std::vector<std::vector<Value>>> Groups(const OnnxNode& n, int groups) {
  const int tensors = n.num_inputs() - 2;
  if (tensors < groups || tensors % groups != 0 || n.num_outputs() > tensors)
    return n.Fail("takes R, T and ", groups, " lists of tensors of one length; got ",
                  n.num_inputs(), " inputs and ", n.num_outputs(), " outputs");
  std::vector<std::vector<Value>> lists(static_cast<size_t>(groups));
  const int each = tensors / groups;
  for (int k = 0; k < groups; ++k)
    for (int i = 0; i < each; ++i) {
      KILN_ASSIGN_OR_RETURN(Value v, n.input(2 + k * each + i));
      lists[static_cast<size_t>(k)].push_back(v);
    }
  return lists;
}

// R and T as scalars of X's dtype.
Result<std::pair<Value, Value>> RateAndCount(const OnnxNode& n, DType dtype) {
  KILN_ASSIGN_OR_RETURN(Value r, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value t, n.input(1));
  auto scalar = [dtype](Value v) {
    if (v.dtype() != dtype) v = Cast(v, dtype);
    return v.rank() == 0 ? v : Reshape(v, {});
  };
  return std::make_pair(scalar(r), scalar(t));
}

// Output `group` * (number of tensors) + i is `values[i]`.
void SetGroup(OnnxNode& n, int group, const std::vector<Value>& values) {
  for (size_t i = 0; i < values.size(); ++i)
    n.SetOutput(group * static_cast<int>(values.size()) + static_cast<int>(i), values[i]);
}

Status ConvertAdagrad(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(auto lists, Groups(n, 3));
  KILN_ASSIGN_OR_RETURN(double decay, n.Float("decay_factor", 0.0));
  KILN_ASSIGN_OR_RETURN(double epsilon, n.Float("epsilon", 1e-6));
  KILN_ASSIGN_OR_RETURN(double norm, n.Float("norm_coefficient", 0.0));
  KILN_ASSIGN_OR_RETURN(auto rt, RateAndCount(n, lists[0][0].dtype()));
  Value rate = rt.first / (rt.second * decay + 1.0);
  std::vector<Value> xs, hs;
  for (size_t i = 0; i < lists[0].size(); ++i) {
    Value x = lists[0][i], g = lists[1][i] + x * norm, h = lists[2][i] + g * g;
    xs.push_back(x - rate * g / (Sqrt(h) + epsilon));
    hs.push_back(h);
  }
  SetGroup(n, 0, xs);
  SetGroup(n, 1, hs);
  return OkStatus();
}

Status ConvertMomentum(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(auto lists, Groups(n, 3));
  for (const char* required : {"alpha", "beta", "norm_coefficient", "mode"})
    if (!n.has_attr(required)) return n.Fail("needs the attribute '", required, "'");
  KILN_ASSIGN_OR_RETURN(double alpha, n.Float("alpha", 0.0));
  KILN_ASSIGN_OR_RETURN(double beta, n.Float("beta", 0.0));
  KILN_ASSIGN_OR_RETURN(double norm, n.Float("norm_coefficient", 0.0));
  KILN_ASSIGN_OR_RETURN(std::string mode, n.String("mode", "standard"));
  if (mode != "standard" && mode != "nesterov")
    return n.Fail("mode is '", mode, "'; expected 'standard' or 'nesterov'");
  KILN_ASSIGN_OR_RETURN(auto rt, RateAndCount(n, lists[0][0].dtype()));
  GraphBuilder& g = n.g();
  Value first = Greater(rt.second, g.Scalar(0, rt.second.dtype()));
  Value beta_t = Select(first, g.Scalar(beta, rt.second.dtype()), g.Scalar(1, rt.second.dtype()));
  std::vector<Value> xs, vs;
  for (size_t i = 0; i < lists[0].size(); ++i) {
    Value x = lists[0][i], grad = lists[1][i] + x * norm;
    Value v = lists[2][i] * alpha + beta_t * grad;
    xs.push_back(mode == "standard" ? x - rt.first * v : x - rt.first * (grad + v * alpha));
    vs.push_back(v);
  }
  SetGroup(n, 0, xs);
  SetGroup(n, 1, vs);
  return OkStatus();
}

Status ConvertAdam(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(auto lists, Groups(n, 4));
  KILN_ASSIGN_OR_RETURN(double alpha, n.Float("alpha", 0.9));
  KILN_ASSIGN_OR_RETURN(double beta, n.Float("beta", 0.999));
  KILN_ASSIGN_OR_RETURN(double epsilon, n.Float("epsilon", 1e-6));
  KILN_ASSIGN_OR_RETURN(double norm, n.Float("norm_coefficient", 0.0));
  KILN_ASSIGN_OR_RETURN(double post, n.Float("norm_coefficient_post", 0.0));
  KILN_ASSIGN_OR_RETURN(auto rt, RateAndCount(n, lists[0][0].dtype()));
  GraphBuilder& g = n.g();
  const DType d = rt.second.dtype();
  Value t = rt.second;
  Value corrected =
      rt.first * Sqrt(1.0 - Pow(g.Scalar(beta, d), t)) / (1.0 - Pow(g.Scalar(alpha, d), t));
  Value rate = Select(Greater(t, g.Scalar(0, d)), corrected, rt.first);
  std::vector<Value> xs, vs, hs;
  for (size_t i = 0; i < lists[0].size(); ++i) {
    Value x = lists[0][i], grad = lists[1][i] + x * norm;
    Value v = lists[2][i] * alpha + grad * (1.0 - alpha);
    Value h = lists[3][i] * beta + grad * grad * (1.0 - beta);
    xs.push_back((x - rate * v / (Sqrt(h) + epsilon)) * (1.0 - post));
    vs.push_back(v);
    hs.push_back(h);
  }
  SetGroup(n, 0, xs);
  SetGroup(n, 1, vs);
  SetGroup(n, 2, hs);
  return OkStatus();
}

}  // namespace

void AddTrainingConverters(ConverterTable& t) {
  t["ai.onnx.preview.training.Adagrad"] = ConvertAdagrad;
  t["ai.onnx.preview.training.Momentum"] = ConvertMomentum;
  t["ai.onnx.preview.training.Adam"] = ConvertAdam;
}

}  // namespace kiln::onnx_import
