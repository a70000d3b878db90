#include "runtime/session.h"

#include <set>

#include "ir/verifier.h"
#include "runtime/checkpoint.h"
#include "runtime/distributed/broadcast_variables.h"
#include "runtime/distributed/collective_order.h"
#include "runtime/plugins.h"
#include "runtime/session_rewrite.h"

namespace kiln {
namespace {

Status CheckFeed(const std::string& name, const Node& node, const TensorType& expected,
                 const Tensor& t) {
  std::string what = node.op == "Placeholder" ? "placeholder '" + node.name + "'"
                                              : "tensor '" + name + "' of " + node.Describe();
  if (!t.valid())
    return MakeError(ErrorCode::kInvalidArgument, "feed '", name, "' is an empty tensor");
  if (t.dtype() != expected.dtype)
    return MakeError(ErrorCode::kInvalidArgument, "feed '", name, "' has dtype ",
                     DTypeName(t.dtype()), " but ", what, " expects ", DTypeName(expected.dtype));
  if (!expected.shape.IsCompatibleWith(t.shape()))
    return MakeError(ErrorCode::kInvalidArgument, "feed '", name, "' has shape ",
                     t.shape().ToString(), " but ", what, " expects ", expected.shape.ToString());
  return OkStatus();
}

}  // namespace

Session::Session(Graph graph, SessionOptions options)
    : graph_(std::move(graph)), options_(std::move(options)) {
  for (const std::string& plugin : options_.plugins) {
    status_ = LoadPlugin(plugin);
    if (!status_.ok()) return;
  }
  status_ = Verify(graph_);
  if (!status_.ok()) return;
  FillDefaultAttrs(graph_);
  if (options_.precision.enabled() || options_.check_numerics) {
    SessionGraphRewrite rewrite = RegisteredSessionGraphRewrite();
    if (!rewrite) {
      status_ = MakeError(ErrorCode::kUnimplemented,
                          options_.precision.enabled() ? "mixed precision" : "check_numerics",
                          " needs the graph passes: link kiln_session_passes");
      return;
    }
    status_ = rewrite(graph_, options_.precision, options_.check_numerics);
    if (status_.ok()) status_ = Verify(graph_);
    if (!status_.ok()) return;
  }
  Result<std::unique_ptr<Executor>> executor =
      CreateExecutor(options_.backend, ExecutorOptions{.threads = options_.threads,
                                                       .tf32 = options_.precision.tf32,
                                                       .memory_limit = options_.memory_limit,
                                                       .communicator = options_.distributed});
  if (!executor.ok()) {
    status_ = executor.error();
    return;
  }
  executor_ = std::move(*executor);
}

Result<RunPlan> Session::Plan(const FeedList& feeds, const std::vector<TensorName>& fetches,
                              const std::vector<TensorName>& targets) const {
  RunPlan plan;
  for (const auto& [name, tensor] : feeds) {
    Result<TensorRef> ref = graph_.ResolveTensor(name.str());
    if (!ref.ok())
      return MakeError(ErrorCode::kNotFound, "feed '", name.str(), "': ", ref.error().message());
    const Node* node = graph_.FindNode(ref->node);
    KILN_ASSIGN_OR_RETURN(TensorType expected, graph_.TypeOf(*ref));
    KILN_RETURN_IF_ERROR(CheckFeed(name.str(), *node, expected, tensor));
    if (!plan.feeds.emplace(*ref, tensor).second)
      return MakeError(ErrorCode::kInvalidArgument, "tensor '", ref->ToString(), "' is fed twice");
  }
  if (fetches.empty() && targets.empty())
    return MakeError(ErrorCode::kInvalidArgument,
                     "nothing to run: give at least one fetch or target");
  std::vector<std::string> roots;
  for (const TensorName& f : fetches) {
    Result<TensorRef> ref = graph_.ResolveTensor(f.str());
    if (!ref.ok())
      return MakeError(ErrorCode::kNotFound, "fetch '", f.str(), "': ", ref.error().message());
    KILN_RETURN_IF_ERROR(graph_.TypeOf(*ref).status());
    plan.fetches.push_back(*ref);
    if (!plan.feeds.count(*ref)) roots.push_back(ref->node);
  }
  for (const TensorName& t : targets) {
    Result<TensorRef> ref = graph_.ResolveTensor(t.str());
    if (!ref.ok())
      return MakeError(ErrorCode::kNotFound, "target '", t.str(), "': ", ref.error().message());
    roots.push_back(ref->node);
  }

  // Everything the roots need, stopping at fed tensors.
  std::set<std::string> needed;
  std::vector<std::string> stack = roots;
  while (!stack.empty()) {
    std::string name = std::move(stack.back());
    stack.pop_back();
    if (!needed.insert(name).second) continue;
    const Node* node = graph_.FindNode(name);
    for (const TensorRef& in : node->inputs)
      if (!plan.feeds.count(in)) stack.push_back(in.node);
    for (const std::string& c : node->control_inputs) stack.push_back(c);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, graph_.TopologicalOrder());
  for (const Node* node : order) {
    if (!needed.count(node->name)) continue;
    if (node->op == "Placeholder" && !plan.feeds.count(TensorRef{node->name, 0})) {
      std::string wanted;
      for (const TensorName& f : fetches) wanted += (wanted.empty() ? "'" : ", '") + f.str() + "'";
      for (const TensorName& t : targets) wanted += (wanted.empty() ? "'" : ", '") + t.str() + "'";
      return MakeError(ErrorCode::kInvalidArgument, "missing feed for placeholder '", node->name,
                       "' (", node->output_types[0].ToString(),
                       node->source.empty() ? "" : ", built at " + node->source,
                       "), needed to compute ", wanted);
    }
    plan.nodes.push_back(node);
  }
  StartCollectivesEarly(plan.nodes);
  return plan;
}

Result<std::vector<Tensor>> Session::Run(const FeedList& feeds,
                                         const std::vector<TensorName>& fetches,
                                         const std::vector<TensorName>& targets) {
  KILN_RETURN_IF_ERROR(status_);
  KILN_ASSIGN_OR_RETURN(RunPlan plan, Plan(feeds, fetches, targets));
  return executor_->Execute(plan, variables_);
}

}  // namespace kiln

