#include "ir/graph_stats.h"

#include "ir/op_registry.h"

namespace kiln {
namespace {

const Shape* InputShape(const Graph& graph, const Node& node, int i) {
  if (i >= static_cast<int>(node.inputs.size())) return nullptr;
  const Node* p = graph.FindNode(node.inputs[i].node);
  if (!p || node.inputs[i].port >= static_cast<int>(p->output_types.size())) return nullptr;
  return &p->output_types[node.inputs[i].port].shape;
}

}  // namespace

double EstimateNodeFlops(const Graph& graph, const Node& node) {
  if (node.output_types.empty()) return 0;
  return EstimateNodeFlops(
      node, [&](int i) { return InputShape(graph, node, i); }, node.output_types[0].shape);
}

double EstimateNodeFlops(const Node& node, const std::function<const Shape*(int)>& input_shape,
                         const Shape& output) {
  const OpDef* def = OpRegistry::Global().Find(node.op);
  if (!def || !def->flops) return 0;
  return def->flops(FlopsContext{node, input_shape, output});
}

GraphStats ComputeGraphStats(const Graph& graph) {
  GraphStats stats;
  for (const Node& node : graph.nodes()) {
    ++stats.op_counts[node.op];
    for (const TensorType& t : node.output_types)
      if (!t.shape.IsFullyKnown()) stats.has_unknown_dims = true;
    if (node.op == "Variable" && !node.output_types.empty()) {
      int64_t n = node.output_types[0].shape.NumElements();
      stats.parameter_count += n;
      stats.parameter_bytes += n * DTypeSize(node.output_types[0].dtype);
    }
    if (node.op == "Constant")
      if (const AttrValue* v = node.attrs.Find("value"); v && v->type() == AttrType::kTensor)
        stats.constant_bytes += v->get<Tensor>().byte_size();
    stats.flops += EstimateNodeFlops(graph, node);
  }
  return stats;
}

}  // namespace kiln
