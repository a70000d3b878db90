// ONNX export: the graph walk, names, initializers and the model around it (ir/onnx/export.h).
// The ops themselves: export_ops.cc and export_control.cc.
#include "ir/onnx/export.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "ir/file_util.h"
#include "ir/io/onnx_tensor.h"
#include "ir/onnx/export_context.h"
#include "ir/op_registry.h"

namespace kiln {
namespace onnx_export {

std::string NameScope::Fresh(const std::string& base) {
  if (Reserve(base)) return base;
  for (int i = 1;; ++i) {
    std::string name = base + "_" + std::to_string(i);
    if (Reserve(name)) return name;
  }
}

void SetValueInfo(const std::string& name, const TensorType& type, onnx::ValueInfoProto* info,
                  const std::string& dim_param) {
  info->set_name(name);
  if (type.dtype == seq) {  // kiln's containers carry no element type: left unspecified
    info->mutable_type()->mutable_sequence_type();
    return;
  }
  if (type.dtype == optional) {
    info->mutable_type()->mutable_optional_type();
    return;
  }
  onnx::TypeProto_Tensor* t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(OnnxTypeOf(type.dtype));
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (int i = 0; i < type.shape.rank(); ++i) {
    onnx::TensorShapeProto_Dimension* d = shape->add_dim();
    if (type.shape.dim(i) >= 0) {
      d->set_dim_value(type.shape.dim(i));
    } else if (!dim_param.empty()) {
      d->set_dim_param(dim_param + std::to_string(i));
    }
  }
}

namespace {

onnx::AttributeProto* NewAttr(onnx::NodeProto& node, const std::string& name,
                              onnx::AttributeProto_AttributeType type) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

}  // namespace

void SetAttr(onnx::NodeProto& node, const std::string& name, int64_t v) {
  NewAttr(node, name, onnx::AttributeProto::INT)->set_i(v);
}
void SetAttr(onnx::NodeProto& node, const std::string& name, double v) {
  NewAttr(node, name, onnx::AttributeProto::FLOAT)->set_f(static_cast<float>(v));
}
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::string& v) {
  NewAttr(node, name, onnx::AttributeProto::STRING)->set_s(v);
}
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = NewAttr(node, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::vector<double>& v) {
  onnx::AttributeProto* a = NewAttr(node, name, onnx::AttributeProto::FLOATS);
  for (double x : v) a->add_floats(static_cast<float>(x));
}

NodeExport::NodeExport(GraphWriter& writer, const Node& node, std::vector<std::string> inputs,
                       std::vector<TensorType> input_types, std::vector<std::string> outputs)
    : writer_(writer),
      node_(node),
      inputs_(std::move(inputs)),
      input_types_(std::move(input_types)),
      outputs_(std::move(outputs)) {
  const OpDef* def = OpRegistry::Global().Find(node.op);
  attrs_ = def ? def->WithDefaults(node.attrs) : node.attrs;
}

ModelState& NodeExport::model() { return writer_.model(); }

onnx::NodeProto& NodeExport::Add(const std::string& op_type, std::vector<std::string> inputs,
                                 std::vector<std::string> outputs, onnx::GraphProto* into) {
  onnx::NodeProto* n = (into ? into : writer_.graph())->add_node();
  n->set_name(model().names.Fresh(node_.name + "/" + op_type));
  n->set_op_type(op_type);
  for (std::string& in : inputs) n->add_input(std::move(in));
  for (std::string& out : outputs) n->add_output(std::move(out));
  return *n;
}

std::string NodeExport::Temp(const std::string& what) {
  return model().names.Fresh(node_.name + "/" + what);
}

std::string NodeExport::Initializer(const Tensor& t, const std::string& what) {
  std::string name = Temp(what);
  OnnxTensorToProto(t, name, model().top->add_initializer());
  return name;
}

std::string NodeExport::Ints(const std::vector<int64_t>& values, const std::string& what) {
  return Initializer(
      Tensor::FromVector<int64_t>(Shape({static_cast<int64_t>(values.size())}), values), what);
}

std::string NodeExport::Scalar(double v, DType dtype, const std::string& what) {
  return Initializer(Tensor::FromDoubles(dtype, Shape(), {v}), what);
}

Result<std::vector<std::string>> NodeExport::Write(const Graph& body,
                                                   const std::vector<std::string>& args,
                                                   onnx::GraphProto* into) {
  GraphWriter sub(model(), into ? into : writer_.graph());
  std::vector<TensorRef> fetches;
  for (const GraphOutput& out : body.outputs()) fetches.push_back(out.tensor);
  return sub.Write(body, fetches, &args);
}

void NodeExport::Output(onnx::GraphProto* into, const std::string& value, const TensorType& type,
                        const std::string& what) {
  std::string name = Temp(what);
  Add("Identity", {value}, {name}, into);
  SetValueInfo(name, type, into->add_output());
}

Status NodeExport::Unsupported(const std::string& why) {
  std::string entry = "'" + node_.name + "'";
  if (!why.empty()) entry += " (" + why + ")";
  model().unsupported[node_.op].push_back(entry);
  return OkStatus();
}

namespace {

// The names of the nodes `fetches` need, following data inputs.
std::set<std::string> NeededNodes(const Graph& graph, const std::vector<TensorRef>& fetches) {
  std::set<std::string> needed;
  std::vector<std::string> stack;
  for (const TensorRef& f : fetches) stack.push_back(f.node);
  while (!stack.empty()) {
    std::string name = std::move(stack.back());
    stack.pop_back();
    if (!needed.insert(name).second) continue;
    if (const Node* n = graph.FindNode(name))
      for (const TensorRef& in : n->inputs) stack.push_back(in.node);
  }
  return needed;
}

// A Variable's value, checked against the variable's type.
Result<Tensor> VariableValue(const Node& node, const std::map<std::string, Tensor>& values) {
  auto it = values.find(node.name);
  if (it == values.end())
    return node.MakeNodeError(ErrorCode::kInvalidArgument,
                              "has no value to export (give the variables' values, e.g. a "
                              "checkpoint)");
  const TensorType& type = node.output_types.at(0);
  const Tensor& t = it->second;
  bool fits = t.dtype() == type.dtype && t.shape().rank() == type.shape.rank();
  for (int i = 0; fits && i < type.shape.rank(); ++i)
    fits = type.shape.dim(i) < 0 || type.shape.dim(i) == t.shape().dim(i);
  if (!fits)
    return node.MakeNodeError(ErrorCode::kInvalidArgument, "is ", type.ToString(),
                              " but its value is ", DTypeName(t.dtype()), t.shape().ToString());
  return t;
}

}  // namespace

Result<std::vector<std::string>> GraphWriter::Write(const Graph& graph,
                                                    const std::vector<TensorRef>& fetches,
                                                    const std::vector<std::string>* args) {
  const std::set<std::string> needed = NeededNodes(graph, fetches);
  KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, graph.TopologicalOrder());
  std::map<TensorRef, std::string> names;
  std::map<TensorRef, TensorType> types;
  for (const Node* node : order) {
    if (!needed.count(node->name)) continue;
    if (node->output_types.empty() && node->op != "NoOp")
      return node->MakeNodeError(ErrorCode::kFailedPrecondition,
                                 "has no inferred types: verify the graph before exporting it");
    for (size_t p = 0; p < node->output_types.size(); ++p)
      types[{node->name, static_cast<int>(p)}] = node->output_types[p];
    const TensorRef out0{node->name, 0};
    if (node->op == "Placeholder") {
      if (args) {
        auto it = std::find(graph.inputs().begin(), graph.inputs().end(), node->name);
        if (it == graph.inputs().end())
          return node->MakeNodeError(ErrorCode::kInvalidArgument,
                                     "is a Placeholder that is not one of the body's arguments");
        names[out0] = (*args)[it - graph.inputs().begin()];
      } else {
        names[out0] = node->name;  // reserved by the caller
        SetValueInfo(node->name, node->output_types[0], graph_->add_input(), node->name + "_d");
      }
      continue;
    }
    if (node->op == "Constant" || node->op == "Variable") {
      Tensor value;
      if (node->op == "Constant") {
        KILN_ASSIGN_OR_RETURN(value, node->attrs.GetTensor("value"));
      } else {
        KILN_ASSIGN_OR_RETURN(value, VariableValue(*node, *model_.variable_values));
      }
      std::string name = model_.names.Fresh(node->name);
      OnnxTensorToProto(value, name, model_.top->add_initializer());
      names[out0] = name;
      continue;
    }
    std::vector<std::string> inputs;
    std::vector<TensorType> input_types;
    for (const TensorRef& in : node->inputs) {
      inputs.push_back(names.at(in));
      input_types.push_back(types.at(in));
    }
    std::vector<std::string> outputs;
    for (size_t p = 0; p < node->output_types.size(); ++p) {
      const TensorRef ref{node->name, static_cast<int>(p)};
      auto claimed = claimed_.find(ref);
      if (claimed != claimed_.end()) {
        outputs.push_back(claimed->second);
        claimed_.erase(claimed);
      } else {
        outputs.push_back(
            model_.names.Fresh(p == 0 ? node->name : node->name + ":" + std::to_string(p)));
      }
      names[ref] = outputs.back();
    }
    auto exporter = OpExporters().find(node->op);
    NodeExport e(*this, *node, std::move(inputs), std::move(input_types), std::move(outputs));
    if (exporter == OpExporters().end()) {
      KILN_RETURN_IF_ERROR(e.Unsupported());
    } else {
      KILN_RETURN_IF_ERROR(exporter->second(e));
    }
  }
  std::vector<std::string> result;
  for (const TensorRef& f : fetches) {
    auto it = names.find(f);
    if (it == names.end()) {
      const Node* node = graph.FindNode(f.node);
      if (node)
        return node->MakeNodeError(ErrorCode::kInvalidArgument, "has no output ", f.port,
                                   " to export (only tensors are exported, not targets)");
      return MakeError(ErrorCode::kInvalidArgument, "cannot export '", f.ToString(),
                       "': no such tensor in the graph");
    }
    result.push_back(it->second);
  }
  return result;
}

