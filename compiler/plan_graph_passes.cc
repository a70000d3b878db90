#include "compiler/plan_graph_passes.h"

#include <cstdlib>
#include <set>

#include "passes/pass_manager.h"

namespace kiln::compiler {
namespace {

bool Disabled() {
  static const bool disabled = [] {
    const char* env = std::getenv("KILN_GRAPH_PASSES");
    return env && std::string(env) == "0";
  }();
  return disabled;
}

}  // namespace

Result<OptimizedPlan> OptimizePlanGraph(const RunPlan& given, bool fold_batch_norm) {
  OptimizedPlan out;
  out.plan = given;
  if (Disabled() || given.nodes.empty()) return out;
  std::set<std::string> running;
  for (const Node* node : given.nodes) running.insert(node->name);
  auto graph = std::make_shared<Graph>();
  for (const auto& [ref, tensor] : given.feeds) {
    if (running.count(ref.node) || ref.port != 0) return out;  // not representable: unchanged
    if (graph->FindNode(ref.node)) continue;
    Node placeholder;
    placeholder.name = ref.node;
    placeholder.op = "Placeholder";
    placeholder.attrs.Set("dtype", tensor.dtype());
    placeholder.attrs.Set("shape", tensor.shape());
    KILN_RETURN_IF_ERROR(graph->AddNode(std::move(placeholder)).status());
    graph->mutable_inputs().push_back(ref.node);
  }
  for (const Node* node : given.nodes) KILN_RETURN_IF_ERROR(graph->AddNode(*node).status());
  for (size_t i = 0; i < given.fetches.size(); ++i)
    graph->mutable_outputs().push_back(GraphOutput{"fetch " + std::to_string(i), given.fetches[i]});
  // What the plan runs for its targets rather than its fetches stays (dce would drop a target
  // that has outputs nobody fetches): such nodes are pinned as update ops.
  std::set<std::string> for_fetches;
  std::vector<std::string> stack;
  for (const TensorRef& f : given.fetches) stack.push_back(f.node);
  while (!stack.empty()) {
    const std::string name = std::move(stack.back());
    stack.pop_back();
    const Node* node = graph->FindNode(name);
    if (!node || !for_fetches.insert(name).second) continue;
    for (const TensorRef& in : node->inputs) stack.push_back(in.node);
    for (const std::string& c : node->control_inputs) stack.push_back(c);
  }
  for (const Node* node : given.nodes)
    if (!for_fetches.count(node->name)) graph->mutable_update_ops().push_back(node->name);

  std::vector<std::string> passes = {"simplify", "conv-taps", "cse", "dce"};
  if (fold_batch_norm) passes.insert(passes.begin() + 1, "fold-batch-norm");
  Result<std::vector<PassRun>> runs = RunPasses(*graph, passes);
  if (!runs.ok()) {  // the plan compiles as it was; kiln inspect --fusion says why
    out.changes.push_back("not run: " + runs.error().message());
    return out;
  }
  size_t nodes = given.nodes.size() + graph->inputs().size();
  for (const PassRun& run : *runs) {
    if (run.changed)
      out.changes.push_back(run.pass + ": " + std::to_string(nodes) + " -> " +
                            std::to_string(run.nodes) + " nodes");
    nodes = run.nodes;
  }
  if (out.changes.empty()) return out;  // the given plan, as it was

  KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, graph->TopologicalOrder());
  std::set<std::string> fed;
  for (const auto& [ref, tensor] : given.feeds) fed.insert(ref.node);
  out.plan.nodes.clear();
  for (const Node* node : order)
    if (!fed.count(node->name)) out.plan.nodes.push_back(node);
  out.plan.fetches.clear();
  for (const GraphOutput& o : graph->outputs()) out.plan.fetches.push_back(o.tensor);
  out.graph = std::move(graph);
  return out;
}

}  // namespace kiln::compiler
