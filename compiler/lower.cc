#include "compiler/lower.h"

#include <optional>
#include <queue>
#include <set>

#include "compiler/op_lowerings.h"
#include "ir/op_registry.h"

namespace kiln::compiler {
namespace {

// A digest of what determines a kernel's code, without attribute values (SameCode compares those
// exactly): kernels with different keys differ.
std::string KernelKey(const KernelSpec& spec) {
  std::string s = (spec.row_reduction ? "rows" : "") + spec.shape.ToString();
  for (const KernelSpec::Operand& in : spec.inputs)
    s += "|" + std::string(DTypeName(in.dtype)) + in.shape.ToString();
  for (const KernelSpec::Op& op : spec.ops) {
    s += "|" + op.op + ":" + std::string(DTypeName(op.dtype)) + ":";
    for (int a : op.args) s += std::to_string(a) + ",";
  }
  s += "|out:";
  for (int o : spec.outputs) s += std::to_string(o) + ",";
  return s;
}

// Whether two kernels with the same key compute the same thing (attributes compared exactly).
bool SameCode(const KernelSpec& a, const KernelSpec& b) {
  if (a.ops.size() != b.ops.size()) return false;
  for (size_t i = 0; i < a.ops.size(); ++i)
    if (!(a.ops[i].attrs == b.ops[i].attrs)) return false;
  return KernelKey(a) == KernelKey(b);
}

// A step-to-be: a cluster, or one node that is not fused.
struct Unit {
  int cluster = -1;
  const Node* node = nullptr;
  int position = 0;  // plan index of its first node
};

class Lowering {
 public:
  Lowering(const RunPlan& plan, const StaticInfo& info, const FusionPlan& fusion,
           const EpiloguePlan& epilogues)
      : plan_(plan), info_(info), fusion_(fusion), epilogues_(epilogues) {}

  Result<LoweredPlan> Run() {
    out_.decisions = epilogues_.decisions;
    KILN_ASSIGN_OR_RETURN(std::vector<Unit> order, OrderUnits());
    for (const Unit& unit : order) {
      if (unit.cluster >= 0)
        KILN_RETURN_IF_ERROR(LowerCluster(unit.cluster));
      else
        KILN_RETURN_IF_ERROR(LowerNode(*unit.node));
    }
    for (const TensorRef& f : plan_.fetches) {
      KILN_ASSIGN_OR_RETURN(int id, BufferFor(f));
      out_.executable.fetches.push_back(id);
    }
    return std::move(out_);
  }

 private:
  bool Skipped(const Node& node) const {
    const OpDef* def = OpRegistry::Global().Find(node.op);
    if (def && def->stateful) return false;
    for (size_t i = 0; i < node.output_types.size(); ++i)
      if (!info_.values.count(TensorRef{node.name, static_cast<int>(i)})) return false;
    return true;  // every output known at compile time (or none: NoOp)
  }

  int ClusterOf(const std::string& node) const {
    auto it = fusion_.cluster_of.find(node);
    return it == fusion_.cluster_of.end() ? -1 : it->second;
  }

