// A step that runs one node's reference kernel on the plan's buffers: the compiled backend's way
// to run ops it does not lower yet (and stateful ones: Variable, Assign*), with exactly the
// reference semantics. Inputs are copied out of their buffers and outputs copied back. A plan is
// untrusted input (a module file): the step's node is verified against its buffers at load, as
// a graph's node is (its op's schema, attributes and type inference), so that the kernel finds
// what it reads.
#include <cstring>

#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "runtime/cpu/step.h"
#include "runtime/reference/kernel.h"

namespace kiln::cpu {
namespace {

class ReferenceStep : public StepRunner {
 public:
  ReferenceStep(const Step& step, const reference::KernelFn* kernel, AttrMap attrs)
      : step_(step), kernel_(kernel), attrs_(std::move(attrs)) {}

  Status Run(StepEnv& env) const override {
    const Executable& exe = *env.executable;
    std::vector<Tensor> inputs;
    for (int id : step_.inputs) {
      const BufferDesc& b = exe.buffers[id];
      if (b.kind == BufferDesc::Kind::kConstant) {
        inputs.push_back(exe.constants[b.index]);
        continue;
      }
      Tensor t = Tensor::Uninitialized(b.type.dtype, b.type.shape);  // copied in whole
      std::memcpy(t.raw_data(), env.data[id], b.bytes());
      inputs.push_back(std::move(t));
    }
    std::vector<TensorType> types;
    for (int id : step_.outputs) types.push_back(exe.buffers[id].type);
    reference::KernelContext ctx(
        step_.node, attrs_, std::move(inputs), types,
        reference::RunState{env.variables, env.counters, env.bodies, -1, env.communicator});
    for (size_t i = 0; i < types.size(); ++i)
      ctx.set_output(static_cast<int>(i), Tensor(types[i].dtype, types[i].shape));
    KILN_RETURN_IF_ERROR((*kernel_)(ctx));
    for (size_t i = 0; i < types.size(); ++i) {
      const Tensor& t = ctx.output(static_cast<int>(i));
      if (!t.valid() || t.dtype() != types[i].dtype || t.shape() != types[i].shape)
        return step_.node.MakeNodeError(
            ErrorCode::kInternal, "output ", i, " is ",
            t.valid() ? std::string(DTypeName(t.dtype())) + t.shape().ToString() : "missing",
            " but the compiled plan expects ", types[i].ToString());
      std::memcpy(env.data[step_.outputs[i]], t.raw_data(), t.byte_size());
    }
    return OkStatus();
  }

 private:
  const Step& step_;
  const reference::KernelFn* kernel_;
  AttrMap attrs_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeReferenceStep(const Step& step, const Executable& exe) {
  const OpDef* def = OpRegistry::Global().Find(step.node.op);
  const reference::KernelFn* kernel = reference::KernelRegistry::Global().Find(step.node.op);
  if (!def || !kernel)
    return step.node.MakeNodeError(ErrorCode::kUnimplemented, "no reference kernel for '",
                                   step.node.op, "'");
  // The node's inputs are the step's buffers, in order; its outputs must be what it infers.
  if (step.inputs.size() != step.node.inputs.size())
    return step.node.MakeNodeError(ErrorCode::kInvalidArgument, "its step reads ",
                                   step.inputs.size(), " buffers for ", step.node.inputs.size(),
                                   " inputs");
  std::vector<TensorType> input_types;
  std::vector<const Tensor*> input_values;
  for (int id : step.inputs) {
    const BufferDesc& b = exe.buffers[id];
    input_types.push_back(b.type);
    input_values.push_back(b.kind == BufferDesc::Kind::kConstant ? &exe.constants[b.index]
                                                                 : nullptr);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<TensorType> inferred,
                        InferNode(step.node, input_types, input_values));
  if (inferred.size() != step.outputs.size())
    return step.node.MakeNodeError(ErrorCode::kInvalidArgument, "its step writes ",
                                   step.outputs.size(), " buffers for ", inferred.size(),
                                   " outputs");
  for (size_t i = 0; i < inferred.size(); ++i) {
    const TensorType& buffer = exe.buffers[step.outputs[i]].type;
    if (inferred[i].dtype != buffer.dtype || !inferred[i].shape.IsCompatibleWith(buffer.shape))
      return step.node.MakeNodeError(ErrorCode::kInvalidArgument, "output ", i, " is ",
                                     inferred[i].ToString(), " but its step writes ",
                                     buffer.ToString());
  }
  // A collective starts its messages and lets the next steps run while they travel.
  if (step.node.op == "AllReduce")
    return MakeAllReduceStep(step, exe, def->WithDefaults(step.node.attrs));
  return std::unique_ptr<StepRunner>(
      new ReferenceStep(step, kernel, def->WithDefaults(step.node.attrs)));
}

}  // namespace kiln::cpu
