#include "compiler/deferred_expansion.h"

#include <map>

#include "compiler/static_types.h"
#include "ir/ops/deferred.h"

namespace kiln::compiler {
namespace {

// Splices expansions into a plan under construction.
class Splicer {
 public:
  Splicer(const RunPlan& plan, ExpandedPlan& out) : out_(out) {
    for (const Node* node : plan.nodes) taken_.insert(node->name);
    for (const auto& [ref, tensor] : plan.feeds) taken_.insert(ref.node);
  }

  // `node` with its inputs rewired to earlier expansions (itself when none of them is).
  const Node* Rewired(const Node* node) {
    bool changed = false;
    for (const TensorRef& in : node->inputs) changed = changed || replaced_.count(in);
    for (const std::string& c : node->control_inputs) changed = changed || producers_.count(c);
    if (!changed) return node;
    auto copy = std::make_unique<Node>(*node);
    for (TensorRef& in : copy->inputs)
      if (auto it = replaced_.find(in); it != replaced_.end()) in = it->second;
    copy->control_inputs = RewiredControls(copy->control_inputs);
    out_.nodes.push_back(std::move(copy));
    return out_.nodes.back().get();
  }

  // Appends `expansion` of `deferred` (already rewired) to the plan; returns the new nodes.
  Result<std::vector<const Node*>> Splice(const Node& deferred,
                                          const DeferredExpansion& expansion) {
    KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, expansion.graph.TopologicalOrder());
    std::map<std::string, TensorRef> inputs;  // Placeholder name -> the deferred node's input
    for (size_t i = 0; i < deferred.inputs.size(); ++i)
      inputs[DeferredInputName(static_cast<int>(i))] = deferred.inputs[i];
    std::map<std::string, std::string> names;  // expansion name -> plan name
    auto map_ref = [&](const TensorRef& r) {
      if (auto it = inputs.find(r.node); it != inputs.end()) return it->second;
      return TensorRef{names.at(r.node), r.port};
    };
    std::vector<const Node*> added;
    for (const Node* e : order) {
      if (inputs.count(e->name)) continue;
      auto node = std::make_unique<Node>(*e);
      node->name = UniqueName(deferred.name + "/expanded/" + e->name);
      names[e->name] = node->name;
      for (TensorRef& in : node->inputs) in = map_ref(in);
      std::vector<std::string> controls;
      for (const std::string& c : node->control_inputs) {
        if (auto it = inputs.find(c); it != inputs.end())
          controls.push_back(it->second.node);
        else
          controls.push_back(names.at(c));
      }
      node->control_inputs = std::move(controls);
      if (node->device.empty()) node->device = deferred.device;
      added.push_back(node.get());
      out_.nodes.push_back(std::move(node));
    }
    std::vector<std::string>& producers = producers_[deferred.name];
    for (size_t i = 0; i < expansion.outputs.size(); ++i) {
      const TensorRef to = map_ref(expansion.outputs[i]);
      replaced_[TensorRef{deferred.name, static_cast<int>(i)}] = to;
      producers.push_back(to.node);
    }
    return added;
  }

  void RewireFetches(RunPlan& plan) const {
    for (TensorRef& f : plan.fetches)
      if (auto it = replaced_.find(f); it != replaced_.end()) f = it->second;
  }

 private:
  std::string UniqueName(const std::string& base) {
    std::string name = base;
    for (int k = 1; taken_.count(name); ++k) name = base + "_" + std::to_string(k);
    taken_.insert(name);
    return name;
  }

  // A control dependency on an expanded node becomes one on what computes its outputs.
  std::vector<std::string> RewiredControls(const std::vector<std::string>& controls) const {
    std::vector<std::string> out;
    for (const std::string& c : controls) {
      auto it = producers_.find(c);
      if (it == producers_.end())
        out.push_back(c);
      else
        out.insert(out.end(), it->second.begin(), it->second.end());
    }
    return out;
  }

  ExpandedPlan& out_;
  std::set<std::string> taken_;
  std::map<TensorRef, TensorRef> replaced_;  // a Deferred output -> its expansion's
  std::map<std::string, std::vector<std::string>> producers_;  // a Deferred node -> its outputs'
};

}  // namespace

Result<ExpandedPlan> ExpandDeferredNodes(const RunPlan& plan,
                                         const std::set<TensorRef>& known_feeds) {
  ExpandedPlan out;
  out.plan = plan;
  bool any = false;
  for (const Node* node : plan.nodes) any = any || node->op == "Deferred";
  if (!any) return out;
  out.plan.nodes.clear();
  Splicer splicer(plan, out);
  StaticInfo info = FeedsStaticInfo(plan, known_feeds);
  bool resolving = true;  // every node so far has static types
  for (const Node* given : plan.nodes) {
    const Node* node = splicer.Rewired(given);
    if (resolving && node->op == "Deferred") {
      std::vector<TensorType> types;
      std::vector<const Tensor*> values;
      for (const TensorRef& in : node->inputs) {
        types.push_back(info.types.at(in));
        auto value = info.values.find(in);
        values.push_back(value == info.values.end() ? nullptr : &value->second);
      }
      Result<DeferredExpansion> expansion = ExpandDeferred(*node, types, values);
      if (expansion.ok()) {
        KILN_ASSIGN_OR_RETURN(std::vector<const Node*> added, splicer.Splice(*node, *expansion));
        out.changes.push_back(node->Describe() + " -> " + std::to_string(added.size()) +
                              " node(s)");
        for (const Node* a : added) {
          out.plan.nodes.push_back(a);
          if (resolving && !ResolveNode(*a, info).ok()) resolving = false;
        }
        continue;
      }
      if (expansion.error().code() != ErrorCode::kUnimplemented) return expansion.error();
    }
    out.plan.nodes.push_back(node);
    if (resolving && !ResolveNode(*node, info).ok()) resolving = false;
  }
  splicer.RewireFetches(out.plan);
  return out;
}

Status CheckStatic(const RunPlan& plan, const std::set<TensorRef>& known_feeds) {
  KILN_ASSIGN_OR_RETURN(ExpandedPlan expanded, ExpandDeferredNodes(plan, known_feeds));
  return ResolveStaticTypes(expanded.plan, known_feeds).status();
}

}  // namespace kiln::compiler
