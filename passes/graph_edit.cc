#include "passes/graph_edit.h"

#include <algorithm>

#include "ir/op_registry.h"

namespace kiln {

bool IsPinned(const Graph& graph, const Node& node) {
  const OpDef* def = OpRegistry::Global().Find(node.op);
  if (!def || def->stateful || node.op == "Placeholder") return true;
  if (!def->variadic_outputs && def->outputs.empty()) return true;
  auto named = [&node](const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), node.name) != names.end();
  };
  return named(graph.inputs()) || named(graph.update_ops());
}

const Tensor* ConstantValue(const Graph& graph, const TensorRef& ref) {
  const Node* producer = graph.FindNode(ref.node);
  if (!producer || producer->op != "Constant" || ref.port != 0) return nullptr;
  const AttrValue* value = producer->attrs.Find("value");
  if (!value || value->type() != AttrType::kTensor) return nullptr;
  return &value->get<Tensor>();
}

Result<std::vector<std::string>> TopologicalNames(const Graph& graph) {
  KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, graph.TopologicalOrder());
  std::vector<std::string> names;
  names.reserve(order.size());
  for (const Node* node : order) names.push_back(node->name);
  return names;
}

void Rewirer::ReplaceNode(const std::string& from, const std::string& to) {
  nodes_[from] = to;
  control_[from] = to;
  removed_.insert(from);
}

void Rewirer::ReplaceTensor(const TensorRef& from, const TensorRef& to) {
  tensors_[from] = to;
  control_[from.node] = to.node;
  removed_.insert(from.node);
}

TensorRef Rewirer::Resolve(const TensorRef& ref) const {
  TensorRef r = ref;
  // Each step moves to a node earlier in topological order, so this ends.
  while (true) {
    if (auto it = tensors_.find(r); it != tensors_.end()) {
      r = it->second;
    } else if (auto node = nodes_.find(r.node); node != nodes_.end()) {
      r.node = node->second;
    } else {
      return r;
    }
  }
}

std::string Rewirer::ResolveNode(const std::string& name) const {
  std::string n = name;
  for (auto it = control_.find(n); it != control_.end(); it = control_.find(n)) n = it->second;
  return n;
}

bool Rewirer::Apply(Node& node) const {
  if (removed_.empty()) return false;
  bool changed = false;
  for (TensorRef& in : node.inputs) {
    TensorRef resolved = Resolve(in);
    if (!(resolved == in)) in = resolved, changed = true;
  }
  std::vector<std::string> control;
  for (const std::string& c : node.control_inputs) {
    std::string resolved = ResolveNode(c);
    changed |= resolved != c;
    if (std::find(control.begin(), control.end(), resolved) == control.end())
      control.push_back(resolved);
  }
  changed |= control.size() != node.control_inputs.size();
  node.control_inputs = std::move(control);
  return changed;
}

void Rewirer::Finish(Graph& graph) const {
  if (removed_.empty()) return;
  for (Node& node : graph.mutable_nodes()) Apply(node);
  for (GraphOutput& out : graph.mutable_outputs()) out.tensor = Resolve(out.tensor);
  graph.RemoveNodesIf([this](const Node& n) { return removed_.count(n.name) > 0; });
}

bool IsVariableReference(const Node& node, size_t i) {
  const OpDef* def = OpRegistry::Global().Find(node.op);
  return def && def->stateful && i < def->inputs.size() && def->inputs[i].name == "variable";
}

std::string UniqueName(const std::string& base, std::set<std::string>& taken) {
  std::string name = base;
  for (int k = 2; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  taken.insert(name);
  return name;
}

Node NodeReading(const Node& producer, int port, const std::string& op, const std::string& suffix,
                 std::set<std::string>& taken) {
  Node node;
  node.name =
      UniqueName(producer.name + "/" + suffix + (port ? "_" + std::to_string(port) : ""), taken);
  node.op = op;
  node.inputs = {TensorRef{producer.name, port}};
  node.device = producer.device;
  node.source = producer.source;
  return node;
}

Status AddAfterProducers(Graph& graph, std::vector<Node> nodes) {
  std::map<std::string, std::vector<Node>> after;
  for (Node& n : nodes) after[n.inputs.empty() ? "" : n.inputs[0].node].push_back(std::move(n));
  std::vector<Node> old = std::move(graph.mutable_nodes());
  graph.RemoveNodesIf([](const Node&) { return true; });
  auto add_after = [&](const std::string& producer) -> Status {
    auto it = after.find(producer);
    if (it == after.end()) return OkStatus();
    for (Node& n : it->second) KILN_RETURN_IF_ERROR(graph.AddNode(std::move(n)).status());
    after.erase(it);
    return OkStatus();
  };
  for (Node& node : old) {
    std::string name = node.name;
    KILN_RETURN_IF_ERROR(graph.AddNode(std::move(node)).status());
    KILN_RETURN_IF_ERROR(add_after(name));
  }
  // Nodes whose first input is not in the graph (or that have none) go last.
  for (auto& [producer, rest] : after)
    for (Node& n : rest) KILN_RETURN_IF_ERROR(graph.AddNode(std::move(n)).status());
  return OkStatus();
}

}  // namespace kiln
