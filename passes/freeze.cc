#include "passes/freeze.h"

#include <set>

#include "ir/verifier.h"

namespace kiln {
namespace {

// BatchNorm and Dropout as they evaluate.
void SetInferenceAttrs(Node& node) {
  if (const AttrValue* t = node.attrs.Find("training"); t && t->type() == AttrType::kBool)
    node.attrs.Set("training", false);
}

}  // namespace

Result<Graph> ForInference(const Graph& graph) {
  Graph inference;
  for (const Node& original : graph.nodes()) {
    Node node = original;
    node.output_types.clear();
    SetInferenceAttrs(node);
    KILN_RETURN_IF_ERROR(inference.AddNode(std::move(node)).status());
  }
  inference.mutable_inputs() = graph.inputs();
  inference.mutable_outputs() = graph.outputs();
  KILN_RETURN_IF_ERROR(Verify(inference));
  return inference;
}

Result<Graph> Freeze(const Graph& graph, const std::map<std::string, Tensor>& variables,
                     const std::vector<std::string>& fetches) {
  if (fetches.empty())
    return MakeError(ErrorCode::kInvalidArgument, "freeze: nothing to keep (no fetches)");
  std::vector<GraphOutput> outputs;
  std::vector<std::string> stack;
  for (const std::string& f : fetches) {
    Result<TensorRef> ref = graph.ResolveTensor(f);
    if (!ref.ok()) return ref.error().WithContext("freeze: fetch '" + f + "'");
    outputs.push_back({f, *ref});
    stack.push_back(ref->node);
  }
  std::set<std::string> keep;
  while (!stack.empty()) {
    std::string name = stack.back();
    stack.pop_back();
    if (!keep.insert(name).second) continue;
    const Node* node = graph.FindNode(name);
    for (const TensorRef& in : node->inputs) stack.push_back(in.node);
    for (const std::string& c : node->control_inputs) stack.push_back(c);
  }
  Graph frozen;
  for (const Node& original : graph.nodes()) {
    if (!keep.count(original.name)) continue;
    Node node = original;
    node.output_types.clear();
    if (node.op.rfind("Assign", 0) == 0)
      return node.MakeNodeError(
          ErrorCode::kInvalidArgument,
          "is needed by the fetches but updates state; an inference graph cannot");
    if (node.op == "Variable") {
      auto it = variables.find(node.name);
      if (it == variables.end())
        return node.MakeNodeError(ErrorCode::kNotFound, "has no value in the checkpoint");
      const TensorType& type = original.output_types[0];
      if (it->second.dtype() != type.dtype || it->second.shape() != type.shape)
        return node.MakeNodeError(ErrorCode::kInvalidArgument, "is ", type.ToString(),
                                  " but the checkpoint holds ", DTypeName(it->second.dtype()),
                                  it->second.shape().ToString());
      node.op = "Constant";
      node.attrs = AttrMap();
      node.attrs.Set("value", it->second);
    }
    SetInferenceAttrs(node);
    KILN_RETURN_IF_ERROR(frozen.AddNode(std::move(node)).status());
  }
  for (const std::string& in : graph.inputs())
    if (keep.count(in)) frozen.mutable_inputs().push_back(in);
  frozen.mutable_outputs() = outputs;
  KILN_RETURN_IF_ERROR(Verify(frozen));
  return frozen;
}

}  // namespace kiln
