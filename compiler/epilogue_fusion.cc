#include "compiler/epilogue_fusion.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "compiler/op_lowerings.h"
#include "ir/op_registry.h"

namespace kiln::compiler {
namespace {

std::string Quote(const Node& node) { return node.op + " '" + node.name + "'"; }

// KILN_ATTENTION=0 leaves attention unfused (to compare).
bool AttentionDisabled() {
  static const bool disabled = [] {
    const char* env = std::getenv("KILN_ATTENTION");
    return env && std::string(env) == "0";
  }();
  return disabled;
}

class EpiloguePlanner {
 public:
  EpiloguePlanner(const RunPlan& plan, const StaticInfo& info, bool cpu_steps)
      : plan_(plan), info_(info), cpu_steps_(cpu_steps) {
    for (const Node* node : plan.nodes) {
      for (const TensorRef& in : node->inputs) readers_[in].push_back(node);
      for (const std::string& c : node->control_inputs) controlled_.insert(c);
    }
    for (const TensorRef& f : plan.fetches) fetched_.insert(f);
  }

  EpiloguePlan Run() {
    for (const Node* node : plan_.nodes) {
      if (cpu_steps_ && !AttentionDisabled() && node->op == "MatMul" &&
          !out_.absorbed.count(node->name) && PlanAttention(*node))
        continue;
      if (!HasEpilogue(*node) || out_.absorbed.count(node->name)) continue;
      Epilogue e;
      e.producer = node;
      e.output = TensorRef{node->name, 0};
      std::string why = Extend(e);
      std::string line = Quote(*node) + ": ";
      if (e.absorbed.empty()) {
        out_.decisions.push_back(line + "no epilogue fused (" + why + ")");
        continue;
      }
      for (size_t i = 0; i < e.absorbed.size(); ++i)
        line += (i ? ", " : "fused ") + Quote(*e.absorbed[i]);
      const bool gemm = OpLowerings::Global().Find(node->op)->call == OpLowering::Call::kGemm;
      out_.decisions.push_back(line + (gemm ? " into its gemm" : " into its oneDNN call") +
                               "; stopped: " + why);
      for (const Node* n : e.absorbed) out_.absorbed[n->name] = node->name;
      out_.by_producer[node->name] = std::move(e);
    }
    return std::move(out_);
  }

 private:
  // A forward f32 or bf16 Conv2D, or a MatMul that lowers to one gemm (both operands rank 2).
  bool HasEpilogue(const Node& node) const {
    const TensorRef out{node.name, 0};
    const OpLowering* lowering = OpLowerings::Global().Find(node.op);
    if (!lowering || !lowering->takes_epilogue || info_.values.count(out)) return false;
    const DType dtype = info_.types.at(out).dtype;
    if (lowering->call == OpLowering::Call::kConvolution) return dtype == f32 || dtype == bf16;
    return kiln::IsFloat(dtype) && info_.types.at(node.inputs[0]).shape.rank() == 2 &&
           info_.types.at(node.inputs[1]).shape.rank() == 2;
  }
  bool IsFloat(const TensorRef& ref, DType dtype) const {
    auto t = info_.types.find(ref);
    return t != info_.types.end() && t->second.dtype == dtype;
  }
  const Tensor* Known(const TensorRef& ref) const {
    auto v = info_.values.find(ref);
    return v == info_.values.end() ? nullptr : &v->second;
  }
  int64_t Channels(const Epilogue& e) const {
    return info_.types.at(TensorRef{e.producer->name, 0}).shape[1];
  }

  // The one node that reads `value`, when `value` may disappear into the step; else why not.
  const Node* SoleReader(const TensorRef& value, std::string* why) const {
    auto r = readers_.find(value);
    if (fetched_.count(value)) {
      *why = value.ToString() + " is fetched";
    } else if (value.port != 0 || controlled_.count(value.node)) {
      *why = value.ToString() + " is a control input";
    } else if (r == readers_.end() || r->second.empty()) {
      *why = value.ToString() + " has no reader";
    } else if (r->second.size() > 1) {
      *why = value.ToString() + " has " + std::to_string(r->second.size()) + " readers";
    } else if (plan_.feeds.count(TensorRef{r->second[0]->name, 0})) {
      *why = Quote(*r->second[0]) + " is fed";
    } else {
      return r->second[0];
    }
    return nullptr;
  }

