#include "ir/ops/deferred.h"

#include <map>
#include <mutex>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {
namespace {

std::mutex& ExpandersMutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::string, DeferredExpander>& Expanders() {
  static auto* expanders = new std::map<std::string, DeferredExpander>();
  return *expanders;
}

Status InferDeferred(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<TensorType> declared, DeclaredDeferredTypes(ctx.node()));
  for (TensorType& t : declared) ctx.AddOutput(t.dtype, std::move(t.shape));
  return OkStatus();
}

Status DeferredGradient(GradContext& ctx) {
  return ctx.node().MakeNodeError(
      ErrorCode::kUnimplemented,
      "has no gradient: it is converted only when the values it needs are known (a fed input "
      "that decides a shape); make those inputs constants to differentiate it");
}

}  // namespace

std::string DeferredInputName(int i) { return "input_" + std::to_string(i); }

void RegisterDeferredExpander(const std::string& name, DeferredExpander expander) {
  std::lock_guard<std::mutex> lock(ExpandersMutex());
  Expanders()[name] = std::move(expander);
}

Result<std::vector<TensorType>> DeclaredDeferredTypes(const Node& node) {
  const AttrMap& a = node.attrs;
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> dtypes, a.GetStrings("output_dtypes"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ranks, a.GetInts("output_ranks"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, a.GetInts("output_dims"));
  if (dtypes.empty() || ranks.size() != dtypes.size())
    return node.MakeNodeError(ErrorCode::kInvalidArgument, "declares ", dtypes.size(),
                              " output dtype(s) and ", ranks.size(),
                              " rank(s); expected one or more of each, as many of both");
  std::vector<TensorType> types;
  size_t next = 0;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    std::optional<DType> dtype = DTypeFromName(dtypes[i]);
    if (!dtype || *dtype == DType::kInvalid)
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "output ", i,
                                " declares the unknown dtype '", dtypes[i], "'");
    if (ranks[i] < 0 || ranks[i] > 64 || dims.size() - next < static_cast<size_t>(ranks[i]))
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "output ", i, " declares rank ",
                                ranks[i], " with ", dims.size() - next, " dim(s) left");
    std::vector<int64_t> shape(dims.begin() + static_cast<std::ptrdiff_t>(next),
                               dims.begin() + static_cast<std::ptrdiff_t>(next + ranks[i]));
    next += static_cast<size_t>(ranks[i]);
    for (int64_t d : shape)
      if (d < kUnknownDim)
        return node.MakeNodeError(ErrorCode::kInvalidArgument, "output ", i, " declares the dim ",
                                  d);
    types.push_back({*dtype, Shape(std::move(shape))});
  }
  if (next != dims.size())
    return node.MakeNodeError(ErrorCode::kInvalidArgument, "declares ", dims.size(),
                              " output dims, its ranks add up to ", next);
  return types;
}

Result<DeferredExpansion> ExpandDeferred(const Node& node, const std::vector<TensorType>& types,
                                         const std::vector<const Tensor*>& values) {
  KILN_ASSIGN_OR_RETURN(std::string name, node.attrs.GetString("expander"));
  DeferredExpander expander;
  {
    std::lock_guard<std::mutex> lock(ExpandersMutex());
    auto it = Expanders().find(name);
    if (it != Expanders().end()) expander = it->second;
  }
  if (!expander)
    return node.MakeNodeError(ErrorCode::kUnimplemented, "needs the '", name,
                              "' frontend to convert it, which this program does not link");
  KILN_ASSIGN_OR_RETURN(std::vector<TensorType> declared, DeclaredDeferredTypes(node));
  KILN_ASSIGN_OR_RETURN(DeferredExpansion expansion, expander(node, types, values));
  if (expansion.outputs.size() != declared.size())
    return node.MakeNodeError(ErrorCode::kInvalidArgument, "was converted into ",
                              expansion.outputs.size(), " output(s); it declares ",
                              declared.size());
  for (size_t i = 0; i < declared.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(TensorType got, expansion.graph.TypeOf(expansion.outputs[i]));
    if (!internal::TypesAgree(declared[i], got))
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "output ", i, " was converted into ",
                                got.ToString(), ", but the node declares ", declared[i].ToString());
  }
  return expansion;
}

std::vector<Value> Deferred(GraphBuilder& g, const std::string& expander,
                            const std::string& source_node, int64_t version,
                            const std::vector<Value>& inputs,
                            const std::vector<TensorType>& output_types, SourceLocation loc) {
  AttrMap a;
  a.Set("expander", expander);
  a.Set("source_node", source_node);
  a.Set("version", version);
  std::vector<std::string> dtypes;
  std::vector<int64_t> ranks, dims;
  for (const TensorType& t : output_types) {
    dtypes.emplace_back(DTypeName(t.dtype));
    ranks.push_back(t.shape.rank());
    dims.insert(dims.end(), t.shape.dims().begin(), t.shape.dims().end());
  }
  a.Set("output_dtypes", std::move(dtypes));
  a.Set("output_ranks", std::move(ranks));
  a.Set("output_dims", std::move(dims));
  return internal::MakeOpN("Deferred", inputs, std::move(a), loc, output_types.size());
}

void RegisterDeferredOps(OpRegistry& r) {
  r.Register(OpDefBuilder("Deferred", "control")
                 .VariadicInput("inputs", "")
                 .VariadicOutput("outputs")
                 .RequiredAttr("expander", AttrType::kString)
                 .RequiredAttr("source_node", AttrType::kString)
                 .Attr("version", AttrType::kInt, int64_t{0})
                 .RequiredAttr("output_dtypes", AttrType::kStrings)
                 .RequiredAttr("output_ranks", AttrType::kInts)
                 .RequiredAttr("output_dims", AttrType::kInts)
                 .Infer(InferDeferred)
                 .Grad(DeferredGradient)
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
}

}  // namespace kiln
