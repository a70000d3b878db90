#include "compiler/library_lowering.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/op_registry.h"

namespace kiln::compiler {
namespace {

// oneDNN convolutions (runtime/cpu/onednn_conv_step.cc) by op.
const std::map<std::string, std::string> kConvRoutines = {
    {"Conv2D", "conv2d"},
    {"Conv2DBackpropInput", "conv2d_backprop_input"},
    {"Conv2DBackpropFilter", "conv2d_backprop_filter"}};

// Ops whose output is input 0's bytes under another shape (the "copy" step).
const std::set<std::string> kCopyOps = {"Reshape", "ReshapeLike", "Flatten",
                                        "Squeeze", "Unsqueeze",   "Identity"};
// Assign ops and the "assign" step's mode: replace, add, subtract.
const std::map<std::string, int64_t> kAssignModes = {
    {"Assign", 0}, {"AssignAdd", 1}, {"AssignSub", -1}};

// An Assign* the "assign" step runs: an f32/f64/i32/i64 variable updated by a value of its exact
// type (a training step's counter among them).
bool IsAssignStepUpdate(const Node& node, const StaticInfo& info) {
  if (node.inputs.size() != 2) return false;
  const TensorType& var = info.types.at(node.inputs[0]);
  const DType d = var.dtype;
  return (d == f32 || d == f64 || d == i32 || d == i64) && info.types.at(node.inputs[1]) == var &&
         TensorType{node.output_types[0].dtype, node.output_types[0].shape} == var;
}

// A BiasAdd the "bias_add" step runs: x f32/f64 (bf16/f16 widened), the bias of x's dtype.
bool IsFloatBiasAdd(const Node& node, const StaticInfo& info) {
  const TensorType& x = info.types.at(node.inputs[0]);
  return IsFloat(x.dtype) && info.types.at(node.inputs[1]).dtype == x.dtype;
}

// A BatchNorm or BatchNormGrad the oneDNN steps run: input `x_input` (x) f32 (bf16/f16
// widened) of rank 2-5, the other inputs x's type (dy) or [C] of x's dtype (statistics).
bool IsFloatBatchNorm(const Node& node, size_t x_input, const StaticInfo& info) {
  const TensorType& x = info.types.at(node.inputs[x_input]);
  if (!IsFloat(x.dtype) || x.dtype == f64 || x.shape.rank() < 2 || x.shape.rank() > 5) return false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const TensorType& t = info.types.at(node.inputs[i]);
    if (!(t == x || t == TensorType{x.dtype, Shape{x.shape[1]}})) return false;
  }
  return true;
}

// MatMul as a gemm call when the dtype and the batch broadcasting allow it.
Result<bool> LowerMatMul(const Node& node, const StaticInfo& info, Step& step) {
  const TensorType& a = info.types.at(node.inputs[0]);
  const TensorType& b = info.types.at(node.inputs[1]);
  const TensorType& c = info.types.at(TensorRef{node.name, 0});
  if (c.dtype != f32 && c.dtype != f64 && c.dtype != bf16 && c.dtype != f16) return false;
  KILN_ASSIGN_OR_RETURN(bool ta, node.attrs.GetBool("transpose_a"));
  KILN_ASSIGN_OR_RETURN(bool tb, node.attrs.GetBool("transpose_b"));
  const Shape& sa = a.shape;
  const Shape& sb = b.shape;
  int64_t m = sa.rank() == 1 ? 1 : sa[sa.rank() - (ta ? 1 : 2)];
  int64_t k = sa.rank() == 1 ? sa[0] : sa[sa.rank() - (ta ? 2 : 1)];
  int64_t n = sb.rank() == 1 ? 1 : sb[sb.rank() - (tb ? 2 : 1)];
  if (sa.rank() == 1) ta = false;
  if (sb.rank() == 1) tb = false;
  int64_t batch = c.shape.NumElements() / std::max<int64_t>(1, m * n);
  int64_t batch_a = sa.NumElements() / std::max<int64_t>(1, m * k);
  int64_t batch_b = sb.NumElements() / std::max<int64_t>(1, k * n);
  if ((batch_a != batch && batch_a != 1) || (batch_b != batch && batch_b != 1)) return false;
  int64_t stride_a = batch_a == 1 ? 0 : m * k, stride_b = batch_b == 1 ? 0 : k * n;
  if (batch > 1 && stride_b == 0 && !ta && stride_a == m * k) {  // one tall gemm
    m *= batch;
    batch = 1;
  }
  step.kind = Step::Kind::kLibrary;
  step.callee = "gemm";
  for (auto [key, value] : std::vector<std::pair<const char*, int64_t>>{{"m", m},
                                                                        {"n", n},
                                                                        {"k", k},
                                                                        {"batch", batch},
                                                                        {"stride_a", stride_a},
                                                                        {"stride_b", stride_b},
                                                                        {"trans_a", ta},
                                                                        {"trans_b", tb}})
    step.attrs.Set(key, value);
  return true;
}

void SetLibrary(Step& step, const char* callee, AttrMap attrs = AttrMap()) {
  step.kind = Step::Kind::kLibrary;
  step.callee = callee;
  step.attrs = std::move(attrs);
}

AttrMap WithDefaults(const Node& node) {
  return OpRegistry::Global().Find(node.op)->WithDefaults(node.attrs);
}

bool IsSum(const std::string& op) {
  return op == "Sum" || op == "Mean" || op == "SumLike" || op == "GlobalAvgPool";
}

// Which input dims a Sum, Mean, SumLike or GlobalAvgPool sums away (1) or keeps (0).
std::optional<std::vector<int64_t>> SummedDims(const Node& node, const Shape& x,
                                               const Shape* like) {
  const int rank = x.rank();
  std::vector<int64_t> reduced(rank, 0);
  if (node.op == "GlobalAvgPool") {  // the mean over every dim after N and C
    for (int d = 2; d < rank; ++d) reduced[d] = 1;
    return reduced;
  }
  if (node.op == "SumLike") {
    if (!like || like->rank() > rank) return std::nullopt;
    for (int d = 0; d < rank; ++d) {
      const int l = d - (rank - like->rank());
      reduced[d] = l < 0 || ((*like)[l] == 1 && x[d] != 1);
    }
    return reduced;
  }
  Result<std::vector<int64_t>> axes =
      OpRegistry::Global().Find(node.op)->WithDefaults(node.attrs).GetInts("axes");
  if (!axes.ok()) return std::nullopt;
  if (axes->empty()) reduced.assign(rank, 1);
  for (int64_t a : *axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    reduced[a < 0 ? a + rank : a] = 1;
  }
  return reduced;
}

}  // namespace