  bool F32MatMul(const Node& node, bool transpose_b_allowed) const {
    if (node.op != "MatMul" || node.inputs.size() != 2) return false;
    const AttrMap attrs = OpRegistry::Global().Find(node.op)->WithDefaults(node.attrs);
    const TensorRef out{node.name, 0};
    auto set = [&attrs](const char* flag) {
      Result<bool> value = attrs.GetBool(flag);
      return !value.ok() || *value;
    };
    return !set("transpose_a") && (transpose_b_allowed || !set("transpose_b")) &&
           IsFloat(node.inputs[0], f32) && IsFloat(node.inputs[1], f32) && IsFloat(out, f32) &&
           !info_.values.count(out) && info_.types.at(node.inputs[0]).shape.rank() >= 2 &&
           info_.types.at(node.inputs[1]).shape.rank() >= 2;
  }

  // The attention chain from the scores MatMul `qk` (see the header); false when there is none.
  bool PlanAttention(const Node& qk) {
    if (!F32MatMul(qk, /*transpose_b_allowed=*/true)) return false;
    Epilogue e;
    e.producer = &qk;
    std::string why;
    const TensorRef scores{qk.name, 0};
    const Shape& scores_shape = info_.types.at(scores).shape;
    const int rank = scores_shape.rank();
    const Node* next = SoleReader(scores, &why);
    std::vector<const Node*> chain;
    if (next && next->op == "Add" && next->inputs.size() == 2) {
      const TensorRef& mask = next->inputs[0] == scores ? next->inputs[1] : next->inputs[0];
      const Shape& m = info_.types.count(mask) ? info_.types.at(mask).shape : Shape{};
      const bool per_matrix =
          m.rank() >= 2 && m.NumElements() == scores_shape[rank - 2] * scores_shape[rank - 1] &&
          m[m.rank() - 2] == scores_shape[rank - 2] && m[m.rank() - 1] == scores_shape[rank - 1];
      if (mask == scores || !IsFloat(mask, f32) || !(per_matrix || m == scores_shape) ||
          !(info_.types.at(TensorRef{next->name, 0}).shape == scores_shape))
        return false;
      e.attention_mask = mask;
      chain.push_back(next);
      next = SoleReader(TensorRef{next->name, 0}, &why);
    }
    if (!next || next->op != "Softmax") return false;
    const AttrMap softmax = OpRegistry::Global().Find("Softmax")->WithDefaults(next->attrs);
    Result<int64_t> axis = softmax.GetInt("axis");
    if (!axis.ok() || (*axis != -1 && *axis != rank - 1)) return false;
    chain.push_back(next);
    const Node* pv = SoleReader(TensorRef{next->name, 0}, &why);
    if (!pv || !F32MatMul(*pv, /*transpose_b_allowed=*/false) ||
        !(pv->inputs[0] == TensorRef{next->name, 0}) ||
        info_.types.at(TensorRef{pv->name, 0}).shape.rank() != rank)
      return false;
    // The same matrices in q, k and v, none broadcast.
    for (const TensorRef& operand : {qk.inputs[0], qk.inputs[1], pv->inputs[1]}) {
      const Shape& shape = info_.types.at(operand).shape;
      if (shape.rank() != rank) return false;
      for (int d = 0; d + 2 < rank; ++d)
        if (shape[d] != scores_shape[d]) return false;
    }
    chain.push_back(pv);
    for (const Node* n : chain)
      if (out_.absorbed.count(n->name)) return false;
    e.absorbed = chain;
    e.attention_values = pv;
    e.output = TensorRef{pv->name, 0};
    std::string line = Quote(qk) + ": fused ";
    for (size_t i = 0; i < chain.size(); ++i) line += (i ? ", " : "") + Quote(*chain[i]);
    out_.decisions.push_back(line + " into one attention step");
    for (const Node* n : chain) out_.absorbed[n->name] = qk.name;
    out_.by_producer[qk.name] = std::move(e);
    return true;
  }

