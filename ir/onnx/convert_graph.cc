// Converting ONNX nodes into a builder, for the model's graph and for the subgraphs of If and Loop
// alike (convert_context.h: ConvertNode, ConvertSubgraphNodes, OuterNames).
#include <set>

#include "ir/io/onnx_tensor.h"
#include "ir/onnx/convert_context.h"
#include "ir/onnx/deferred_node.h"

namespace kiln::onnx_import {
namespace {

// A name usable as a kiln scope: '/' and ':' would read as scope and port separators.
std::string ScopeName(const onnx::NodeProto& n, int index) {
  std::string s = n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
  for (char& c : s)
    if (c == ':' || c == '/') c = '_';
  return s;
}

// A declared tensor type with a dtype kiln has and a shape (symbolic dims unknown).
std::optional<TensorType> DeclaredType(const onnx::ValueInfoProto& vi) {
  if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return std::nullopt;
  const auto& tt = vi.type().tensor_type();
  std::optional<DType> dtype = DTypeOfOnnx(tt.elem_type());
  if (!dtype) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() < 0) return std::nullopt;
    dims.push_back(d.has_dim_value() ? d.dim_value() : kUnknownDim);
  }
  return TensorType{*dtype, Shape(std::move(dims))};
}

void CollectOuterNames(const onnx::GraphProto& body, std::set<std::string>& defined,
                       std::vector<std::string>& outer, std::set<std::string>& seen) {
  std::set<std::string> local = defined;
  for (const auto& vi : body.input()) local.insert(vi.name());
  for (const auto& t : body.initializer()) local.insert(t.name());
  auto read = [&](const std::string& name) {
    if (!name.empty() && !local.count(name) && seen.insert(name).second) outer.push_back(name);
  };
  for (const onnx::NodeProto& node : body.node()) {
    for (const std::string& in : node.input()) read(in);
    for (const onnx::AttributeProto& a : node.attribute()) {
      std::vector<const onnx::GraphProto*> graphs;
      if (a.has_g()) graphs.push_back(&a.g());
      for (const auto& g : a.graphs()) graphs.push_back(&g);
      for (const onnx::GraphProto* g : graphs) {
        std::vector<std::string> inner;
        std::set<std::string> inner_seen;
        CollectOuterNames(*g, local, inner, inner_seen);
        for (const std::string& name : inner) read(name);
      }
    }
    for (const std::string& out : node.output()) local.insert(out);
  }
  for (const auto& out : body.output()) read(out.name());
}

}  // namespace

std::string NodeLabel(const onnx::NodeProto& n, int index) {
  const std::string op = ConverterKey(n);
  if (n.name().empty()) return "node #" + std::to_string(index) + " (" + op + ")";
  return "node '" + n.name() + "' (" + op + ")";
}

void AddDeclaredTypes(const onnx::GraphProto& graph, std::map<std::string, TensorType>& declared) {
  for (const auto* list : {&graph.value_info(), &graph.output()})
    for (const onnx::ValueInfoProto& vi : *list)
      if (std::optional<TensorType> type = DeclaredType(vi)) declared[vi.name()] = *type;
}

Status ConvertNode(GraphBuilder& g, std::map<std::string, OnnxValue>& values,
                   const std::map<std::string, TensorType>& declared, const onnx::NodeProto& node,
                   int index, int64_t opset, const std::string& origin) {
  const std::string label = origin + ": " + NodeLabel(node, index);
  OnnxNode n(g, node, opset, values, label);
  if (!Converters().count(ConverterKey(node))) return n.Unsupported("unsupported ONNX op type");
  for (int i = 0; i < node.input_size(); ++i)
    if (n.has_input(i)) KILN_RETURN_IF_ERROR(n.input(i).status());
  for (int i = 0; i < node.output_size(); ++i)
    if (n.wants_output(i) && values.count(node.output(i)))
      return n.Fail("output '", node.output(i), "' is already defined earlier in the graph");
  const size_t errors_before = g.errors().size();
  {
    GraphBuilder::SourceOverride at(&g, label);
    Scope::Entered scope(&g, ScopeName(node, index));
    const size_t nodes_before = g.num_nodes();
    Status converted = Converters().at(ConverterKey(node))(n);
    if (!converted.ok()) {
      // A value or dim known only at run time: convert the node when it is (deferred_node.h).
      if (!n.waits_for_values() || converted.error().code() != ErrorCode::kUnimplemented ||
          g.errors().size() > errors_before)
        return converted;
      for (int i = 0; i < node.output_size(); ++i)
        if (n.wants_output(i)) values.erase(node.output(i));
      g.DiscardNodesFrom(nodes_before);
      Status deferred = DeferNode(n, declared);
      if (!deferred.ok()) return converted;
    }
  }
  if (g.errors().size() > errors_before) {
    const Error& e = g.errors().back();
    return Error(e.code(),
                 origin + ": while importing " + NodeLabel(node, index) + ": " + e.message());
  }
  for (int i = 0; i < node.output_size(); ++i)
    if (n.wants_output(i) && !values.count(node.output(i)))
      return n.Unsupported("output ", i, " ('", node.output(i),
                           "') is not supported by kiln's converter");
  return OkStatus();
}

Status ConvertSubgraphNodes(GraphBuilder& g, const onnx::GraphProto& body, int64_t opset,
                            const std::string& origin, std::map<std::string, OnnxValue>& values) {
  for (const onnx::TensorProto& p : body.initializer()) {
    if (p.data_location() == onnx::TensorProto::EXTERNAL || p.external_data_size() > 0)
      return MakeError(ErrorCode::kUnimplemented, origin, ": initializer '", p.name(),
                       "' of a subgraph has external data");
    KILN_ASSIGN_OR_RETURN(Tensor t,
                          OnnxTensorFromProto(p, origin + ": initializer '" + p.name() + "'"));
    OnnxValue v;
    v.known = t;
    v.value = g.Constant(t);
    values[p.name()] = std::move(v);
  }
  std::map<std::string, TensorType> declared;
  AddDeclaredTypes(body, declared);
  for (int i = 0; i < body.node_size(); ++i)
    KILN_RETURN_IF_ERROR(ConvertNode(g, values, declared, body.node(i), i, opset, origin));
  return OkStatus();
}

std::vector<std::string> OuterNames(const onnx::GraphProto& body) {
  std::set<std::string> defined, seen;
  std::vector<std::string> outer;
  CollectOuterNames(body, defined, outer, seen);
  return outer;
}

}  // namespace kiln::onnx_import