  // Units in a topological order of the condensed graph, earliest plan position first.
  Result<std::vector<Unit>> OrderUnits() {
    std::vector<Unit> units;
    std::map<int, int> unit_of_cluster;
    std::map<std::string, int> position;
    for (size_t i = 0; i < plan_.nodes.size(); ++i) {
      const Node* node = plan_.nodes[i];
      position[node->name] = static_cast<int>(i);
      op_of_[node->name] = node->op;
      if (Skipped(*node)) continue;
      if (auto conv = epilogues_.absorbed.find(node->name); conv != epilogues_.absorbed.end()) {
        unit_of_[node->name] = unit_of_.at(conv->second);  // computed by the convolution's step
        continue;
      }
      int c = ClusterOf(node->name);
      int u;
      if (c >= 0 && unit_of_cluster.count(c)) {
        u = unit_of_cluster[c];
      } else {
        u = static_cast<int>(units.size());
        units.push_back(Unit{c, c >= 0 ? nullptr : node, static_cast<int>(i)});
        if (c >= 0) unit_of_cluster[c] = u;
      }
      unit_of_[node->name] = u;
    }
    std::vector<std::set<int>> successors(units.size());
    std::vector<int> pending(units.size(), 0);
    for (const Node* node : plan_.nodes) {
      auto consumer = unit_of_.find(node->name);
      if (consumer == unit_of_.end()) continue;
      std::vector<std::string> producers = node->control_inputs;
      for (const TensorRef& in : node->inputs)
        if (!plan_.feeds.count(in)) producers.push_back(in.node);
      for (const std::string& p : producers) {
        auto producer = unit_of_.find(p);
        if (producer == unit_of_.end() || producer->second == consumer->second) continue;
        if (successors[producer->second].insert(consumer->second).second)
          ++pending[consumer->second];
      }
      for (const TensorRef& in : node->inputs) {
        auto producer = unit_of_.find(in.node);
        if (producer != unit_of_.end() && producer->second != consumer->second)
          used_outside_.insert(in);
      }
    }
    for (const TensorRef& f : plan_.fetches) used_outside_.insert(f);
    using Ready = std::pair<int, int>;  // (position, unit)
    std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
    for (size_t u = 0; u < units.size(); ++u)
      if (!pending[u]) ready.push({units[u].position, static_cast<int>(u)});
    std::vector<Unit> order;
    while (!ready.empty()) {
      int u = ready.top().second;
      ready.pop();
      order.push_back(units[u]);
      for (int s : successors[u])
        if (--pending[s] == 0) ready.push({units[s].position, s});
    }
    if (order.size() != units.size())
      return MakeError(ErrorCode::kInternal, "fusion made a cycle: ", units.size() - order.size(),
                       " units could not be ordered");
    return order;
  }

  Result<int> BufferFor(const TensorRef& ref) {
    auto found = buffer_of_.find(ref);
    if (found != buffer_of_.end()) return found->second;
    auto type = info_.types.find(ref);
    if (type == info_.types.end())
      return MakeError(ErrorCode::kInternal, "no type for tensor '", ref.ToString(), "'");
    Executable& exe = out_.executable;
    BufferDesc b;
    b.type = type->second;
    b.tensor = ref.ToString();
    if (auto op = op_of_.find(ref.node); op != op_of_.end()) b.op = op->second;
    if (plan_.feeds.count(ref)) {
      b.kind = BufferDesc::Kind::kFeed;
      b.index = static_cast<int>(exe.feeds.size());
      exe.feeds.push_back(ref);
    } else if (auto value = info_.values.find(ref); value != info_.values.end()) {
      b.kind = BufferDesc::Kind::kConstant;
      b.index = static_cast<int>(exe.constants.size());
      exe.constants.push_back(value->second);
    }
    int id = static_cast<int>(exe.buffers.size());
    exe.buffers.push_back(std::move(b));
    buffer_of_[ref] = id;
    return id;
  }

  Status LowerCluster(int c) {
    const Cluster& cluster = fusion_.clusters[c];
    KernelSpec spec;
    spec.name = "k" + std::to_string(out_.kernels.size());
    spec.shape = cluster.shape;
    Step step;
    std::set<std::string> members;
    for (const Node* n : cluster.nodes) members.insert(n->name);
    auto inlined = [&](const TensorRef& ref) {
      auto v = info_.values.find(ref);
      return v != info_.values.end() && v->second.num_elements() == 1;
    };
    // External inputs first: their value indices precede the ops'.
    std::map<TensorRef, int> value_of;
    for (const Node* n : cluster.nodes)
      for (const TensorRef& in : n->inputs) {
        if (members.count(in.node) || inlined(in) || value_of.count(in)) continue;
        value_of[in] = static_cast<int>(spec.inputs.size());
        spec.inputs.push_back({info_.types.at(in).dtype, info_.types.at(in).shape});
        KILN_ASSIGN_OR_RETURN(int id, BufferFor(in));
        step.inputs.push_back(id);
      }
    auto add_op = [&](KernelSpec::Op op) {
      spec.ops.push_back(std::move(op));
      return static_cast<int>(spec.inputs.size() + spec.ops.size() - 1);
    };
    for (const Node* n : cluster.nodes) {
      KernelSpec::Op op;
      op.op = n->op;
      op.node = n->name;
      op.attrs = OpRegistry::Global().Find(n->op)->WithDefaults(n->attrs);
      op.dtype = info_.types.at(TensorRef{n->name, 0}).dtype;
      for (const TensorRef& in : n->inputs) {
        if (!value_of.count(in)) {  // a scalar known at compile time
          const Tensor& v = info_.values.at(in);
          AttrMap value;
          value.Set("value", v.GetDouble(0));
          value_of[in] = add_op(KernelSpec::Op{"Constant", {}, value, v.dtype(), in.ToString()});
        }
        op.args.push_back(value_of[in]);
      }
      TensorRef result{n->name, 0};
      value_of[result] = add_op(std::move(op));
      if (used_outside_.count(result)) {
        spec.outputs.push_back(value_of[result]);
        KILN_ASSIGN_OR_RETURN(int id, BufferFor(result));
        step.outputs.push_back(id);
      }
      step.node.name += (step.node.name.empty() ? "" : ",") + n->name;
    }
    // Nothing outside reads it, or nothing to compute (an empty tensor).
    if (spec.outputs.empty() || spec.shape.NumElements() == 0) return OkStatus();
    step.node.op = "Fused";
    CollapseDimensions(spec);
    AddKernelStep(std::move(spec), std::move(step));
    return OkStatus();
  }

