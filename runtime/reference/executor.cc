#include "runtime/reference/executor.h"

#include <algorithm>
#include <set>

#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "runtime/memory_budget.h"
#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

Status CheckOutputs(const Node& node, const std::vector<TensorType>& expected,
                    const std::vector<Tensor>& outputs) {
  for (size_t i = 0; i < expected.size(); ++i) {
    const Tensor& t = outputs[i];
    if (!t.valid())
      return node.MakeNodeError(ErrorCode::kInternal, "the reference kernel produced no output ",
                                i);
    if (t.dtype() != expected[i].dtype || !expected[i].shape.IsCompatibleWith(t.shape()))
      return node.MakeNodeError(ErrorCode::kInternal, "the reference kernel produced ",
                                DTypeName(t.dtype()), t.shape().ToString(), " for output ", i,
                                ", inference says ", expected[i].ToString());
  }
  return OkStatus();
}

// The bytes of a dense tensor of `type` (fully known), without overflow.
double DenseBytes(const TensorType& type) {
  double bytes = DTypeSize(type.dtype);
  for (int64_t d : type.shape.dims()) bytes *= static_cast<double>(d);
  return bytes;
}

}  // namespace

Result<std::vector<Tensor>> ReferenceExecutor::Execute(const RunPlan& plan,
                                                       VariableStore& variables) {
  VariableStore before = variables;  // values are replaced, never changed in place: cheap
  Result<std::vector<Tensor>> fetched = Run(plan, variables);
  if (!fetched.ok()) variables = std::move(before);
  return fetched;
}

Result<std::vector<Tensor>> ReferenceExecutor::Run(const RunPlan& plan, VariableStore& variables) {
  const MemoryBudget budget = HostBudget(memory_limit_);
  int64_t live = 0;  // bytes of the tensors this run allocated and still holds
  std::map<TensorRef, Tensor> values = plan.feeds;
  std::map<TensorRef, int> uses;  // remaining reads of each tensor by the nodes to run
  for (const Node* node : plan.nodes)
    for (const TensorRef& in : node->inputs) ++uses[in];
  const std::set<TensorRef> keep(plan.fetches.begin(), plan.fetches.end());  // fetches: never freed

  for (const Node* node : plan.nodes) {
    const OpDef* def = OpRegistry::Global().Find(node->op);
    const KernelFn* kernel = KernelRegistry::Global().Find(node->op);
    if (!def || !kernel)
      return node->MakeNodeError(ErrorCode::kUnimplemented,
                                 "the reference backend has no kernel for '", node->op, "'");
    std::vector<Tensor> inputs;
    std::vector<TensorType> types;
    std::vector<const Tensor*> ptrs;
    for (const TensorRef& in : node->inputs) {
      auto it = values.find(in);
      if (it == values.end())
        return node->MakeNodeError(ErrorCode::kInternal, "input '", in.ToString(),
                                   "' was not computed");
      inputs.push_back(it->second);
      types.push_back({it->second.dtype(), it->second.shape()});
    }
    for (const Tensor& t : inputs) ptrs.push_back(&t);
    KILN_ASSIGN_OR_RETURN(std::vector<TensorType> out_types, InferNode(*node, types, ptrs));
    AttrMap attrs = def->WithDefaults(node->attrs);
    KernelContext ctx(*node, attrs, std::move(inputs), out_types, RunState{&variables, &counters_});
    for (size_t i = 0; i < out_types.size(); ++i)
      if (out_types[i].shape.IsFullyKnown()) {
        const double bytes = DenseBytes(out_types[i]);
        if (static_cast<double>(live) + bytes > static_cast<double>(budget.bytes))
          return node->MakeNodeError(
              ErrorCode::kResourceExhausted, "output ", i, " ", out_types[i].ToString(), " needs ",
              FormatBytes(static_cast<int64_t>(std::min(bytes, 9e18))), "; with ",
              FormatBytes(live), " held by the run it would exceed the memory budget of ",
              budget.ToString());
        Result<Tensor> t = Tensor::Create(out_types[i].dtype, out_types[i].shape);
        if (!t.ok())
          return node->MakeNodeError(t.error().code(), "output ", i, ": ", t.error().message());
        ctx.set_output(static_cast<int>(i), std::move(*t));
      }
    KILN_RETURN_IF_ERROR((*kernel)(ctx));
    KILN_RETURN_IF_ERROR(CheckOutputs(*node, out_types, ctx.outputs()));
    for (size_t i = 0; i < ctx.outputs().size(); ++i) {
      live += ctx.outputs()[i].byte_size();
      values[TensorRef{node->name, static_cast<int>(i)}] = std::move(ctx.outputs()[i]);
    }
    for (const TensorRef& in : node->inputs)
      if (--uses[in] == 0 && !keep.count(in)) {
        auto it = values.find(in);
        if (it == values.end()) continue;
        if (!plan.feeds.count(in)) live -= it->second.byte_size();
        values.erase(it);
      }
  }
  std::vector<Tensor> fetched;
  for (const TensorRef& f : plan.fetches) {
    auto it = values.find(f);
    if (it == values.end())
      return MakeError(ErrorCode::kInternal, "fetch '", f.ToString(), "' was not computed");
    fetched.push_back(it->second);
  }
  return fetched;
}

Result<std::vector<Tensor>> EvaluateNode(const Node& node, const std::vector<Tensor>& inputs) {
  if (inputs.size() != node.inputs.size())
    return node.MakeNodeError(ErrorCode::kInternal, "has ", node.inputs.size(),
                              " inputs, evaluated with ", inputs.size(), " values");
  RunPlan single;
  single.nodes = {&node};
  for (size_t i = 0; i < inputs.size(); ++i) single.feeds[node.inputs[i]] = inputs[i];
  for (size_t i = 0; i < node.output_types.size(); ++i)
    single.fetches.push_back(TensorRef{node.name, static_cast<int>(i)});
  VariableStore no_variables;
  return ReferenceExecutor().Execute(single, no_variables);
}

}  // namespace kiln::reference
