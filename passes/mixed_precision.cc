#include "passes/mixed_precision.h"

#include <map>
#include <set>

#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "passes/graph_edit.h"

namespace kiln {
namespace {

bool IsSource(const Node& node) {
  return node.op == "Placeholder" || node.op == "Constant" || node.op == "Variable";
}

// Reads or writes float32: the nodes mixed precision decides about.
bool IsCandidate(const Graph& graph, const Node& node) {
  if (IsSource(node)) return false;
  for (const TensorType& t : node.output_types)
    if (t.dtype == f32) return true;
  for (const TensorRef& in : node.inputs) {
    Result<TensorType> t = graph.TypeOf(in);
    if (t.ok() && t->dtype == f32) return true;
  }
  return false;
}

// The inputs a 16-bit node reads in 16 bits: the float32 ones of the type variable of its first
// float input (so that e.g. ReshapeLike's `like` or a Select's condition are left alone).
std::vector<int> InputsToNarrow(const Graph& graph, const Node& node) {
  const OpDef* def = OpRegistry::Global().Find(node.op);
  auto type_var = [&](size_t i) -> std::string {
    if (!def || def->inputs.empty()) return "";
    const InputSpec& spec = i < def->inputs.size() ? def->inputs[i] : def->inputs.back();
    return spec.type_var;
  };
  std::optional<std::string> var;
  std::vector<int> narrow;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    Result<TensorType> t = graph.TypeOf(node.inputs[i]);
    if (!t.ok() || !IsFloat(t->dtype)) continue;
    if (!var) var = type_var(i);
    if (t->dtype == f32 && type_var(i) == *var) narrow.push_back(static_cast<int>(i));
  }
  return narrow;
}

std::string Quote(const std::string& name) { return "'" + name + "'"; }

// Ops that can take 16-bit operands and write a float32 result (an attribute out_dtype).
bool CanWriteF32From16(const std::string& op) { return op == "MatMul"; }

}  // namespace

Result<std::vector<PrecisionDecision>> DecidePrecision(const Graph& graph,
                                                       const PrecisionPolicy& policy) {
  for (const auto& [name, list] : policy.node_lists)
    if (!graph.FindNode(name))
      return MakeError(ErrorCode::kNotFound, "precision choice for node '", name,
                       "': the graph has no node of that name");
  KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, graph.TopologicalOrder());
  std::vector<PrecisionDecision> decisions;
  std::map<std::string, size_t> index;  // node -> its decision
  for (const Node* node : order) {
    if (!IsCandidate(graph, *node)) continue;
    PrecisionDecision d;
    d.node = node->name;
    d.op = node->op;
    d.list = PrecisionListOf(policy, node->op);
    bool pinned_by_node = false;
    if (auto it = policy.node_lists.find(node->name); it != policy.node_lists.end()) {
      d.list = it->second;
      pinned_by_node = true;
    }
    std::string source = pinned_by_node ? "node choice " : "";
    if (!d.list) {
      d.why = "unlisted: float32";
    } else if (*d.list == PrecisionList::kAlways16) {
      d.in16 = true;
      d.why = source + "always16";
    } else if (*d.list == PrecisionList::kKeep32) {
      d.why = source + "keep32";
    } else {
      for (const TensorRef& in : node->inputs) {
        auto it = index.find(in.node);
        if (it == index.end() || !decisions[it->second].in16) continue;
        const Node* producer = graph.FindNode(in.node);
        if (producer->output_types[in.port].dtype != f32) continue;
        d.in16 = true;
        d.why = std::string(PrecisionListName(*d.list)) + ": reads " + Quote(in.node) + " (16-bit)";
        break;
      }
      if (!d.in16) d.why = std::string(PrecisionListName(*d.list)) + ": no 16-bit float input";
    }
    index[node->name] = decisions.size();
    decisions.push_back(std::move(d));
  }

  // Backward: follow/neutral nodes whose 16-bit outputs only float32 readers read go back.
  std::map<std::string, std::vector<std::string>> readers;  // producer -> reading nodes
  for (const Node& node : graph.nodes())
    for (const TensorRef& in : node.inputs) readers[in.node].push_back(node.name);
  std::set<std::string> output_producers;
  for (const GraphOutput& out : graph.outputs()) output_producers.insert(out.tensor.node);
  auto read_in16 = [&](const std::string& producer) {
    for (const std::string& r : readers[producer]) {
      auto it = index.find(r);
      if (it != index.end() && decisions[it->second].in16) return true;
    }
    return false;
  };
  for (size_t k = decisions.size(); k-- > 0;) {
    PrecisionDecision& d = decisions[k];
    if (!d.in16 || !d.list || policy.node_lists.count(d.node) ||
        (*d.list != PrecisionList::kFollow && *d.list != PrecisionList::kNeutral))
      continue;
    if (read_in16(d.node)) continue;
    d.in16 = false;
    d.why = std::string(PrecisionListName(*d.list)) + ": only float32 readers" +
            (output_producers.count(d.node) ? " (a graph output)" : "");
  }

  // Rule 3: 16-bit products that only float32 readers read stay float32.
  for (PrecisionDecision& d : decisions) {
    if (!d.in16 || !CanWriteF32From16(d.op) || read_in16(d.node)) continue;
    d.f32_output = true;
    d.why += ", float32 output: only float32 readers";
  }
  return decisions;
}