  // Appends a kernel step calling `spec` (or an identical kernel generated already).
  void AddKernelStep(KernelSpec spec, Step step) {
    step.kind = Step::Kind::kKernel;
    step.callee = spec.name;
    step.rows = spec.shape.rank() ? spec.shape[0] : 1;
    // A kernel identical to one generated already (the same layer shape repeats in most networks)
    // is called again instead of being generated and compiled twice.
    const std::string key = KernelKey(spec);
    for (auto [it, end] = kernels_by_key_.equal_range(key); it != end; ++it)
      if (SameCode(out_.kernels[it->second], spec)) step.callee = out_.kernels[it->second].name;
    if (step.callee == spec.name) {
      kernels_by_key_.emplace(key, out_.kernels.size());
      out_.kernels.push_back(std::move(spec));
    }
    out_.executable.steps.push_back(std::move(step));
  }

  // A node as one row-reduction kernel (compiler/reduction_fusion.h); false, with the reason in
  // `why`, when it has none.
  Result<bool> LowerRowReduction(const Node& node, const OpLowering& lowering, std::string* why) {
    Result<KernelSpec> spec = lowering.row_reduction(node, info_);
    if (!spec.ok()) {
      *why = spec.error().message();
      return false;
    }
    spec->name = "k" + std::to_string(out_.kernels.size());
    out_.decisions.push_back(node.op + " '" + node.name + "': row-reduction kernel over " +
                             spec->shape.ToString());
    if (spec->shape[0] == 0) return true;  // no rows: nothing to compute
    Step step;
    step.node = node;
    for (const TensorRef& in : node.inputs) {
      KILN_ASSIGN_OR_RETURN(int id, BufferFor(in));
      step.inputs.push_back(id);
    }
    for (size_t i = 0; i < node.output_types.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(int id, BufferFor(TensorRef{node.name, static_cast<int>(i)}));
      step.outputs.push_back(id);
    }
    AddKernelStep(std::move(*spec), std::move(step));
    return true;
  }

  // A buffer for a tensor computed at compile time that no node of the plan produces.
  int NewConstant(Tensor value, const std::string& name) {
    Executable& exe = out_.executable;
    BufferDesc b;
    b.kind = BufferDesc::Kind::kConstant;
    b.type = TensorType{value.dtype(), value.shape()};
    b.tensor = name;
    b.index = static_cast<int>(exe.constants.size());
    exe.constants.push_back(std::move(value));
    exe.buffers.push_back(std::move(b));
    return static_cast<int>(exe.buffers.size()) - 1;
  }