  // Whether every other output of `node` is unused (BatchNorm's batch statistics).
  bool OnlyOutputZeroUsed(const Node& node) const {
    for (size_t i = 1; i < node.output_types.size(); ++i) {
      TensorRef ref{node.name, static_cast<int>(i)};
      if (fetched_.count(ref) || readers_.count(ref)) return false;
    }
    return true;
  }

  // Folds a known per-channel bias into the epilogue's compile-time bias.
  void AddKnownBias(Epilogue& e, const std::vector<double>& bias) const {
    if (!e.folded_bias)
      e.folded_bias = Tensor::FromDoubles(info_.types.at(TensorRef{e.producer->name, 0}).dtype,
                                          Shape{Channels(e)}, bias);
    else
      for (int64_t c = 0; c < Channels(e); ++c)
        e.folded_bias->SetDouble(c, e.folded_bias->GetDouble(c) + bias[c]);
  }

  // BiasAdd on the output: false, with the reason, when it cannot be absorbed.
  bool TakeBiasAdd(Epilogue& e, const Node& node, std::string* why) const {
    Result<int64_t> axis =
        OpRegistry::Global().Find(node.op)->WithDefaults(node.attrs).GetInt("axis");
    const int rank = info_.types.at(e.output).shape.rank();
    if (!axis.ok() || (*axis < 0 ? *axis + rank : *axis) != 1 || !(node.inputs[0] == e.output)) {
      *why = Quote(node) + " is not along the channels";
      return false;
    }
    if (const Tensor* b = Known(node.inputs[1]); b && !e.bias) {
      std::vector<double> values(Channels(e));
      for (int64_t c = 0; c < Channels(e); ++c) values[c] = b->GetDouble(c);
      AddKnownBias(e, values);
    } else if (!e.bias && !e.folded_bias &&
               IsFloat(node.inputs[1], info_.types.at(e.output).dtype)) {
      e.bias = node.inputs[1];
    } else {
      *why = Quote(node) + " would be a second bias, not known at compile time";
      return false;
    }
    return true;
  }

  // BatchNorm in inference mode folded into known weights (see the header for the arithmetic).
  bool TakeBatchNorm(Epilogue& e, const Node& node, std::string* why) const {
    const AttrMap attrs = OpRegistry::Global().Find(node.op)->WithDefaults(node.attrs);
    Result<bool> training = attrs.GetBool("training");
    Result<double> epsilon = attrs.GetFloat("epsilon");
    const Tensor* w = e.folded_weights ? &*e.folded_weights : Known(e.producer->inputs[1]);
    std::vector<const Tensor*> stats;
    for (size_t i = 1; i < node.inputs.size(); ++i) stats.push_back(Known(node.inputs[i]));
    if (!training.ok() || *training || !epsilon.ok()) {
      *why = Quote(node) + " is in training mode";
    } else if (!(node.inputs[0] == e.output) || stats.size() != 4 || !OnlyOutputZeroUsed(node)) {
      *why = Quote(node) + "'s batch statistics are used";
    } else if (!w || e.bias || stats[0] == nullptr || stats[1] == nullptr || stats[2] == nullptr ||
               stats[3] == nullptr) {
      *why = Quote(node) + ": weights or statistics not known at compile time (freeze the model)";
    } else {
      const int64_t channels = Channels(e), per_channel = w->num_elements() / channels;
      Tensor folded = w->CastTo(f32);
      std::vector<double> bias(channels);
      for (int64_t c = 0; c < channels; ++c) {
        const double s = stats[0]->GetDouble(c) / std::sqrt(stats[3]->GetDouble(c) + *epsilon);
        for (int64_t i = c * per_channel; i < (c + 1) * per_channel; ++i)
          folded.SetDouble(i, w->GetDouble(i) * s);
        const double b = e.folded_bias ? e.folded_bias->GetDouble(c) : 0.0;
        bias[c] = (b - stats[2]->GetDouble(c)) * s + stats[1]->GetDouble(c) - b;
      }
      e.folded_weights = folded.CastTo(w->dtype());
      AddKnownBias(e, bias);  // b + ((b - mean) * s + beta - b)
      return true;
    }
    return false;
  }

