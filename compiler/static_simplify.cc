#include "compiler/static_simplify.h"

#include <set>
#include <string>

#include "compiler/broadcast_folding.h"
#include "compiler/transpose_folding.h"

namespace kiln::compiler {

SimplifiedPlan SimplifyWithStaticTypes(const RunPlan& plan, StaticInfo& info,
                                       const std::function<bool(const Node&)>& elementwise) {
  static const std::set<std::string> kShapeOnly = {"SumLike", "BroadcastLike", "BroadcastTo"};
  SimplifiedPlan out;
  out.plan.feeds = plan.feeds;
  out.plan.fetches = plan.fetches;
  for (const Node* node : plan.nodes) {
    const bool identity = kShapeOnly.count(node->op) && !node->inputs.empty() &&
                          node->output_types.size() == 1 &&
                          info.types.at(node->inputs[0]) == info.types.at(TensorRef{node->name, 0});
    if (!identity) {
      out.plan.nodes.push_back(node);
      continue;
    }
    auto copy = std::make_unique<Node>(*node);
    copy->op = "Identity";
    copy->inputs.resize(1);
    copy->attrs = AttrMap();
    out.plan.nodes.push_back(copy.get());
    out.rewritten.push_back(std::move(copy));
  }
  FoldBroadcastsIntoElementwise(out.plan, out.rewritten, info, elementwise);
  FoldTransposesIntoMatMuls(out.plan, out.rewritten, info);
  return out;
}

}  // namespace kiln::compiler
