#include "compiler/library_lowering.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "compiler/op_lowerings.h"
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
// type (a training step's counter among them), an f32/f64 one also by a scaled value (a scalar
// third input).
bool IsAssignStepUpdate(const Node& node, const StaticInfo& info) {
  if (node.inputs.size() != 2 && node.inputs.size() != 3) return false;
  const TensorType& var = info.types.at(node.inputs[0]);
  const DType d = var.dtype;
  if (node.inputs.size() == 3 &&
      ((d != f32 && d != f64) || !(info.types.at(node.inputs[2]) == TensorType{d, Shape{}})))
    return false;
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

// The ops reduce_sum runs: which dims each sums away, and whether it divides by their count.
enum class SumOver {
  kAxes,     // its attribute "axes" (none: every dim)
  kLike,     // the dims its second input broadcasts (SumLike, a broadcast's gradient)
  kSpatial,  // every dim after N and C
};
struct SumKind {
  SumOver over;
  bool mean;
};
const std::map<std::string, SumKind> kSums = {{"Sum", {SumOver::kAxes, false}},
                                              {"Mean", {SumOver::kAxes, true}},
                                              {"SumLike", {SumOver::kLike, false}},
                                              {"GlobalAvgPool", {SumOver::kSpatial, true}}};

// Which input dims a reduction sums away (1) or keeps (0): a reduce_sum op's as kSums says, any
// other reduction's by its "axes".
std::optional<std::vector<int64_t>> SummedDims(const Node& node, const Shape& x,
                                               const Shape* like) {
  const int rank = x.rank();
  std::vector<int64_t> reduced(rank, 0);
  auto kind = kSums.find(node.op);
  const SumOver over = kind == kSums.end() ? SumOver::kAxes : kind->second.over;
  if (over == SumOver::kSpatial) {
    for (int d = 2; d < rank; ++d) reduced[d] = 1;
    return reduced;
  }
  if (over == SumOver::kLike) {
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
  auto kind = kSums.find(node.op);
  if (kind == kSums.end()) return std::nullopt;
  std::optional<std::vector<int64_t>> reduced = SummedDims(node, x, like);
  if (!reduced) return std::nullopt;
  int64_t count = 1;
  for (int d = 0; d < x.rank(); ++d)
    if ((*reduced)[d]) count *= x[d];
  AttrMap attrs;
  attrs.Set("reduced", *reduced);
  attrs.Set("scale", kind->second.mean ? 1.0 / static_cast<double>(count) : 1.0);
  return attrs;
}

std::optional<std::string> ConvRoutine(const std::string& op) {
  auto it = kConvRoutines.find(op);
  return it == kConvRoutines.end() ? std::nullopt : std::optional<std::string>(it->second);
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
bool LowerGather(Step& step, const Executable& exe, bool grad) {
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
// reduced, as reduce_sum's, and op: the fold, "sum", "mean", "prod", "max" or "min").
bool LowerIntegerReduction(Step& step, const Executable& exe, const std::string& fold) {
  if (step.inputs.size() != 1 || step.outputs.size() != 1) return false;
  const TensorType& x = exe.buffers[step.inputs[0]].type;
  // u64 stays on the reference kernel, which computes it as int64 (ir/dtype.h).
  if (IsFloat(x.dtype) || x.dtype == u64 || !exe.buffers[step.inputs[0]].layout.empty())
    return false;
  std::optional<std::vector<int64_t>> reduced = SummedDims(step.node, x.shape, nullptr);
  if (!reduced) return false;
  int64_t count = 1;
  for (int d = 0; d < x.shape.rank(); ++d)
    if ((*reduced)[d]) count *= x.shape[d];
  // Over nothing, max, min and the integer mean are errors the reference kernel reports.
  if (count == 0 && fold != "sum" && fold != "prod") return false;
  AttrMap attrs;
  attrs.Set("reduced", *reduced);
  attrs.Set("op", fold);
  SetLibrary(step, "reduce_integer", std::move(attrs));
  return true;
}

}  // namespace

void LowerCpuRoutineSteps(Executable& exe) {
  const OpLowerings& lowerings = OpLowerings::Global();
  for (Step& step : exe.steps) {
    if (step.kind != Step::Kind::kReference || step.on_device) continue;
    const OpLowering* lowering = lowerings.Find(step.callee);  // a reference step's op
    if (lowering && lowering->cpu_routine) lowering->cpu_routine(step, exe);
  }
}

void RegisterLibraryLowerings(OpLowerings& lowerings) {
  OpLowering& matmul = lowerings.Add("MatMul");
  matmul.library = LowerMatMul;
  matmul.call = OpLowering::Call::kGemm;
  matmul.takes_epilogue = true;
  lowerings.Add("Conv2D").takes_epilogue = true;
  for (const auto& [op, routine] : kConvRoutines)
    lowerings.Add(op).call = OpLowering::Call::kConvolution;
  for (const auto& [op, routine] : kConvRoutines)
    lowerings.Add(op).library = [routine = routine](const Node& node, const StaticInfo&,
                                                    Step& step) -> Result<bool> {
      const DType y = node.output_types[0].dtype;
      if (y != f32 && y != bf16) return false;
      SetLibrary(step, routine.c_str(), WithDefaults(node));
      return true;
    };
  struct BatchNormRoutine {
    const char* op;
    size_t x_input;
    const char* routine;
  };
  for (const BatchNormRoutine& bn :
       {BatchNormRoutine{"BatchNorm", 0, "batch_norm"}, {"BatchNormGrad", 1, "batch_norm_grad"}})
    lowerings.Add(bn.op).library = [bn](const Node& node, const StaticInfo& info,
                                        Step& step) -> Result<bool> {
      if (!IsFloatBatchNorm(node, bn.x_input, info)) return false;
      SetLibrary(step, bn.routine, WithDefaults(node));
      return true;
    };
  for (const auto& [op, routine] : std::map<std::string, const char*>{
           {"SoftmaxCrossEntropy", "softmax_cross_entropy"},
           {"SoftmaxCrossEntropyGrad", "softmax_cross_entropy_grad"}})
    lowerings.Add(op).library = [routine = routine](const Node& node, const StaticInfo& info,
                                                    Step& step) -> Result<bool> {
      if (info.types.at(node.inputs[0]).dtype != f32) return false;
      SetLibrary(step, routine);
      return true;
    };
  for (const std::string& op : kCopyOps)
    lowerings.Add(op).library = [](const Node& node, const StaticInfo& info,
                                   Step& step) -> Result<bool> {
      if (node.inputs.empty() || info.types.at(node.inputs[0]).dtype != node.output_types[0].dtype)
        return false;
      SetLibrary(step, "copy");
      return true;
    };
  for (const auto& [op, mode] : kAssignModes)
    lowerings.Add(op).library = [mode = mode](const Node& node, const StaticInfo& info,
                                              Step& step) -> Result<bool> {
      if (!IsAssignStepUpdate(node, info)) return false;
      AttrMap attrs;
      attrs.Set("mode", mode);
      SetLibrary(step, "assign", std::move(attrs));
      return true;
    };
  for (const auto& sum : kSums)
    lowerings.Add(sum.first).library = [](const Node& node, const StaticInfo& info,
                                          Step& step) -> Result<bool> {
      if (node.inputs.empty()) return false;
      const TensorType& x = info.types.at(node.inputs[0]);
      const Shape* like = node.inputs.size() > 1 ? &info.types.at(node.inputs[1]).shape : nullptr;
      std::optional<AttrMap> attrs = ReduceSumAttrs(node, x.shape, like);
      if (!IsFloat(x.dtype) || !attrs) return false;  // bf16 and f16 are summed widened to f32
      SetLibrary(step, "reduce_sum", std::move(*attrs));
      return true;
    };
  lowerings.Add("BiasAdd").library = [](const Node& node, const StaticInfo& info,
                                        Step& step) -> Result<bool> {
    if (!IsFloatBiasAdd(node, info)) return false;
    SetLibrary(step, "bias_add", WithDefaults(node));
    return true;
  };
  lowerings.Add("Variable").library = [](const Node&, const StaticInfo&,
                                         Step& step) -> Result<bool> {
    SetLibrary(step, "variable_read");
    return true;
  };
  // The cpu runtime's routines for host steps (LowerCpuRoutineSteps).
  lowerings.Add("OneHot").cpu_routine = LowerOneHot;
  for (bool grad : {false, true})
    lowerings.Add(grad ? "GatherGrad" : "Gather").cpu_routine =
        [grad](Step& step, const Executable& exe) { return LowerGather(step, exe, grad); };
  for (const auto& [op, fold] : std::map<std::string, std::string>{
           {"Sum", "sum"}, {"Mean", "mean"}, {"Prod", "prod"}, {"Max", "max"}, {"Min", "min"}})
    lowerings.Add(op).cpu_routine = [fold = fold](Step& step, const Executable& exe) {
      return LowerIntegerReduction(step, exe, fold);
    };
}

}  // namespace kiln::compiler