  static bool HasGelu(const Epilogue& e) {
    return std::find(e.post_ops.begin(), e.post_ops.end(), PostOp::kGeluTanh) != e.post_ops.end();
  }
  // Whether the post-ops since the depthwise convolution (or all, without one) have a Clip.
  static bool HasClipInStage(const Epilogue& e) {
    for (auto op = e.post_ops.rbegin(); op != e.post_ops.rend() && *op != PostOp::kDepthwise; ++op)
      if (*op == PostOp::kClip) return true;
    return false;
  }
  static bool HasDepthwise(const Epilogue& e) {
    return std::find(e.post_ops.begin(), e.post_ops.end(), PostOp::kDepthwise) != e.post_ops.end();
  }

  // A Conv2D reading the 1 x 1 convolution's output as a depthwise 3 x 3 one oneDNN fuses (see
  // the header): false, with the reason, when it cannot be absorbed.
  bool TakeDepthwise(Epilogue& e, const Node& dw, std::string* why) const {
    auto conv_attrs = [](const Node& n) {
      return OpRegistry::Global().Find(n.op)->WithDefaults(n.attrs);
    };
    const AttrMap p = conv_attrs(*e.producer), d = conv_attrs(dw);
    const Shape& pw = info_.types.at(e.producer->inputs[1]).shape;
    const Shape& dww = info_.types.at(dw.inputs[1]).shape;
    const int64_t channels = Channels(e);
    auto ints = [](const AttrMap& a, const char* name) {
      Result<std::vector<int64_t>> v = a.GetInts(name);
      return v.ok() ? *v : std::vector<int64_t>{};
    };
    auto groups = [](const AttrMap& a) {
      Result<int64_t> g = a.GetInt("groups");
      return g.ok() ? *g : int64_t{0};
    };
    const std::vector<int64_t> stride = ints(d, "strides");
    if (!cpu_steps_ || info_.types.at(e.output).dtype != f32 || e.residual || e.folded_weights ||
        HasDepthwise(e)) {
      *why = Quote(dw) + " is a convolution (fused only after an f32 1 x 1 one, in cpu plans)";
    } else if (pw.rank() != 4 || pw[2] != 1 || pw[3] != 1 ||
               ints(p, "strides") != std::vector<int64_t>{1, 1} ||
               ints(p, "pads") != std::vector<int64_t>{0, 0, 0, 0} ||
               ints(p, "dilations") != std::vector<int64_t>{1, 1} || groups(p) != 1) {
      *why = Quote(dw) + " follows a convolution that is not 1 x 1 with stride 1 and no padding";
    } else if (!(dw.inputs[0] == e.output) || groups(d) != channels || dww.rank() != 4 ||
               dww[0] != channels || dww[1] != 1 || dww[2] != 3 || dww[3] != 3 ||
               (stride != std::vector<int64_t>{1, 1} && stride != std::vector<int64_t>{2, 2}) ||
               ints(d, "pads") != std::vector<int64_t>{1, 1, 1, 1} ||
               ints(d, "dilations") != std::vector<int64_t>{1, 1} ||
               !IsFloat(TensorRef{dw.name, 0}, f32)) {
      *why = Quote(dw) + " is not a depthwise 3 x 3 convolution with stride 1 or 2 and padding 1";
    } else {
      e.depthwise = &dw;
      e.depthwise_stride = stride[0];
      e.post_ops.push_back(PostOp::kDepthwise);
      return true;
    }
    return false;
  }
  static bool IsTanhGelu(const Node& gelu) {
    const OpDef* def = OpRegistry::Global().Find("Gelu");
    if (!def) return false;
    Result<std::string> approximate = def->WithDefaults(gelu.attrs).GetString("approximate");
    return approximate.ok() && *approximate == "tanh";
  }