namespace kiln {

Status Session::InitializeVariables() {
  std::vector<TensorName> variables;
  for (const Node& node : graph_.nodes())
    if (node.op == "Variable") variables.emplace_back(node.name);
  if (variables.empty()) return OkStatus();
  return Run({}, {}, variables).status();  // targets: nothing is copied out
}

Status Session::SaveCheckpoint(const std::string& path) {
  KILN_RETURN_IF_ERROR(InitializeVariables());
  KILN_RETURN_IF_ERROR(variables_.MaterializeAll());
  return WriteCheckpoint(path, variables_.values());
}

Status Session::RestoreCheckpoint(const std::string& path) {
  KILN_RETURN_IF_ERROR(status_);
  std::map<std::string, TensorType> expected;
  for (const Node& node : graph_.nodes())
    if (node.op == "Variable") expected[node.name] = node.output_types[0];
  KILN_ASSIGN_OR_RETURN(auto restored, ReadCheckpointFor(path, expected));
  for (auto& [name, tensor] : restored) variables_.Set(name, std::move(tensor));
  return OkStatus();
}

}  // namespace kiln

namespace kiln {

Status Session::BroadcastVariables(int root, const std::set<std::string>& only) {
  KILN_RETURN_IF_ERROR(status_);
  Communicator* comm = options_.distributed.get();
  if (!comm || comm->size() == 1) return OkStatus();
  KILN_RETURN_IF_ERROR(InitializeVariables());
  KILN_RETURN_IF_ERROR(variables_.MaterializeAll());
  return kiln::BroadcastVariables(*comm, variables_, root, only);
}

}  // namespace kiln
