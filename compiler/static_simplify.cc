#include "compiler/static_simplify.h"

#include <optional>
#include <set>
#include <string>

#include "compiler/broadcast_folding.h"
#include "compiler/transpose_folding.h"

namespace kiln::compiler {

namespace {

// The output dims of a ReshapeLike whose output shape is known (every dim at least 1: a Reshape's
// 0 copies an input dim), for a Reshape that no longer reads `like`: the gradient builder's
// ReshapeLike(dy, x) reads only x's shape, yet kept x alive through the backward pass, so that
// the forward Reshape or Squeeze of x could not take x's bytes and copied it.
std::optional<std::vector<int64_t>> StaticReshape(const Node& node, const StaticInfo& info) {
  if (node.op != "ReshapeLike" || node.inputs.size() != 2 || node.output_types.size() != 1)
    return std::nullopt;
  const Shape& shape = info.types.at(TensorRef{node.name, 0}).shape;
  std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end());
  for (int64_t d : dims)
    if (d < 1) return std::nullopt;
  return dims;
}

}  // namespace

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
    const std::optional<std::vector<int64_t>> reshape = StaticReshape(*node, info);
    if (!identity && !reshape) {
      out.plan.nodes.push_back(node);
      continue;
    }
    auto copy = std::make_unique<Node>(*node);
    copy->op = identity ? "Identity" : "Reshape";
    copy->inputs.resize(1);
    copy->attrs = AttrMap();
    if (reshape) copy->attrs.Set("shape", *reshape);
    out.plan.nodes.push_back(copy.get());
    out.rewritten.push_back(std::move(copy));
  }
  FoldBroadcastsIntoElementwise(out.plan, out.rewritten, info, elementwise);
  FoldTransposesIntoMatMuls(out.plan, out.rewritten, info);
  return out;
}

}  // namespace kiln::compiler