Result<bool> MixedPrecision::Run(Graph& graph) {
  if (policy_.compute != bf16 && policy_.compute != f16)
    return MakeError(ErrorCode::kInvalidArgument, "mixed-precision computes in bf16 or f16, not ",
                     DTypeName(policy_.compute));
  KILN_ASSIGN_OR_RETURN(std::vector<PrecisionDecision> decisions, DecidePrecision(graph, policy_));
  std::set<std::string> in16, f32_output;
  for (const PrecisionDecision& d : decisions) {
    if (d.in16) in16.insert(d.node);
    if (d.f32_output) f32_output.insert(d.node);
  }
  // Tensors that become 16-bit: float32 outputs of 16-bit nodes that do not write float32.
  auto narrowed = [&](const TensorRef& ref) {
    const Node* producer = graph.FindNode(ref.node);
    return in16.count(ref.node) && !f32_output.count(ref.node) &&
           producer->output_types[ref.port].dtype == f32;
  };

  std::map<std::pair<TensorRef, DType>, TensorRef> casts;
  std::vector<Node> new_nodes;
  std::set<std::string> taken;
  for (const Node& n : graph.nodes()) taken.insert(n.name);
  auto cast = [&](const TensorRef& ref, DType to) {
    auto [it, fresh] = casts.try_emplace({ref, to});
    if (!fresh) return it->second;
    Node c = NodeReading(*graph.FindNode(ref.node), ref.port, "Cast",
                         "to_" + std::string(DTypeName(to)), taken);
    c.attrs.Set("to", to);
    it->second = TensorRef{c.name, 0};
    new_nodes.push_back(std::move(c));
    return it->second;
  };

  bool changed = false;
  for (Node& node : graph.mutable_nodes()) {
    if (in16.count(node.name)) {
      const bool wants_f32 = f32_output.count(node.name) > 0;
      Result<DType> out_dtype = node.attrs.GetDType("out_dtype");
      const bool writes_f32 = out_dtype.ok() && *out_dtype == f32;
      if (wants_f32 && !writes_f32) {
        node.attrs.Set("out_dtype", f32);
        changed = true;
      } else if (!wants_f32 && writes_f32) {  // a float32 product its 16-bit readers get in 16 bits
        node.attrs.Erase("out_dtype");
        changed = true;
      }
      for (int i : InputsToNarrow(graph, node)) {
        if (narrowed(node.inputs[i])) continue;  // already 16-bit
        node.inputs[i] = cast(node.inputs[i], policy_.compute);
        changed = true;
      }
      continue;
    }
    for (TensorRef& in : node.inputs) {
      if (!narrowed(in)) continue;
      in = cast(in, f32);
      changed = true;
    }
  }
  for (GraphOutput& out : graph.mutable_outputs()) {
    if (!narrowed(out.tensor)) continue;
    out.tensor = cast(out.tensor, f32);
    changed = true;
  }
  if (!changed) return false;
  KILN_RETURN_IF_ERROR(AddAfterProducers(graph, std::move(new_nodes)));
  Status verified = Verify(graph);
  if (!verified.ok())
    return MakeError(ErrorCode::kInternal,
                     "mixed-precision left an invalid graph: ", verified.error().message());
  return true;
}

}  // namespace kiln
