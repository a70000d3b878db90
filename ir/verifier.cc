#include "ir/verifier.h"

#include <algorithm>
#include <set>

#include "ir/checked_math.h"
#include "ir/utf8.h"

namespace kiln {
namespace {

std::string DTypeList(const std::vector<DType>& types) {
  std::string s;
  for (DType t : types) s += (s.empty() ? "" : ", ") + std::string(DTypeName(t));
  return "{" + s + "}";
}

Status CheckArity(const OpDef& def, const Node& node) {
  int fixed = static_cast<int>(def.inputs.size());
  bool variadic = !def.inputs.empty() && def.inputs.back().variadic;
  int given = static_cast<int>(node.inputs.size());
  int required = fixed;
  while (required > 0 && def.inputs[required - 1].optional) --required;
  if (required < fixed) {
    if (given >= required && given <= fixed) return OkStatus();
    return node.MakeNodeError(ErrorCode::kInvalidArgument, "expects ", required, " to ", fixed,
                              " inputs, got ", given);
  }
  if (variadic ? given < fixed : given != fixed) {
    return node.MakeNodeError(ErrorCode::kInvalidArgument, "expects ", variadic ? "at least " : "",
                              fixed, " input(s), got ", given);
  }
  return OkStatus();
}

Status CheckDTypes(const OpDef& def, const Node& node, const std::vector<TensorType>& inputs) {
  std::map<std::string, std::pair<DType, int>> bound;  // type var -> (dtype, first input index)
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& spec = def.inputs[std::min(i, def.inputs.size() - 1)];
    if (spec.type_var.empty()) continue;  // any dtype, independent of the other inputs
    DType t = inputs[i].dtype;
    auto allowed = def.type_constraints.find(spec.type_var);
    if (allowed != def.type_constraints.end() &&
        std::find(allowed->second.begin(), allowed->second.end(), t) == allowed->second.end()) {
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "input ", i, " ('", spec.name,
                                "', from '", node.inputs[i].ToString(), "') has dtype ",
                                DTypeName(t), ", expected one of ", DTypeList(allowed->second));
    }
    auto [it, inserted] = bound.emplace(spec.type_var, std::make_pair(t, static_cast<int>(i)));
    if (!inserted && it->second.first != t) {
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "input ", i, " ('", spec.name,
                                "') has dtype ", DTypeName(t), " but input ", it->second.second,
                                " has ", DTypeName(it->second.first), "; they must match");
    }
  }
  return OkStatus();
}

Status CheckAttrs(const OpDef& def, const Node& node) {
  for (const auto& [name, value] : node.attrs.items()) {
    const AttrSpec* spec = def.FindAttr(name);
    if (!spec)
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "unknown attribute '", name, "'");
    if (spec->type != value.type())
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "attribute '", name, "' is ",
                                AttrTypeName(value.type()), ", expected ",
                                AttrTypeName(spec->type));
    // "No dtype" is a value only where the schema's default is (e.g. MatMul's out_dtype unset).
    const bool unset_allowed = spec->default_value &&
                               spec->default_value->type() == AttrType::kDType &&
                               spec->default_value->get<DType>() == DType::kInvalid;
    if (value.type() == AttrType::kDType && value.get<DType>() == DType::kInvalid && !unset_allowed)
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "attribute '", name,
                                "' holds no dtype (DT_INVALID)");
  }
  for (const AttrSpec& spec : def.attrs)
    if (!spec.default_value && !node.attrs.Has(spec.name))
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "missing required attribute '",
                                spec.name, "' (", AttrTypeName(spec.type), ")");
  return OkStatus();
}

// The node's name, device and string attributes are valid UTF-8, and so are those of the nodes and
// output names of its bodies (If, While): kiln's files keep them in protobuf string fields, which
// a reader refuses otherwise (ir/utf8.h). A node's source only informs: the writer escapes it.
Status CheckUtf8(const Node& node) {
  const auto check = [&](std::string_view what, std::string_view s) -> Status {
    const int64_t at = FirstInvalidUtf8(s);
    if (at < 0) return OkStatus();
    return node.MakeNodeError(ErrorCode::kInvalidArgument, what, " is not valid UTF-8 (byte ", at,
                              " of ", s.size(), ")");
  };
  KILN_RETURN_IF_ERROR(check("its name", node.name));
  KILN_RETURN_IF_ERROR(check("its device", node.device));
  for (const auto& [name, value] : node.attrs.items()) {
    if (value.type() == AttrType::kString)
      KILN_RETURN_IF_ERROR(check("attribute '" + name + "'", value.get<std::string>()));
    if (value.type() == AttrType::kStrings)
      for (const std::string& s : value.get<std::vector<std::string>>())
        KILN_RETURN_IF_ERROR(check("attribute '" + name + "'", s));
    if (value.type() == AttrType::kGraph && value.get<std::shared_ptr<const Graph>>()) {
      const Graph& body = *value.get<std::shared_ptr<const Graph>>();
      for (const Node& inner : body.nodes()) {
        Status inner_status = CheckUtf8(inner);
        if (!inner_status.ok())
          return node.MakeNodeError(ErrorCode::kInvalidArgument, "body '", name,
                                    "': ", inner_status.error().message());
      }
      for (const GraphOutput& out : body.outputs())
        KILN_RETURN_IF_ERROR(check("body '" + name + "' output name", out.name));
    }
  }
  return OkStatus();
}

}  // namespace