namespace {

std::string UnsupportedList(const std::map<std::string, std::vector<std::string>>& unsupported) {
  std::ostringstream s;
  s << "cannot export to ONNX: " << unsupported.size() << " op type"
    << (unsupported.size() == 1 ? " has" : "s have") << " no ONNX form:";
  bool first = true;
  for (const auto& [op, nodes] : unsupported) {
    s << (first ? " " : "; ") << op << " (";
    first = false;
    for (size_t i = 0; i < nodes.size() && i < 4; ++i) s << (i ? ", " : "") << nodes[i];
    if (nodes.size() > 4) s << " and " << nodes.size() - 4 << " more";
    s << ")";
  }
  s << ". Export an inference graph: freeze it (kiln freeze) or fetch only what inference needs";
  return s.str();
}

}  // namespace
}  // namespace onnx_export

Result<std::string> ExportOnnxToBytes(const Graph& graph, const OnnxExportOptions& options) {
  using namespace onnx_export;
  std::vector<std::string> fetch_names = options.fetches;
  if (fetch_names.empty())
    for (const GraphOutput& out : graph.outputs()) fetch_names.push_back(out.name);
  if (fetch_names.empty())
    return MakeError(ErrorCode::kInvalidArgument,
                     "cannot export to ONNX: the graph has no outputs and no fetches were given");
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("kiln");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxExportOpset);
  onnx::GraphProto* top = model.mutable_graph();
  top->set_name(options.graph_name);

  ModelState state;
  state.top = top;
  state.variable_values = &options.variable_values;
  for (const Node& n : graph.nodes())
    if (n.op == "Placeholder") state.names.Reserve(n.name);
  std::vector<TensorRef> fetches;
  std::map<TensorRef, std::string> claimed;
  std::set<std::string> output_names;
  for (const std::string& name : fetch_names) {
    KILN_ASSIGN_OR_RETURN(TensorRef ref, graph.ResolveTensor(name));
    if (!output_names.insert(name).second)
      return MakeError(ErrorCode::kInvalidArgument, "cannot export to ONNX: '", name,
                       "' is fetched twice");
    fetches.push_back(ref);
    if (state.names.Reserve(name)) claimed.emplace(ref, name);
  }
  GraphWriter writer(state, top, claimed);
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> names, writer.Write(graph, fetches, nullptr));
  if (!state.unsupported.empty())
    return MakeError(ErrorCode::kUnimplemented, UnsupportedList(state.unsupported));
  for (size_t i = 0; i < fetches.size(); ++i) {
    if (names[i] != fetch_names[i]) {
      onnx::NodeProto* n = top->add_node();
      n->set_name(state.names.Fresh(fetch_names[i] + "/Identity"));
      n->set_op_type("Identity");
      n->add_input(names[i]);
      n->add_output(fetch_names[i]);
    }
    KILN_ASSIGN_OR_RETURN(TensorType type, graph.TypeOf(fetches[i]));
    SetValueInfo(fetch_names[i], type, top->add_output());
  }
  std::string bytes;
  if (model.ByteSizeLong() > static_cast<size_t>(kMaxOnnxExportBytes) ||
      !model.SerializeToString(&bytes))
    return MakeError(ErrorCode::kResourceExhausted,
                     "cannot export to ONNX: the model is larger than the 2 GiB a protobuf holds");
  return bytes;
}

Status ExportOnnx(const Graph& graph, const std::string& path, const OnnxExportOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ExportOnnxToBytes(graph, options));
  return WriteFileAtomically(path, bytes);
}

}  // namespace kiln