std::optional<AttrMap> ReduceSumAttrs(const Node& node, const Shape& x, const Shape* like) {
  if (!IsSum(node.op)) return std::nullopt;
  std::optional<std::vector<int64_t>> reduced = SummedDims(node, x, like);
  if (!reduced) return std::nullopt;
  int64_t count = 1;
  for (int d = 0; d < x.rank(); ++d)
    if ((*reduced)[d]) count *= x[d];
  const bool mean = node.op == "Mean" || node.op == "GlobalAvgPool";
  AttrMap attrs;
  attrs.Set("reduced", *reduced);
  attrs.Set("scale", mean ? 1.0 / static_cast<double>(count) : 1.0);
  return attrs;
}

std::optional<std::string> ConvRoutine(const std::string& op) {
  auto it = kConvRoutines.find(op);
  return it == kConvRoutines.end() ? std::nullopt : std::optional<std::string>(it->second);
}

Result<bool> LowerToLibrary(const Node& node, const StaticInfo& info, Step& step) {
  if (node.op == "MatMul") return LowerMatMul(node, info, step);
  if (auto conv = kConvRoutines.find(node.op); conv != kConvRoutines.end()) {
    const DType y = node.output_types[0].dtype;
    if (y != f32 && y != bf16) return false;
    SetLibrary(step, conv->second.c_str(), WithDefaults(node));
    return true;
  }
  if (node.op == "BatchNorm" || node.op == "BatchNormGrad") {
    if (!IsFloatBatchNorm(node, node.op == "BatchNorm" ? 0 : 1, info)) return false;
    SetLibrary(step, node.op == "BatchNorm" ? "batch_norm" : "batch_norm_grad", WithDefaults(node));
    return true;
  }
  if (node.op == "SoftmaxCrossEntropy" || node.op == "SoftmaxCrossEntropyGrad") {
    if (info.types.at(node.inputs[0]).dtype != f32) return false;
    SetLibrary(step, node.op == "SoftmaxCrossEntropy" ? "softmax_cross_entropy"
                                                      : "softmax_cross_entropy_grad");
    return true;
  }
  if (kCopyOps.count(node.op)) {
    if (node.inputs.empty() || info.types.at(node.inputs[0]).dtype != node.output_types[0].dtype)
      return false;
    SetLibrary(step, "copy");
    return true;
  }
  if (auto assign = kAssignModes.find(node.op); assign != kAssignModes.end()) {
    if (!IsAssignStepUpdate(node, info)) return false;
    AttrMap attrs;
    attrs.Set("mode", assign->second);
    SetLibrary(step, "assign", std::move(attrs));
    return true;
  }
  if (IsSum(node.op) && !node.inputs.empty()) {
    const TensorType& x = info.types.at(node.inputs[0]);
    const Shape* like = node.inputs.size() > 1 ? &info.types.at(node.inputs[1]).shape : nullptr;
    std::optional<AttrMap> attrs = ReduceSumAttrs(node, x.shape, like);
    if (IsFloat(x.dtype) && attrs) {  // bf16 and f16 are summed widened to f32
      SetLibrary(step, "reduce_sum", std::move(*attrs));
      return true;
    }
  }
  if (node.op == "BiasAdd") {
    if (!IsFloatBiasAdd(node, info)) return false;
    SetLibrary(step, "bias_add", WithDefaults(node));
    return true;
  }
  if (node.op == "Variable") {
    SetLibrary(step, "variable_read");
    return true;
  }
  return false;
}

