#include "passes/constant_fold.h"

#include <list>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "passes/graph_edit.h"

namespace kiln {
namespace {

Node MakeConstant(std::string name, const Node& origin, Tensor value) {
  Node c;
  c.name = std::move(name);
  c.op = "Constant";
  c.device = origin.device;
  c.source = origin.source;
  c.output_types = {TensorType{value.dtype(), value.shape()}};
  c.attrs.Set("value", std::move(value));
  return c;
}

class Folder {
 public:
  Folder(Graph& graph, const ConstantEvaluator& evaluate, int64_t max_elements)
      : graph_(graph), evaluate_(evaluate), max_elements_(max_elements) {
    for (const Node& node : graph.nodes())
      control_targets_.insert(node.control_inputs.begin(), node.control_inputs.end());
  }

  Result<bool> Run() {
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> order, TopologicalNames(graph_));
    bool changed = false;
    for (const std::string& name : order) {
      Node* node = graph_.FindNode(name);
      rewirer_.Apply(*node);
      if (!Foldable(*node)) continue;
      std::optional<std::vector<Tensor>> values = Evaluate(*node);
      if (!values) continue;
      if (values->size() == 1) {
        *node = MakeConstant(node->name, *node, std::move(values->front()));
      } else {
        for (size_t port = 0; port < values->size(); ++port) {
          std::string folded = UniqueName(node->name + "/folded_" + std::to_string(port));
          added_.push_back(MakeConstant(folded, *node, std::move((*values)[port])));
          pending_[TensorRef{folded, 0}] = &added_.back().attrs.Find("value")->get<Tensor>();
          rewirer_.ReplaceTensor(TensorRef{node->name, static_cast<int>(port)},
                                 TensorRef{folded, 0});
        }
      }
      changed = true;
    }
    for (Node& c : added_) KILN_RETURN_IF_ERROR(graph_.AddNode(std::move(c)).status());
    rewirer_.Finish(graph_);
    return changed;
  }

 private:
  bool Foldable(const Node& node) const {
    if (node.op == "Constant" || IsPinned(graph_, node) || !node.control_inputs.empty() ||
        node.output_types.empty())
      return false;
    if (node.output_types.size() > 1 && control_targets_.count(node.name)) return false;
    for (const TensorType& t : node.output_types)
      if (IsContainer(t.dtype) || !t.shape.IsFullyKnown() || t.shape.NumElements() > max_elements_)
        return false;
    return true;
  }

  // The outputs when every input is constant and evaluation succeeds with the inferred types.
  std::optional<std::vector<Tensor>> Evaluate(const Node& node) const {
    std::vector<Tensor> inputs;
    for (const TensorRef& in : node.inputs) {
      const Tensor* value = ConstantValue(graph_, in);
      if (auto it = pending_.find(in); !value && it != pending_.end()) value = it->second;
      if (!value) return std::nullopt;
      inputs.push_back(*value);
    }
    Result<std::vector<Tensor>> outputs = evaluate_(node, inputs);
    if (!outputs.ok() || outputs->size() != node.output_types.size()) return std::nullopt;
    for (size_t i = 0; i < outputs->size(); ++i)
      if (!(TensorType{(*outputs)[i].dtype(), (*outputs)[i].shape()} == node.output_types[i]))
        return std::nullopt;
    return std::move(*outputs);
  }

  std::string UniqueName(const std::string& base) {
    std::string name = base;
    for (int i = 1; graph_.FindNode(name) || !taken_.insert(name).second; ++i)
      name = base + "_" + std::to_string(i);
    return name;
  }

  Graph& graph_;
  const ConstantEvaluator& evaluate_;
  int64_t max_elements_;
  std::set<std::string> control_targets_;  // nodes some node has as a control input
  Rewirer rewirer_;
  std::list<Node> added_;                       // folded outputs of multi-output nodes
  std::map<TensorRef, const Tensor*> pending_;  // their values, until they are added
  std::set<std::string> taken_;                 // their names
};

}  // namespace

Result<bool> ConstantFolding::Run(Graph& graph) {
  if (!evaluate_)
    return MakeError(ErrorCode::kFailedPrecondition,
                     "constant-fold has no evaluator (see passes/constant_fold.h)");
  return Folder(graph, evaluate_, max_elements_).Run();
}

}  // namespace kiln