Result<std::vector<TensorType>> InferNode(const Node& node, const std::vector<TensorType>& inputs,
                                          const std::vector<const Tensor*>& input_values) {
  const OpDef* def = OpRegistry::Global().Find(node.op);
  if (!def) return node.MakeNodeError(ErrorCode::kUnimplemented, "unknown op '", node.op, "'");
  KILN_RETURN_IF_ERROR(CheckArity(*def, node));
  KILN_RETURN_IF_ERROR(CheckDTypes(*def, node, inputs));
  KILN_RETURN_IF_ERROR(CheckAttrs(*def, node));
  AttrMap attrs = def->WithDefaults(node.attrs);
  InferContext ctx(node, attrs, inputs, input_values);
  KILN_RETURN_IF_ERROR(def->infer(ctx));
  if (!def->variadic_outputs && ctx.outputs().size() != def->outputs.size())
    return node.MakeNodeError(ErrorCode::kInternal, "inference produced ", ctx.outputs().size(),
                              " outputs, the schema declares ", def->outputs.size());
  // No tensor's size may overflow the byte counts every allocation and copy computes with.
  for (size_t i = 0; i < ctx.outputs().size(); ++i) {
    const TensorType& out = ctx.outputs()[i];
    if (IsContainer(out.dtype) && !def->gives_containers)
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "output ", i, " would be a ",
                                DTypeName(out.dtype), ", which ", node.op,
                                " does not give (it gives tensors)");
    std::optional<int64_t> bytes = DTypeSize(out.dtype);
    for (int64_t d : out.shape.dims())
      if (bytes && d >= 0) bytes = CheckedMul(*bytes, d);
    if (!bytes)
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "output ", i, " ", out.ToString(),
                                " would hold more than 2^63 bytes");
  }
  return std::move(ctx.outputs());
}

void FillDefaultAttrs(Graph& graph) {
  for (Node& node : graph.mutable_nodes()) {
    const OpDef* def = OpRegistry::Global().Find(node.op);
    if (!def) continue;
    for (const AttrSpec& spec : def->attrs) {
      // A tensor or graph default stands for "none" (Variable's init_tensor): left absent.
      if (!spec.default_value || spec.type == AttrType::kTensor || spec.type == AttrType::kGraph ||
          node.attrs.Find(spec.name))
        continue;
      node.attrs.Set(spec.name, *spec.default_value);
    }
  }
}

Status Verify(Graph& graph) {
  KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, graph.TopologicalOrder());
  for (const Node* cnode : order) {
    Node* node = graph.FindNode(cnode->name);
    KILN_RETURN_IF_ERROR(CheckUtf8(*node));
    std::vector<TensorType> input_types;
    std::vector<const Tensor*> input_values;
    for (const TensorRef& in : node->inputs) {
      const Node* producer = graph.FindNode(in.node);
      if (!producer)
        return node->MakeNodeError(ErrorCode::kNotFound, "input '", in.ToString(),
                                   "' does not exist");
      if (in.port >= static_cast<int>(producer->output_types.size()))
        return node->MakeNodeError(ErrorCode::kInvalidArgument, "input '", in.ToString(),
                                   "': ", producer->Describe(), " has only ",
                                   producer->output_types.size(), " output(s)");
      input_types.push_back(producer->output_types[in.port]);
      const Tensor* value = nullptr;
      if (producer->op == "Constant") value = &producer->attrs.Find("value")->get<Tensor>();
      input_values.push_back(value);
    }
    for (const std::string& c : node->control_inputs)
      if (!graph.FindNode(c))
        return node->MakeNodeError(ErrorCode::kNotFound, "control input '", c, "' does not exist");
    KILN_ASSIGN_OR_RETURN(node->output_types, InferNode(*node, input_types, input_values));
    const OpDef* def = OpRegistry::Global().Find(node->op);
    if (def->family == "state" && node->op.rfind("Assign", 0) == 0) {
      const Node* target = graph.FindNode(node->inputs[0].node);
      if (target->op != "Variable")
        return node->MakeNodeError(ErrorCode::kInvalidArgument, "input 0 must be a Variable, got ",
                                   target->Describe());
    }
  }
  std::set<std::string> seen_inputs;
  for (const std::string& name : graph.inputs()) {
    const Node* n = graph.FindNode(name);
    if (!n) return MakeError(ErrorCode::kNotFound, "graph input '", name, "' is not a node");
    if (n->op != "Placeholder")
      return n->MakeNodeError(ErrorCode::kInvalidArgument,
                              "is listed as a graph input but is not a Placeholder");
    if (!seen_inputs.insert(name).second)
      return MakeError(ErrorCode::kInvalidArgument, "graph input '", name, "' is listed twice");
  }
  for (const std::string& u : graph.update_ops())
    if (!graph.FindNode(u))
      return MakeError(ErrorCode::kNotFound, "update op '", u, "' is not a node");
  std::set<std::string> seen_outputs;
  for (const GraphOutput& out : graph.outputs()) {
    if (out.name.empty())
      return MakeError(ErrorCode::kInvalidArgument, "a graph output has an empty name");
    if (const int64_t at = FirstInvalidUtf8(out.name); at >= 0)
      return MakeError(ErrorCode::kInvalidArgument, "graph output name '", out.name,
                       "' is not valid UTF-8 (byte ", at, ")");
    if (!seen_outputs.insert(out.name).second)
      return MakeError(ErrorCode::kInvalidArgument, "graph output '", out.name,
                       "' is listed twice");
    Result<TensorType> t = graph.TypeOf(out.tensor);
    if (!t.ok()) return t.error().WithContext("graph output '" + out.name + "'");
  }
  return OkStatus();
}

}  // namespace kiln
