#include "passes/dce.h"

#include <set>
#include <vector>

#include "passes/graph_edit.h"

namespace kiln {

Result<bool> DeadCodeElimination::Run(Graph& graph) {
  std::vector<std::string> stack;
  for (const GraphOutput& out : graph.outputs()) stack.push_back(out.tensor.node);
  for (const Node& node : graph.nodes())
    if (IsPinned(graph, node)) stack.push_back(node.name);
  std::set<std::string> needed;
  while (!stack.empty()) {
    std::string name = std::move(stack.back());
    stack.pop_back();
    if (!needed.insert(name).second) continue;
    const Node* node = graph.FindNode(name);
    if (!node)
      return MakeError(ErrorCode::kNotFound, "dce: node '", name,
                       "' is needed (a graph output or an input of a needed node) but does not "
                       "exist");
    for (const TensorRef& in : node->inputs) stack.push_back(in.node);
    for (const std::string& c : node->control_inputs) stack.push_back(c);
  }
  if (needed.size() == graph.nodes().size()) return false;
  graph.RemoveNodesIf([&needed](const Node& n) { return needed.count(n.name) == 0; });
  return true;
}

}  // namespace kiln
