#include "compiler/plan_pruning.h"

#include <map>
#include <vector>

namespace kiln::compiler {

void DropUnreadNodes(RunPlan& plan, const std::set<std::string>& candidates) {
  // Readers per node name (one per input or control input that names it), fetches as readers.
  std::map<std::string, int> readers;
  for (const TensorRef& f : plan.fetches) ++readers[f.node];
  for (const Node* node : plan.nodes) {
    for (const TensorRef& in : node->inputs) ++readers[in.node];
    for (const std::string& c : node->control_inputs) ++readers[c];
  }
  // In reverse order, so that a removed reader's inputs are seen after it.
  std::vector<bool> dropped(plan.nodes.size(), false);
  for (size_t i = plan.nodes.size(); i-- > 0;) {
    const Node* node = plan.nodes[i];
    if (!candidates.count(node->name) || readers[node->name] > 0) continue;
    dropped[i] = true;
    for (const TensorRef& in : node->inputs) --readers[in.node];
    for (const std::string& c : node->control_inputs) --readers[c];
  }
  std::vector<const Node*> kept;
  for (size_t i = 0; i < plan.nodes.size(); ++i)
    if (!dropped[i]) kept.push_back(plan.nodes[i]);
  plan.nodes = std::move(kept);
}

}  // namespace kiln::compiler
