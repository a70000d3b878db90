#include "compiler/broadcast_folding.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/op_lowerings.h"
#include "compiler/plan_pruning.h"

namespace kiln::compiler {
namespace {

bool IsBroadcast(const Node& node) {
  const OpLowering* lowering = OpLowerings::Global().Find(node.op);
  return lowering && lowering->broadcast && !node.inputs.empty() && node.control_inputs.empty() &&
         node.output_types.size() == 1;
}

// The numpy broadcast of `shapes`, or nullopt when they do not broadcast.
std::optional<Shape> BroadcastAll(const std::vector<Shape>& shapes) {
  Shape result = shapes.empty() ? Shape{} : shapes[0];
  for (size_t i = 1; i < shapes.size(); ++i) {
    Result<Shape> b = BroadcastShapes(result, shapes[i]);
    if (!b.ok()) return std::nullopt;
    result = *b;
  }
  return result;
}

}  // namespace

int FoldBroadcastsIntoElementwise(RunPlan& plan, std::vector<std::unique_ptr<Node>>& owned,
                                  const StaticInfo& info,
                                  const std::function<bool(const Node&)>& elementwise) {
  if (!elementwise) return 0;
  std::map<std::string, const Node*> broadcasts;
  for (const Node* node : plan.nodes)
    if (IsBroadcast(*node)) broadcasts[node->name] = node;
  if (broadcasts.empty()) return 0;
  int folded = 0;
  for (const Node*& node : plan.nodes) {
    if (node->inputs.size() < 2 || node->output_types.size() != 1 || !elementwise(*node)) continue;
    std::vector<TensorRef> inputs = node->inputs;
    std::vector<Shape> shapes;
    for (const TensorRef& in : inputs) shapes.push_back(info.types.at(in).shape);
    const Shape& out = info.types.at(TensorRef{node->name, 0}).shape;
    bool changed = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto b = broadcasts.find(inputs[i].node);
      if (b == broadcasts.end()) continue;
      const TensorRef& source = b->second->inputs[0];
      const TensorType& x = info.types.at(source);
      const TensorType& broadcast = info.types.at(inputs[i]);
      std::optional<Shape> x_to_broadcast = BroadcastAll({x.shape, broadcast.shape});
      if (x.dtype != broadcast.dtype || !x_to_broadcast || *x_to_broadcast != broadcast.shape)
        continue;
      std::vector<Shape> with_x = shapes;
      with_x[i] = x.shape;
      std::optional<Shape> result = BroadcastAll(with_x);
      if (!result || *result != out) continue;
      inputs[i] = source;
      shapes = with_x;
      changed = true;
      ++folded;
    }
    if (!changed) continue;
    auto copy = std::make_unique<Node>(*node);
    copy->inputs = std::move(inputs);
    owned.push_back(std::move(copy));
    node = owned.back().get();
  }
  std::set<std::string> candidates;
  for (const auto& [name, node] : broadcasts) candidates.insert(name);
  DropUnreadNodes(plan, candidates);
  return folded;
}

}  // namespace kiln::compiler
