// The reference kernels of If and While (ir/ops/control.h): each branch or body runs as a plan of
// its own, reading and writing the run's variables: on the executor the run provides (a compiled
// backend's, which compiles each body once per shape and reuses it), else on a reference executor.
#include "ir/ops/control.h"

#include <cstdlib>
#include <map>

#include "runtime/reference/executor.h"
#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

// A body as a plan of its own, built once per kernel call and run once per iteration: its nodes
// in order, its fetches. A result that is one of the arguments (a loop variable the body passes
// through) is that argument, not fetched from the plan (no copy).
class BodyPlan {
 public:
  static Result<BodyPlan> Make(const Graph& body) {
    BodyPlan p;
    p.body_ = &body;
    KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, body.TopologicalOrder());
    std::map<std::string, int> arg_of;
    for (size_t i = 0; i < body.inputs().size(); ++i)
      arg_of[body.inputs()[i]] = static_cast<int>(i);
    for (const Node* node : order)
      if (!arg_of.count(node->name)) p.plan_.nodes.push_back(node);
    for (const GraphOutput& out : body.outputs()) {
      auto arg = arg_of.find(out.tensor.node);
      if (out.tensor.port == 0 && arg != arg_of.end()) {
        p.results_.push_back({-1, arg->second});
      } else {
        p.results_.push_back({static_cast<int>(p.plan_.fetches.size()), -1});
        p.plan_.fetches.push_back(out.tensor);
      }
    }
    return p;
  }

  // Gives each argument i with passes[i] a version that stays for every later Run (a loop's
  // invariants: the same bytes on every iteration), so that a compiled body keeps what it derives
  // from them (packed weights) instead of redoing it each iteration.
  void KeepArguments(const std::vector<bool>& passes) {
    for (size_t i = 0; i < passes.size() && i < body_->inputs().size(); ++i)
      if (passes[i])
        plan_.feed_versions[TensorRef{body_->inputs()[i], 0}] = VariableStore::NextVersion();
  }
  // Whether result i is argument i unchanged (a While body's loop invariant).
  std::vector<bool> PassesThrough() const {
    std::vector<bool> passes;
    for (size_t i = 0; i < results_.size(); ++i)
      passes.push_back(results_[i].arg == static_cast<int>(i));
    return passes;
  }

  // The body's results for `args`.
  Result<std::vector<Tensor>> Run(const std::vector<Tensor>& args, KernelContext& ctx) {
    const std::vector<std::string>& inputs = body_->inputs();
    if (args.size() != inputs.size())
      return ctx.Fail("a body takes ", inputs.size(), " argument(s), given ", args.size());
    for (size_t i = 0; i < args.size(); ++i) plan_.feeds[TensorRef{inputs[i], 0}] = args[i];
    std::vector<Tensor> values;
    if (!plan_.fetches.empty()) {
      VariableStore none;
      VariableStore& variables = ctx.state().variables ? *ctx.state().variables : none;
      Executor* executor = ctx.state().bodies ? ctx.state().bodies(*body_) : nullptr;
      Result<std::vector<Tensor>> fetched =
          executor ? executor->Execute(plan_, variables)
                   : ReferenceExecutor(ctx.state().memory_limit).Execute(plan_, variables);
      if (!fetched.ok()) return fetched.error().WithContext(ctx.node().Describe());
      values = std::move(*fetched);
    }
    std::vector<Tensor> results;
    for (const Source& r : results_)
      results.push_back(r.fetch >= 0 ? std::move(values[r.fetch]) : args[r.arg]);
    return results;
  }

 private:
  struct Source {
    int fetch;  // its index among the fetches, or -1
    int arg;    // else the argument it is
  };
  const Graph* body_ = nullptr;
  RunPlan plan_;
  std::vector<Source> results_;
};

Result<bool> Condition(const Tensor& t, KernelContext& ctx) {
  if (t.dtype() != DType::kBool || t.num_elements() != 1)
    return ctx.Fail("the condition must be a bool of one element, got ", t.Summary(0));
  return t.GetInt(0) != 0;
}

Status IfKernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(bool take_then, Condition(ctx.input(0), ctx));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> branch,
                        ctx.attrs().GetGraph(take_then ? "then_branch" : "else_branch"));
  std::vector<Tensor> args;
  for (int i = 1; i < ctx.num_inputs(); ++i) args.push_back(ctx.input(i));
  KILN_ASSIGN_OR_RETURN(BodyPlan plan, BodyPlan::Make(*branch));
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> results, plan.Run(args, ctx));
  for (size_t i = 0; i < results.size(); ++i)
    ctx.set_output(static_cast<int>(i), std::move(results[i]));
  return OkStatus();
}

// KILN_MAX_LOOP_ITERATIONS: a limit on every While's iterations, over which the loop is an error
// (for runs on untrusted models, such as the fuzz targets); unset: none but the op's own.
int64_t LoopIterationLimit() {
  static const int64_t limit = [] {
    const char* v = std::getenv("KILN_MAX_LOOP_ITERATIONS");
    return v && std::atoll(v) > 0 ? static_cast<int64_t>(std::atoll(v)) : int64_t{-1};
  }();
  return limit;
}

Status WhileKernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> cond, ctx.attrs().GetGraph("cond"));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> body, ctx.attrs().GetGraph("body"));
  KILN_ASSIGN_OR_RETURN(int64_t max_iterations, ctx.attrs().GetInt("max_iterations"));
  std::vector<Tensor> vars;
  for (int i = 0; i < ctx.num_inputs(); ++i) vars.push_back(ctx.input(i));
  KILN_ASSIGN_OR_RETURN(BodyPlan cond_plan, BodyPlan::Make(*cond));
  KILN_ASSIGN_OR_RETURN(BodyPlan body_plan, BodyPlan::Make(*body));
  body_plan.KeepArguments(body_plan.PassesThrough());
  const int64_t limit = LoopIterationLimit();
  for (int64_t n = 0; max_iterations < 0 || n < max_iterations; ++n) {
    if (limit >= 0 && n >= limit)
      return ctx.Fail("ran ", limit, " iterations, the limit KILN_MAX_LOOP_ITERATIONS sets");
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> go, cond_plan.Run(vars, ctx));
    KILN_ASSIGN_OR_RETURN(bool again, Condition(go.at(0), ctx));
    if (!again) break;
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> next, body_plan.Run(vars, ctx));
    for (size_t i = 0; i < vars.size(); ++i)
      if (next[i].dtype() != vars[i].dtype() || next[i].rank() != vars[i].rank())
        return ctx.Fail("iteration ", n, " turned loop variable ", i, " from ", vars[i].Summary(0),
                        " into ", next[i].Summary(0));
    vars = std::move(next);
  }
  for (size_t i = 0; i < vars.size(); ++i) ctx.set_output(static_cast<int>(i), std::move(vars[i]));
  return OkStatus();
}

}  // namespace

void RegisterControlKernels(KernelRegistry& r) {
  r.Register("If", IfKernel);
  r.Register("While", WhileKernel);
}

}  // namespace kiln::reference
