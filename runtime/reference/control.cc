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

// Runs `body` on `args` and returns its results. A result that is one of the arguments (a loop
// variable the body passes through) is that argument, not fetched from the plan (no copy).
Result<std::vector<Tensor>> RunBody(const Graph& body, const std::vector<Tensor>& args,
                                    KernelContext& ctx) {
  if (args.size() != body.inputs().size())
    return ctx.Fail("a body takes ", body.inputs().size(), " argument(s), given ", args.size());
  KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, body.TopologicalOrder());
  RunPlan plan;
  std::map<std::string, size_t> arg_of;
  for (size_t i = 0; i < args.size(); ++i) {
    plan.feeds[TensorRef{body.inputs()[i], 0}] = args[i];
    arg_of[body.inputs()[i]] = i;
  }
  for (const Node* node : order)
    if (!plan.feeds.count(TensorRef{node->name, 0})) plan.nodes.push_back(node);
  std::vector<int> fetched(body.outputs().size(), -1);  // the result's fetch, or -1: an argument
  for (size_t r = 0; r < body.outputs().size(); ++r) {
    const TensorRef& out = body.outputs()[r].tensor;
    if (out.port == 0 && arg_of.count(out.node)) continue;
    fetched[r] = static_cast<int>(plan.fetches.size());
    plan.fetches.push_back(out);
  }
  std::vector<Tensor> results(body.outputs().size());
  VariableStore none;
  VariableStore& variables = ctx.state().variables ? *ctx.state().variables : none;
  if (!plan.fetches.empty()) {
    Executor* executor = ctx.state().bodies ? ctx.state().bodies(body) : nullptr;
    Result<std::vector<Tensor>> values =
        executor ? executor->Execute(plan, variables)
                 : ReferenceExecutor(ctx.state().memory_limit).Execute(plan, variables);
    if (!values.ok()) return values.error().WithContext(ctx.node().Describe());
    for (size_t r = 0; r < results.size(); ++r)
      if (fetched[r] >= 0) results[r] = std::move((*values)[fetched[r]]);
  }
  for (size_t r = 0; r < results.size(); ++r)
    if (fetched[r] < 0) results[r] = args[arg_of.at(body.outputs()[r].tensor.node)];
  return results;
}

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
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> results, RunBody(*branch, args, ctx));
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
  const int64_t limit = LoopIterationLimit();
  for (int64_t n = 0; max_iterations < 0 || n < max_iterations; ++n) {
    if (limit >= 0 && n >= limit)
      return ctx.Fail("ran ", limit, " iterations, the limit KILN_MAX_LOOP_ITERATIONS sets");
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> go, RunBody(*cond, vars, ctx));
    KILN_ASSIGN_OR_RETURN(bool again, Condition(go.at(0), ctx));
    if (!again) break;
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> next, RunBody(*body, vars, ctx));
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