namespace {

// OneHot with i32/i64 indices into f32/f64 as "one_hot".
bool LowerOneHot(Step& step, const Executable& exe) {
  static const OpDef* def = OpRegistry::Global().Find("OneHot");
  if (step.inputs.size() != 1 || step.outputs.size() != 1) return false;
  const TensorType& indices = exe.buffers[step.inputs[0]].type;
  const TensorType& y = exe.buffers[step.outputs[0]].type;
  if ((indices.dtype != i32 && indices.dtype != i64) || (y.dtype != f32 && y.dtype != f64))
    return false;
  const AttrMap attrs = def->WithDefaults(step.node.attrs);
  Result<int64_t> depth = attrs.GetInt("depth"), axis = attrs.GetInt("axis");
  Result<double> on = attrs.GetFloat("on_value"), off = attrs.GetFloat("off_value");
  if (!depth.ok() || !axis.ok() || !on.ok() || !off.ok()) return false;
  Result<int> normalized = NormalizeAxis(*axis, y.shape.rank());
  if (!normalized.ok()) return false;
  SetLibrary(step, "one_hot");
  step.attrs.Set("depth", *depth);
  step.attrs.Set("axis", static_cast<int64_t>(*normalized));
  step.attrs.Set("on_value", *on);
  step.attrs.Set("off_value", *off);
  return true;
}

// Gather (any dtype) and GatherGrad (f32, f64) with i32/i64 indices as "gather", "gather_grad".
bool LowerGather(Step& step, const Executable& exe) {
  const bool grad = step.callee == "GatherGrad";
  if (step.inputs.size() != (grad ? 3u : 2u) || step.outputs.size() != 1) return false;
  const TensorType& indices = exe.buffers[step.inputs[1]].type;
  const TensorType& data = exe.buffers[grad ? step.outputs[0] : step.inputs[0]].type;
  if ((indices.dtype != i32 && indices.dtype != i64) ||
      (grad && data.dtype != f32 && data.dtype != f64))
    return false;
  const AttrValue* axis = step.node.attrs.Find("axis");
  Result<int> normalized =
      NormalizeAxis(axis ? axis->get<int64_t>() : int64_t{0}, data.shape.rank());
  if (!normalized.ok()) return false;
  SetLibrary(step, grad ? "gather_grad" : "gather");
  step.attrs.Set("axis", static_cast<int64_t>(*normalized));
  return true;
}

// Sum, Mean, Prod, Max and Min over an integer tensor as "reduce_integer" (attributes
// reduced, as reduce_sum's, and op).
bool LowerIntegerReduction(Step& step, const Executable& exe) {
  static const std::map<std::string, std::string> kFolds = {
      {"Sum", "sum"}, {"Mean", "mean"}, {"Prod", "prod"}, {"Max", "max"}, {"Min", "min"}};
  auto fold = kFolds.find(step.callee);
  if (fold == kFolds.end() || step.inputs.size() != 1 || step.outputs.size() != 1) return false;
  const TensorType& x = exe.buffers[step.inputs[0]].type;
  if (IsFloat(x.dtype) || !exe.buffers[step.inputs[0]].layout.empty()) return false;
  std::optional<std::vector<int64_t>> reduced = SummedDims(step.node, x.shape, nullptr);
  if (!reduced) return false;
  int64_t count = 1;
  for (int d = 0; d < x.shape.rank(); ++d)
    if ((*reduced)[d]) count *= x.shape[d];
  // Over nothing, max, min and the integer mean are errors the reference kernel reports.
  if (count == 0 && fold->second != "sum" && fold->second != "prod") return false;
  AttrMap attrs;
  attrs.Set("reduced", *reduced);
  attrs.Set("op", fold->second);
  SetLibrary(step, "reduce_integer", std::move(attrs));
  return true;
}

}  // namespace

void LowerCpuRoutineSteps(Executable& exe) {
  for (Step& step : exe.steps) {
    if (step.kind != Step::Kind::kReference || step.on_device) continue;
    if (step.callee == "OneHot")
      LowerOneHot(step, exe);
    else if (step.callee == "Gather" || step.callee == "GatherGrad")
      LowerGather(step, exe);
    else
      LowerIntegerReduction(step, exe);
  }
}

}  // namespace kiln::compiler
