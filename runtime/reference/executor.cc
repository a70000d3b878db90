#include "runtime/reference/executor.h"

#include <algorithm>
#include <limits>
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
  std::map<std::string, uint64_t> counters = counters_;
  Result<std::vector<Tensor>> fetched = Run(plan, variables);
  if (!fetched.ok()) {
    variables = std::move(before);
    counters_ = std::move(counters);
  }
  return fetched;
}

Result<std::vector<Tensor>> ReferenceExecutor::Run(const RunPlan& plan, VariableStore& variables) {
  const MemoryBudget budget = memory_limit_ < 0
                                  ? MemoryBudget{std::numeric_limits<int64_t>::max(), true, "none"}
                                  : HostBudget(memory_limit_);
  int64_t live = 0;                    // bytes of the tensors this run allocated and still holds
  std::map<TensorRef, int64_t> owned;  // of them, each value's
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
    KernelContext ctx(
        *node, attrs, std::move(inputs), out_types,
        RunState{&variables, &counters_, nullptr, memory_limit_, communicator_.get()});
    double outputs_bytes = 0;  // of this node's outputs allocated so far
    for (size_t i = 0; i < out_types.size(); ++i)
      if (out_types[i].shape.IsFullyKnown() && !IsContainer(out_types[i].dtype)) {
        const double bytes = DenseBytes(out_types[i]);
        outputs_bytes += bytes;
        if (static_cast<double>(live) + outputs_bytes > static_cast<double>(budget.bytes))
          return node->MakeNodeError(
              ErrorCode::kResourceExhausted, "output ", i, " ", out_types[i].ToString(), " needs ",
              FormatBytes(static_cast<int64_t>(std::min(bytes, 9e18))), "; with ",
              FormatBytes(live + static_cast<int64_t>(outputs_bytes - bytes)),
              " held by the run it would exceed the memory budget of ", budget.ToString());
        Result<Tensor> t = Tensor::Create(out_types[i].dtype, out_types[i].shape);
        if (!t.ok())
          return node->MakeNodeError(t.error().code(), "output ", i, ": ", t.error().message());
        ctx.set_output(static_cast<int>(i), std::move(*t));
      }
    KILN_RETURN_IF_ERROR((*kernel)(ctx));
    KILN_RETURN_IF_ERROR(CheckOutputs(*node, out_types, ctx.outputs()));
    const Tensor* stored = variables.Find(node->name);
    for (size_t i = 0; i < ctx.outputs().size(); ++i) {
      const Tensor& out = ctx.outputs()[i];
      // An output on an input's bytes (Identity) or on its variable's stored value (a
      // Variable's read) holds no bytes of its own; an Assign's new value is new bytes.
      bool aliases = stored && stored->raw_data() == out.raw_data();
      for (int k = 0; k < ctx.num_inputs(); ++k)
        aliases = aliases || ctx.input(k).raw_data() == out.raw_data();
      const TensorRef ref{node->name, static_cast<int>(i)};
      if (!aliases && out.byte_size() > 0) live += owned[ref] = out.byte_size();
      values[ref] = std::move(ctx.outputs()[i]);
    }
    for (const TensorRef& in : node->inputs)
      if (--uses[in] == 0 && !keep.count(in)) {
        values.erase(in);
        if (auto it = owned.find(in); it != owned.end()) {
          live -= it->second;
          owned.erase(it);
        }
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
  return ReferenceExecutor(ReferenceExecutor::kUnbudgeted).Execute(single, no_variables);
}

}  // namespace kiln::reference
