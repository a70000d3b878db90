#include "ir/graph.h"

#include <charconv>

namespace kiln {

Result<TensorRef> TensorRef::Parse(std::string_view text) {
  TensorRef ref;
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    ref.node = std::string(text);
  } else {
    ref.node = std::string(text.substr(0, colon));
    std::string_view port = text.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), ref.port);
    if (ec != std::errc() || ptr != port.data() + port.size() || ref.port < 0)
      return MakeError(ErrorCode::kInvalidArgument, "bad tensor reference '", text,
                       "': expected \"node\" or \"node:port\"");
  }
  if (ref.node.empty())
    return MakeError(ErrorCode::kInvalidArgument, "bad tensor reference '", text,
                     "': empty node name");
  return ref;
}

std::string Node::Describe() const {
  std::string s = "node '" + name + "' (" + op;
  if (!source.empty()) s += ", built at " + source;
  return s + ")";
}

Result<Node*> Graph::AddNode(Node node) {
  if (node.name.empty())
    return MakeError(ErrorCode::kInvalidArgument, "a ", node.op, " node has an empty name");
  if (index_.count(node.name))
    return MakeError(ErrorCode::kAlreadyExists, "duplicate node name '", node.name, "'");
  index_[node.name] = nodes_.size();
  nodes_.push_back(std::move(node));
  return &nodes_.back();
}

const Node* Graph::FindNode(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

Node* Graph::FindNode(std::string_view name) {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

Status Graph::RenameNode(const std::string& old_name, const std::string& new_name) {
  if (old_name == new_name) return OkStatus();
  if (new_name.empty())
    return MakeError(ErrorCode::kInvalidArgument, "a node name cannot be empty");
  if (index_.count(new_name))
    return MakeError(ErrorCode::kAlreadyExists, "cannot rename '", old_name, "' to '", new_name,
                     "': the name is taken");
  Node* node = FindNode(old_name);
  if (!node) return MakeError(ErrorCode::kNotFound, "no node named '", old_name, "'");
  node->name = new_name;
  for (Node& n : nodes_) {
    for (TensorRef& in : n.inputs)
      if (in.node == old_name) in.node = new_name;
    for (std::string& c : n.control_inputs)
      if (c == old_name) c = new_name;
  }
  for (std::string& in : inputs_)
    if (in == old_name) in = new_name;
  for (GraphOutput& out : outputs_)
    if (out.tensor.node == old_name) out.tensor.node = new_name;
  for (std::string& u : update_ops_)
    if (u == old_name) u = new_name;
  Reindex();
  return OkStatus();
}

void Graph::Reindex() {
  index_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) index_[nodes_[i].name] = i;
}

Result<TensorRef> Graph::ResolveTensor(std::string_view name) const {
  for (const GraphOutput& out : outputs_)
    if (out.name == name) return out.tensor;
  KILN_ASSIGN_OR_RETURN(TensorRef ref, TensorRef::Parse(name));
  const Node* node = FindNode(ref.node);
  if (!node) {
    // A node name may itself contain ':'; try the whole text as a node name.
    if (FindNode(name)) return TensorRef{std::string(name), 0};
    return MakeError(ErrorCode::kNotFound, "no graph output or node named '", name, "'");
  }
  if (!node->output_types.empty() && ref.port >= static_cast<int>(node->output_types.size()))
    return node->MakeNodeError(ErrorCode::kNotFound, "has no output ", ref.port, " (it has ",
                               node->output_types.size(), ")");
  return ref;
}

Result<TensorType> Graph::TypeOf(const TensorRef& ref) const {
  const Node* node = FindNode(ref.node);
  if (!node) return MakeError(ErrorCode::kNotFound, "no node named '", ref.node, "'");
  if (ref.port < 0 || ref.port >= static_cast<int>(node->output_types.size()))
    return node->MakeNodeError(ErrorCode::kNotFound, "has no output ", ref.port, " (it has ",
                               node->output_types.size(), ")");
  return node->output_types[ref.port];
}

Result<std::vector<const Node*>> Graph::TopologicalOrder() const {
  // Iterative depth-first search; state 1 = on the stack, 2 = done.
  std::vector<int> state(nodes_.size(), 0);
  std::vector<const Node*> order;
  order.reserve(nodes_.size());
  auto deps_of = [](const Node& n) {
    std::vector<std::string> deps;
    for (const TensorRef& in : n.inputs) deps.push_back(in.node);
    for (const std::string& c : n.control_inputs) deps.push_back(c);
    return deps;
  };
  for (size_t root = 0; root < nodes_.size(); ++root) {
    if (state[root]) continue;
    std::vector<std::pair<size_t, std::vector<std::string>>> stack;
    stack.push_back({root, deps_of(nodes_[root])});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [idx, deps] = stack.back();
      if (deps.empty()) {
        state[idx] = 2;
        order.push_back(&nodes_[idx]);
        stack.pop_back();
        continue;
      }
      std::string dep = std::move(deps.back());
      deps.pop_back();
      auto it = index_.find(dep);
      if (it == index_.end())
        return nodes_[idx].MakeNodeError(ErrorCode::kNotFound, "input '", dep, "' does not exist");
      size_t d = it->second;
      if (state[d] == 1) {
        std::string cycle;
        bool in_cycle = false;
        for (auto& frame : stack) {
          if (frame.first == d) in_cycle = true;
          if (in_cycle) cycle += "'" + nodes_[frame.first].name + "' -> ";
        }
        return MakeError(ErrorCode::kInvalidArgument, "the graph has a cycle: ", cycle, "'",
                         nodes_[d].name, "'");
      }
      if (state[d] == 0) {
        state[d] = 1;
        stack.push_back({d, deps_of(nodes_[d])});
      }
    }
  }
  return order;
}

bool Graph::operator==(const Graph& o) const {
  if (nodes_.size() != o.nodes_.size() || inputs_ != o.inputs_ ||
      outputs_.size() != o.outputs_.size() || update_ops_ != o.update_ops_)
    return false;
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i].name != o.outputs_[i].name || !(outputs_[i].tensor == o.outputs_[i].tensor))
      return false;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node &a = nodes_[i], &b = o.nodes_[i];
    if (a.name != b.name || a.op != b.op || !(a.inputs == b.inputs) ||
        a.control_inputs != b.control_inputs || !(a.attrs == b.attrs) || a.device != b.device ||
        a.source != b.source)
      return false;
  }
  return true;
}

}  // namespace kiln