  // A Conv2D or MatMul with its epilogue (compiler/epilogue_fusion.h): inputs x, w, [bias],
  // [depthwise weights, [depthwise bias]], [residual]; the output of the chain's last node.
  Status LowerEpilogue(const Epilogue& e, Step& step) {
    if (e.attention_values) return LowerAttention(e, step);
    step.attrs.Set("bias", static_cast<int64_t>(e.bias || e.folded_bias));
    std::vector<int64_t> post_ops;
    for (PostOp op : e.post_ops) post_ops.push_back(static_cast<int64_t>(op));
    step.attrs.Set("post_ops", post_ops);
    if (!e.clip_bounds.empty()) step.attrs.Set("clip", e.clip_bounds);
    if (e.depthwise) {
      step.attrs.Set("depthwise_stride", e.depthwise_stride);
      step.attrs.Set("depthwise_bias", static_cast<int64_t>(e.depthwise_bias.has_value()));
    }
    KILN_ASSIGN_OR_RETURN(int x, BufferFor(e.producer->inputs[0]));
    step.inputs.push_back(x);
    if (e.folded_weights) {
      step.inputs.push_back(NewConstant(*e.folded_weights, e.producer->name + ":folded_weights"));
    } else {
      KILN_ASSIGN_OR_RETURN(int w, BufferFor(e.producer->inputs[1]));
      step.inputs.push_back(w);
    }
    if (e.folded_bias) {
      step.inputs.push_back(NewConstant(*e.folded_bias, e.producer->name + ":folded_bias"));
    } else if (e.bias) {
      KILN_ASSIGN_OR_RETURN(int b, BufferFor(*e.bias));
      step.inputs.push_back(b);
    }
    if (e.depthwise) {
      KILN_ASSIGN_OR_RETURN(int w, BufferFor(e.depthwise->inputs[1]));
      step.inputs.push_back(w);
    }
    if (e.depthwise_bias) {
      KILN_ASSIGN_OR_RETURN(int b, BufferFor(*e.depthwise_bias));
      step.inputs.push_back(b);
    }
    if (e.residual) {
      KILN_ASSIGN_OR_RETURN(int r, BufferFor(*e.residual));
      step.inputs.push_back(r);
    }
    KILN_ASSIGN_OR_RETURN(int y, BufferFor(e.output));
    step.outputs.push_back(y);
    out_.executable.steps.push_back(std::move(step));
    return OkStatus();
  }

  // Attention (compiler/epilogue_fusion.h): the scores product's gemm attributes, and of the
  // p v product "n_v" (v's columns) and "stride_v"; attribute "mask": 0 none, 1 one [Lq, Lk]
  // for every matrix, 2 one per matrix. Inputs q, k, [mask], v; output the p v product.
  Status LowerAttention(const Epilogue& e, Step& step) {
    const Node& pv = *e.attention_values;
    Step values;
    KILN_ASSIGN_OR_RETURN(bool gemm,
                          OpLowerings::Global().Find("MatMul")->library(pv, info_, values));
    auto attr = [](const Step& s, const char* name) { return s.attrs.GetInt(name); };
    KILN_ASSIGN_OR_RETURN(int64_t m, attr(step, "m"));
    KILN_ASSIGN_OR_RETURN(int64_t n, attr(step, "n"));
    KILN_ASSIGN_OR_RETURN(int64_t batch, attr(step, "batch"));
    KILN_ASSIGN_OR_RETURN(int64_t m_v, attr(values, "m"));
    KILN_ASSIGN_OR_RETURN(int64_t k_v, attr(values, "k"));
    KILN_ASSIGN_OR_RETURN(int64_t n_v, attr(values, "n"));
    KILN_ASSIGN_OR_RETURN(int64_t batch_v, attr(values, "batch"));
    KILN_ASSIGN_OR_RETURN(int64_t stride_v, attr(values, "stride_b"));
    if (!gemm || m_v * batch_v != m * batch || k_v != n)
      return MakeError(ErrorCode::kInternal, "attention '", step.node.name,
                       "': the products do not chain (", m, " x ", n, " scores, ", m_v, " x ", k_v,
                       " probabilities)");
    step.callee = "attention";
    step.attrs.Set("n_v", n_v);
    step.attrs.Set("stride_v", batch_v == batch ? stride_v : int64_t{0});
    int64_t mask = 0;
    if (e.attention_mask)
      mask = info_.types.at(*e.attention_mask).shape.NumElements() == m * n ? 1 : 2;
    step.attrs.Set("mask", mask);
    for (const TensorRef& in : {step.node.inputs[0], step.node.inputs[1]}) {
      KILN_ASSIGN_OR_RETURN(int id, BufferFor(in));
      step.inputs.push_back(id);
    }
    if (e.attention_mask) {
      KILN_ASSIGN_OR_RETURN(int id, BufferFor(*e.attention_mask));
      step.inputs.push_back(id);
    }
    KILN_ASSIGN_OR_RETURN(int v, BufferFor(pv.inputs[1]));
    step.inputs.push_back(v);
    KILN_ASSIGN_OR_RETURN(int y, BufferFor(e.output));
    step.outputs.push_back(y);
    out_.executable.steps.push_back(std::move(step));
    return OkStatus();
  }

