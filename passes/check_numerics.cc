#include "passes/check_numerics.h"

#include <map>
#include <set>

#include "passes/graph_edit.h"

namespace kiln {

Result<bool> CheckNumericsPass::Run(Graph& graph) {
  std::set<TensorRef> already;  // tensors a CheckNumerics node reads
  std::set<std::string> taken;
  for (const Node& node : graph.nodes()) {
    taken.insert(node.name);
    if (node.op == "CheckNumerics" && !node.inputs.empty()) already.insert(node.inputs[0]);
  }
  std::map<TensorRef, TensorRef> checked;  // value -> its check's output
  std::vector<Node> checks;
  for (const Node& node : graph.nodes()) {
    if (node.op == "Constant" || node.op == "CheckNumerics") continue;
    for (size_t port = 0; port < node.output_types.size(); ++port) {
      TensorRef ref{node.name, static_cast<int>(port)};
      if (!IsFloat(node.output_types[port].dtype) || already.count(ref)) continue;
      Node check =
          NodeReading(node, static_cast<int>(port), "CheckNumerics", "check_numerics", taken);
      check.attrs.Set("what", node.Describe() + " output " + std::to_string(port));
      checked[ref] = TensorRef{check.name, 0};
      checks.push_back(std::move(check));
    }
  }
  if (checks.empty()) return false;
  for (Node& node : graph.mutable_nodes())
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (auto it = checked.find(node.inputs[i]);
          it != checked.end() && !IsVariableReference(node, i))
        node.inputs[i] = it->second;
  for (GraphOutput& out : graph.mutable_outputs())
    if (auto it = checked.find(out.tensor); it != checked.end()) out.tensor = it->second;
  KILN_RETURN_IF_ERROR(AddAfterProducers(graph, std::move(checks)));
  return true;
}

}  // namespace kiln
