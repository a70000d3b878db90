#include "compiler/static_types.h"

#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "runtime/reference/executor.h"

namespace kiln::compiler {
namespace {

// Stateless computations on known values with outputs up to this size are evaluated at compile
// time (larger ones would make compiling slow and the constant pool big).
constexpr int64_t kMaxFoldedElements = 1 << 16;

constexpr const char* kContainersOnHost =
    " value: containers live on the host, so the plan runs on the reference executor";

bool AllOutputsSmall(const std::vector<TensorType>& types) {
  for (const TensorType& t : types)
    if (t.shape.NumElements() > kMaxFoldedElements) return false;
  return true;
}

}  // namespace

StaticInfo FeedsStaticInfo(const RunPlan& plan, const std::set<TensorRef>& known_feeds) {
  StaticInfo info;
  for (const auto& [ref, tensor] : plan.feeds) {
    info.types[ref] = TensorType{tensor.dtype(), tensor.shape()};
    if (known_feeds.count(ref)) info.values[ref] = tensor;
  }
  return info;
}

Result<StaticInfo> ResolveStaticTypes(const RunPlan& plan, const std::set<TensorRef>& known_feeds) {
  for (const auto& [ref, tensor] : plan.feeds)
    if (IsContainer(tensor.dtype()))
      return MakeError(ErrorCode::kUnimplemented, "feed '", ref.ToString(), "' is a ",
                       DTypeName(tensor.dtype()), kContainersOnHost);
  StaticInfo info = FeedsStaticInfo(plan, known_feeds);
  for (const Node* node : plan.nodes) KILN_RETURN_IF_ERROR(ResolveNode(*node, info));
  return info;
}

Status ResolveNode(const Node& node, StaticInfo& info) {
  std::vector<TensorType> in_types;
  std::vector<const Tensor*> in_values;
  bool all_known = true;
  for (const TensorRef& in : node.inputs) {
    auto type = info.types.find(in);
    if (type == info.types.end())
      return node.MakeNodeError(ErrorCode::kInternal, "input '", in.ToString(),
                                "' is neither fed nor computed before it");
    in_types.push_back(type->second);
    auto value = info.values.find(in);
    in_values.push_back(value == info.values.end() ? nullptr : &value->second);
    all_known &= value != info.values.end();
  }
  KILN_ASSIGN_OR_RETURN(std::vector<TensorType> out_types, InferNode(node, in_types, in_values));
  for (const std::vector<TensorType>* types : {&in_types, &out_types})
    for (const TensorType& t : *types)
      if (IsContainer(t.dtype))
        return node.MakeNodeError(ErrorCode::kUnimplemented, "it takes or gives a ",
                                  DTypeName(t.dtype), kContainersOnHost);
  for (size_t i = 0; i < out_types.size(); ++i) {
    if (!out_types[i].shape.IsFullyKnown())
      return node.MakeNodeError(ErrorCode::kUnimplemented, "output ", i, " has type ",
                                out_types[i].ToString(),
                                ": its shape depends on values computed at run time");
    info.types[TensorRef{node.name, static_cast<int>(i)}] = out_types[i];
  }
  const OpDef* def = OpRegistry::Global().Find(node.op);
  if (def && def->static_value) {
    const AttrMap attrs = def->WithDefaults(node.attrs);
    const InferContext context(node, attrs, in_types, in_values);
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> values, def->static_value(context));
    for (size_t i = 0; i < values.size(); ++i)
      info.values[TensorRef{node.name, static_cast<int>(i)}] = std::move(values[i]);
  } else if (all_known && def && !def->stateful && node.op != "Placeholder" &&
             node.control_inputs.empty() && AllOutputsSmall(out_types)) {
    std::vector<Tensor> inputs;
    for (const Tensor* v : in_values) inputs.push_back(*v);
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> values, reference::EvaluateNode(node, inputs));
    for (size_t i = 0; i < values.size(); ++i)
      info.values[TensorRef{node.name, static_cast<int>(i)}] = std::move(values[i]);
  }
  return OkStatus();
}

}  // namespace kiln::compiler