  Status LowerNode(const Node& node) {
    Step step;
    step.node = node;
    step.kind = Step::Kind::kReference;
    step.callee = node.op;
    const OpLowering* lowering = OpLowerings::Global().Find(node.op);
    bool library = false;
    if (lowering && lowering->library) {
      KILN_ASSIGN_OR_RETURN(library, lowering->library(node, info_, step));
    }
    if (auto e = epilogues_.by_producer.find(node.name); e != epilogues_.by_producer.end()) {
      if (!library)
        return MakeError(ErrorCode::kInternal, node.op, " '", node.name,
                         "': an epilogue was planned but no library call runs it");
      return LowerEpilogue(e->second, step);
    }
    std::string why =
        lowering && !lowering->reference.empty() ? lowering->reference : "no lowering yet";
    for (const auto* lower :
         {lowering ? &lowering->pool : nullptr, lowering ? &lowering->copy : nullptr}) {
      if (!lower || !*lower) continue;
      Status lowered = (*lower)(node, info_, step);
      if (!lowered.ok()) {
        if (lowered.error().code() != ErrorCode::kUnimplemented) return lowered;
        why = lowered.error().message();
      }
    }
    if (step.kind == Step::Kind::kReference && lowering && lowering->row_reduction) {
      KILN_ASSIGN_OR_RETURN(bool lowered, LowerRowReduction(node, *lowering, &why));
      if (lowered) return OkStatus();
    }
    out_.decisions.push_back(node.op + " '" + node.name + "': " +
                             (step.kind == Step::Kind::kLibrary
                                  ? "library call " + step.callee
                                  : "reference kernel (" + why + ")"));
    for (const TensorRef& in : node.inputs) {
      KILN_ASSIGN_OR_RETURN(int id, BufferFor(in));
      step.inputs.push_back(id);
    }
    for (size_t i = 0; i < node.output_types.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(int id, BufferFor(TensorRef{node.name, static_cast<int>(i)}));
      if (step.callee == "variable_read" || step.callee == "assign")
        out_.executable.buffers[id].kind = BufferDesc::Kind::kVariable;
      step.outputs.push_back(id);
    }
    out_.executable.steps.push_back(std::move(step));
    return OkStatus();
  }

  const RunPlan& plan_;
  const StaticInfo& info_;
  const FusionPlan& fusion_;
  const EpiloguePlan& epilogues_;
  std::map<std::string, int> unit_of_;
  std::set<TensorRef> used_outside_;
  std::map<TensorRef, int> buffer_of_;
  std::map<std::string, std::string> op_of_;           // node name -> op, for the buffers' messages
  std::multimap<std::string, size_t> kernels_by_key_;  // KernelKey -> index in out_.kernels
  LoweredPlan out_;
};

}  // namespace

Result<LoweredPlan> Lower(const RunPlan& plan, const StaticInfo& info, const FusionPlan& fusion,
                          const EpiloguePlan& epilogues) {
  return Lowering(plan, info, fusion, epilogues).Run();
}

void CollapseDimensions(KernelSpec& spec) {
  const int rank = spec.shape.rank();
  // Each input's dims aligned to the iteration space.
  std::vector<std::vector<int64_t>> dims;
  for (const KernelSpec::Operand& in : spec.inputs) {
    std::vector<int64_t> d(rank, 1);
    for (int i = 0; i < in.shape.rank(); ++i) d[rank - in.shape.rank() + i] = in.shape[i];
    dims.push_back(std::move(d));
  }
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> collapsed(spec.inputs.size());
  std::vector<bool> last_full(spec.inputs.size());
  for (int i = 0; i < rank; ++i) {
    if (spec.shape[i] == 1) continue;  // every operand has size 1 here
    bool merge = !shape.empty();
    for (size_t j = 0; j < dims.size() && merge; ++j) merge = (dims[j][i] != 1) == last_full[j];
    if (merge) {
      shape.back() *= spec.shape[i];
      for (size_t j = 0; j < dims.size(); ++j) collapsed[j].back() *= dims[j][i];
    } else {
      shape.push_back(spec.shape[i]);
      for (size_t j = 0; j < dims.size(); ++j) {
        collapsed[j].push_back(dims[j][i]);
        last_full[j] = dims[j][i] != 1;
      }
    }
  }
  spec.shape = Shape(shape);
  for (size_t j = 0; j < dims.size(); ++j) spec.inputs[j].shape = Shape(collapsed[j]);
}

}  // namespace kiln::compiler
