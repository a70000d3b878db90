#include "ir/graph_stats.h"

#include <set>

#include "ir/op_registry.h"

namespace kiln {
namespace {

double Elements(const Shape& s) {
  double n = 1;
  for (int64_t d : s.dims()) n *= d < 0 ? 1.0 : static_cast<double>(d);
  return n;
}

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
  if (!def) return 0;
  double out = Elements(output);
  const std::string& op = node.op;
  if (op == "MatMul") {
    const Shape* a = input_shape(0);
    if (!a || a->rank() == 0) return 0;
    const AttrValue* ta = node.attrs.Find("transpose_a");
    bool transpose_a = ta && ta->type() == AttrType::kBool && ta->get<bool>() && a->rank() >= 2;
    int64_t k = transpose_a ? (*a)[a->rank() - 2] : (*a)[a->rank() - 1];
    return 2.0 * out * static_cast<double>(k < 0 ? 1 : k);
  }
  if (op == "Conv2D") {
    const Shape* w = input_shape(1);
    if (!w || w->rank() != 4) return 0;
    return 2.0 * out * Elements(Shape({(*w)[1], (*w)[2], (*w)[3]}));
  }
  // The backward convolutions: 2 * |dy| * (C/groups * KH * KW) each, as the forward one.
  if (op == "Conv2DBackpropInput") {  // (dy, w, ...) -> dx
    const Shape *dy = input_shape(0), *w = input_shape(1);
    if (!dy || !w || w->rank() != 4) return 0;
    return 2.0 * Elements(*dy) * Elements(Shape({(*w)[1], (*w)[2], (*w)[3]}));
  }
  if (op == "Conv2DBackpropFilter") {  // (x, dy, ...) -> dw
    const Shape* dy = input_shape(1);
    if (!dy || output.rank() != 4) return 0;
    return 2.0 * Elements(*dy) * Elements(Shape({output[1], output[2], output[3]}));
  }
  if (op == "MaxPool2D" || op == "AvgPool2D") {
    const AttrValue* k = node.attrs.Find("kernel");
    double window = 1;
    if (k && k->type() == AttrType::kInts)
      for (int64_t d : k->get<std::vector<int64_t>>()) window *= static_cast<double>(d);
    return out * window;
  }
  static const std::set<std::string> kHeavy = {"Softmax", "LogSoftmax", "SoftmaxCrossEntropy",
                                               "SoftmaxCrossEntropyGrad"};
  static const std::set<std::string> kNorms = {"BatchNorm", "LayerNorm", "BatchNormGrad"};
  if (kHeavy.count(op)) {
    const Shape* x = input_shape(0);
    return x ? 5.0 * Elements(*x) : 0;
  }
  if (kNorms.count(op)) {
    const Shape* x = input_shape(0);
    return x ? 8.0 * Elements(*x) : 0;
  }
  if (def->family == "math" || op == "BiasAdd" || op == "Dropout" || op == "AssignAdd" ||
      op == "AssignSub")
    return op == "Cast" ? 0 : out;
  if (def->family == "reduce" || op == "GlobalAvgPool") {
    const Shape* x = input_shape(0);
    return x ? Elements(*x) : 0;
  }
  return 0;  // data movement and state
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
