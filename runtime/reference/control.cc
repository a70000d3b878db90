// The reference kernels of If and While (ir/ops/control.h): each branch or body runs as a plan of
// its own on the reference executor, reading and writing the run's variables.
#include "ir/ops/control.h"

#include "runtime/reference/executor.h"
#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

// Runs `body` on `args` and returns its results.
Result<std::vector<Tensor>> RunBody(const Graph& body, const std::vector<Tensor>& args,
                                    KernelContext& ctx) {
  if (args.size() != body.inputs().size())
    return ctx.Fail("a body takes ", body.inputs().size(), " argument(s), given ", args.size());
  KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, body.TopologicalOrder());
  RunPlan plan;
  for (size_t i = 0; i < args.size(); ++i) plan.feeds[TensorRef{body.inputs()[i], 0}] = args[i];
  for (const Node* node : order)
    if (!plan.feeds.count(TensorRef{node->name, 0})) plan.nodes.push_back(node);
  for (const GraphOutput& out : body.outputs()) plan.fetches.push_back(out.tensor);
  VariableStore none;
  VariableStore& variables = ctx.state().variables ? *ctx.state().variables : none;
  Result<std::vector<Tensor>> results =
      ReferenceExecutor(ReferenceExecutor::kUnbudgeted).Execute(plan, variables);
  if (!results.ok()) return results.error().WithContext(ctx.node().Describe());
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

Status WhileKernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> cond, ctx.attrs().GetGraph("cond"));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> body, ctx.attrs().GetGraph("body"));
  KILN_ASSIGN_OR_RETURN(int64_t max_iterations, ctx.attrs().GetInt("max_iterations"));
  std::vector<Tensor> vars;
  for (int i = 0; i < ctx.num_inputs(); ++i) vars.push_back(ctx.input(i));
  for (int64_t n = 0; max_iterations < 0 || n < max_iterations; ++n) {
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