  // Walks the chain after the convolution; returns why it stopped.
  std::string Extend(Epilogue& e) const {
    bool bias_stage = true;
    const bool conv = e.producer->op == "Conv2D";
    const DType dtype = info_.types.at(e.output).dtype;
    std::string why;
    while (true) {
      const Node* next = SoleReader(e.output, &why);
      if (!next) return why;
      if (auto owner = out_.absorbed.find(next->name); owner != out_.absorbed.end())
        return Quote(*next) + " is fused into '" + owner->second + "' already";
      bool taken = false;
      if (next->op == "BiasAdd" && bias_stage) {
        taken = TakeBiasAdd(e, *next, &why);
      } else if (next->op == "BiasAdd" && e.depthwise && !e.depthwise_bias &&
                 e.post_ops.back() == PostOp::kDepthwise) {
        Result<int64_t> axis =
            OpRegistry::Global().Find(next->op)->WithDefaults(next->attrs).GetInt("axis");
        if (axis.ok() && (*axis == 1 || *axis == -3) && IsFloat(next->inputs[1], f32) &&
            next->inputs[0] == e.output) {
          e.depthwise_bias = next->inputs[1];
          taken = true;
        } else {
          why = Quote(*next) + " is not along the channels";
        }
      } else if (next->op == "Conv2D" && conv) {
        taken = TakeDepthwise(e, *next, &why);
      } else if (next->op == "BatchNorm" && bias_stage && conv) {
        taken = TakeBatchNorm(e, *next, &why);
      } else if (next->op == "Add" && e.post_ops.empty() && next->inputs.size() == 2 && conv) {
        const TensorRef& other = next->inputs[0] == e.output ? next->inputs[1] : next->inputs[0];
        if (other == e.output || !(info_.types.at(other) == info_.types.at(e.output)) ||
            !(info_.types.at(TensorRef{next->name, 0}) == info_.types.at(e.output))) {
          why = Quote(*next) + " adds a tensor of another type or shape";
        } else {
          e.residual = other;
          e.post_ops.push_back(PostOp::kSum);
          taken = true;
        }
      } else if (next->op == "Relu" && IsFloat(TensorRef{next->name, 0}, dtype) && !HasGelu(e)) {
        e.post_ops.push_back(PostOp::kRelu);
        taken = true;
      } else if (next->op == "Clip" && conv && cpu_steps_ &&
                 IsFloat(TensorRef{next->name, 0}, dtype) && !HasClipInStage(e) &&
                 next->attrs.GetFloat("min").ok() && next->attrs.GetFloat("max").ok()) {
        e.clip_bounds.push_back(*next->attrs.GetFloat("min"));
        e.clip_bounds.push_back(*next->attrs.GetFloat("max"));
        e.post_ops.push_back(PostOp::kClip);
        taken = true;
      } else if (next->op == "Gelu" && !conv && e.post_ops.empty() && IsTanhGelu(*next)) {
        e.post_ops.push_back(PostOp::kGeluTanh);
        taken = true;
      } else {
        why = e.output.ToString() + " is read by " + Quote(*next) +
              (conv ? ", not a bias, folded BatchNorm, residual Add, Relu, Clip or depthwise Conv2D"
                    : ", not a bias, Relu or a Gelu(approximate=tanh) before any other activation");
      }
      if (!taken) return why;
      bias_stage &= (next->op == "BiasAdd" || next->op == "BatchNorm") && !e.depthwise;
      e.absorbed.push_back(next);
      e.output = TensorRef{next->name, 0};
    }
  }

  const RunPlan& plan_;
  const StaticInfo& info_;
  std::map<TensorRef, std::vector<const Node*>> readers_;
  std::set<std::string> controlled_;
  std::set<TensorRef> fetched_;
  bool cpu_steps_;
  EpiloguePlan out_;
};

}  // namespace

EpiloguePlan PlanEpilogues(const RunPlan& plan, const StaticInfo& info, bool cpu_steps) {
  return EpiloguePlanner(plan, info, cpu_steps).Run();
}

}  // namespace kiln::compiler
