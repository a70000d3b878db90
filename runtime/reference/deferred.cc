// The reference kernel of Deferred (ir/ops/deferred.h): the node is converted with every input's
// value known, and its expansion runs as a plan of its own on the reference executor.
#include "ir/ops/deferred.h"

#include "runtime/reference/executor.h"
#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

Status DeferredKernel(KernelContext& ctx) {
  std::vector<TensorType> types;
  std::vector<const Tensor*> values;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    types.push_back({ctx.input(i).dtype(), ctx.input(i).shape()});
    values.push_back(&ctx.input(i));
  }
  KILN_ASSIGN_OR_RETURN(DeferredExpansion expansion, ExpandDeferred(ctx.node(), types, values));
  KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, expansion.graph.TopologicalOrder());
  RunPlan plan;
  for (int i = 0; i < ctx.num_inputs(); ++i)
    plan.feeds[TensorRef{DeferredInputName(i), 0}] = ctx.input(i);
  for (const Node* node : order)
    if (!plan.feeds.count(TensorRef{node->name, 0})) plan.nodes.push_back(node);
  plan.fetches = expansion.outputs;
  // The expansion holds no variables (it is one converted node); its random streams, if any,
  // start afresh on every run.
  VariableStore none;
  Result<std::vector<Tensor>> outputs =
      ReferenceExecutor(ReferenceExecutor::kUnbudgeted).Execute(plan, none);
  if (!outputs.ok()) return outputs.error().WithContext(ctx.node().Describe());
  for (size_t i = 0; i < outputs->size(); ++i)
    ctx.set_output(static_cast<int>(i), std::move((*outputs)[i]));
  return OkStatus();
}

}  // namespace

void RegisterDeferredKernels(KernelRegistry& r) { r.Register("Deferred", DeferredKernel); }

}  // namespace kiln::reference
