#include "passes/cse.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <vector>

#include "ir/op_registry.h"
#include "passes/graph_edit.h"

namespace kiln {
namespace {

// What makes two nodes the same computation (see cse.h).
struct Computation {
  const Node* node;
  AttrMap attrs;                  // with the schema's defaults filled in
  std::set<std::string> control;  // control inputs as a set

  explicit Computation(const Node* n)
      : node(n), control(n->control_inputs.begin(), n->control_inputs.end()) {
    const OpDef* def = OpRegistry::Global().Find(n->op);
    attrs = def ? def->WithDefaults(n->attrs) : n->attrs;
  }
  bool operator==(const Computation& o) const {
    return node->op == o.node->op && node->device == o.node->device &&
           node->inputs == o.node->inputs && control == o.control && attrs == o.attrs;
  }
  // Equal computations have equal keys (a hash, not a proof: operator== decides). Tensor
  // attributes add their types, so constants of different types are never compared byte by byte.
  std::string Key() const {
    std::string key = node->op + "|" + std::to_string(node->inputs.size());
    if (!node->inputs.empty()) key += "|" + node->inputs[0].ToString();
    for (const auto& [name, value] : attrs.items()) {
      key += "|" + name;
      if (value.type() == AttrType::kTensor)
        key += std::string(DTypeName(value.get<Tensor>().dtype())) +
               value.get<Tensor>().shape().ToString();
    }
    return key;
  }
};

}  // namespace

Result<bool> CommonSubexpressionElimination::Run(Graph& graph) {
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> order, TopologicalNames(graph));
  Rewirer rewirer;
  std::unordered_map<std::string, std::vector<Computation>> kept;  // by Key()
  for (const std::string& name : order) {
    Node* node = graph.FindNode(name);
    rewirer.Apply(*node);
    if (IsPinned(graph, *node)) continue;
    Computation c(node);
    std::vector<Computation>& bucket = kept[c.Key()];
    auto same = std::find(bucket.begin(), bucket.end(), c);
    if (same == bucket.end())
      bucket.push_back(std::move(c));
    else
      rewirer.ReplaceNode(node->name, same->node->name);
  }
  if (rewirer.empty()) return false;
  rewirer.Finish(graph);
  return true;
}

}  // namespace kiln
