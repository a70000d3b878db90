#include "ir/serialize.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cstring>

#include "ir/checksummed_proto.h"
#include "ir/file_util.h"
#include "ir/plugin_uses.h"
#include "ir/utf8.h"
#include "ir/verifier.h"

namespace kiln {

proto::ShapeProto ShapeToProto(const Shape& s) {
  proto::ShapeProto p;
  for (int64_t d : s.dims()) p.add_dims(d);
  return p;
}

Result<Shape> ShapeFromProto(const proto::ShapeProto& p) {
  for (int64_t d : p.dims())
    if (d < -1) return MakeError(ErrorCode::kInvalidArgument, "shape has a negative dimension ", d);
  return Shape(std::vector<int64_t>(p.dims().begin(), p.dims().end()));
}

namespace {
// Converts and verifies a graph (also a graph attribute's), refusing newer formats.
Result<Graph> CheckVersionConvertVerify(const proto::GraphDef& def, const std::string& origin);
}  // namespace

proto::AttrValue AttrToProto(const AttrValue& v) {
  proto::AttrValue p;
  switch (v.type()) {
    case AttrType::kInt:
      p.set_i(v.get<int64_t>());
      break;
    case AttrType::kFloat:
      p.set_f(v.get<double>());
      break;
    case AttrType::kString:
      p.set_s(v.get<std::string>());
      break;
    case AttrType::kBool:
      p.set_b(v.get<bool>());
      break;
    // mutable_*() first: an empty list must still set the oneof.
    case AttrType::kInts: {
      auto* list = p.mutable_ints();
      for (int64_t x : v.get<std::vector<int64_t>>()) list->add_values(x);
      break;
    }
    case AttrType::kFloats: {
      auto* list = p.mutable_floats();
      for (double x : v.get<std::vector<double>>()) list->add_values(x);
      break;
    }
    case AttrType::kStrings: {
      auto* list = p.mutable_strings();
      for (const std::string& x : v.get<std::vector<std::string>>()) list->add_values(x);
      break;
    }
    case AttrType::kShape:
      *p.mutable_shape() = ShapeToProto(v.get<Shape>());
      break;
    case AttrType::kDType:
      p.set_dtype(DTypeToProto(v.get<DType>()));
      break;
    case AttrType::kTensor:
      *p.mutable_tensor() = TensorToProto(v.get<Tensor>());
      break;
    case AttrType::kGraph:
      if (const auto& g = v.get<std::shared_ptr<const Graph>>())
        *p.mutable_graph() = GraphToProto(*g);
      else
        p.mutable_graph();
      break;
  }
  return p;
}

Result<AttrValue> AttrFromProto(const proto::AttrValue& p) {
  switch (p.value_case()) {
    case proto::AttrValue::kI:
      return AttrValue(p.i());
    case proto::AttrValue::kF:
      return AttrValue(p.f());
    case proto::AttrValue::kS:
      return AttrValue(p.s());
    case proto::AttrValue::kB:
      return AttrValue(p.b());
    case proto::AttrValue::kInts:
      return AttrValue(std::vector<int64_t>(p.ints().values().begin(), p.ints().values().end()));
    case proto::AttrValue::kFloats:
      return AttrValue(std::vector<double>(p.floats().values().begin(), p.floats().values().end()));
    case proto::AttrValue::kStrings:
      return AttrValue(
          std::vector<std::string>(p.strings().values().begin(), p.strings().values().end()));
    case proto::AttrValue::kShape: {
      KILN_ASSIGN_OR_RETURN(Shape s, ShapeFromProto(p.shape()));
      return AttrValue(std::move(s));
    }
    case proto::AttrValue::kDtype: {
      // An attribute may hold "no dtype" (e.g. MatMul's unset out_dtype); a tensor may not.
      if (p.dtype() == proto::DT_INVALID) return AttrValue(DType::kInvalid);
      KILN_ASSIGN_OR_RETURN(DType t, DTypeFromProto(p.dtype()));
      return AttrValue(t);
    }
    case proto::AttrValue::kTensor: {
      KILN_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(p.tensor()));
      return AttrValue(std::move(t));
    }
    case proto::AttrValue::kGraph: {
      KILN_ASSIGN_OR_RETURN(Graph g, CheckVersionConvertVerify(p.graph(), "a graph attribute"));
      return AttrValue(std::make_shared<const Graph>(std::move(g)));
    }
    case proto::AttrValue::VALUE_NOT_SET:
      break;
  }
  return MakeError(ErrorCode::kInvalidArgument, "attribute has no value");
}

namespace {

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first_.empty())
      first_ = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) +
               ": " + message;
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

Result<Graph> CheckVersionConvertVerify(const proto::GraphDef& def, const std::string& origin) {
  if (def.format_version() > Graph::kFormatVersion)
    return MakeError(ErrorCode::kFailedPrecondition, origin, ": graph format version ",
                     def.format_version(), " is newer than this kiln supports (",
                     Graph::kFormatVersion, "); upgrade kiln");
  if (def.format_version() < 1)
    return MakeError(ErrorCode::kInvalidArgument, origin, ": missing or invalid format_version ",
                     def.format_version(), " (is this a kiln graph?)");
  Result<Graph> graph = GraphFromProto(def);
  if (!graph.ok()) return graph.error().WithContext(origin);
  Status verified = Verify(*graph);
  if (!verified.ok()) return verified.error().WithContext(origin);
  return graph;
}

}  // namespace

proto::DataType DTypeToProto(DType t) {
  switch (t) {
    case DType::kF32:
      return proto::DT_F32;
    case DType::kF64:
      return proto::DT_F64;
    case DType::kF16:
      return proto::DT_F16;
    case DType::kBF16:
      return proto::DT_BF16;
    case DType::kI8:
      return proto::DT_I8;
    case DType::kU8:
      return proto::DT_U8;
    case DType::kI32:
      return proto::DT_I32;
    case DType::kI64:
      return proto::DT_I64;
    case DType::kBool:
      return proto::DT_BOOL;
    case DType::kI16:
      return proto::DT_I16;
    case DType::kU16:
      return proto::DT_U16;
    case DType::kU32:
      return proto::DT_U32;
    case DType::kU64:
      return proto::DT_U64;
    case DType::kSeq:
      return proto::DT_SEQ;
    case DType::kOptional:
      return proto::DT_OPTIONAL;
    case DType::kInvalid:
      break;
  }
  return proto::DT_INVALID;
}

Result<DType> DTypeFromProto(int t) {
  switch (t) {
    case proto::DT_F32:
      return f32;
    case proto::DT_F64:
      return f64;
    case proto::DT_F16:
      return f16;
    case proto::DT_BF16:
      return bf16;
    case proto::DT_I8:
      return i8;
    case proto::DT_U8:
      return u8;
    case proto::DT_I32:
      return i32;
    case proto::DT_I64:
      return i64;
    case proto::DT_BOOL:
      return boolean;
    case proto::DT_I16:
      return i16;
    case proto::DT_U16:
      return u16;
    case proto::DT_U32:
      return u32;
    case proto::DT_U64:
      return u64;
    case proto::DT_SEQ:
      return seq;
    case proto::DT_OPTIONAL:
      return optional;
    default:
      break;
  }
  return MakeError(ErrorCode::kInvalidArgument, "unknown dtype code ", t);
}

proto::TensorProto TensorToProto(const Tensor& t) {
  proto::TensorProto p;
  p.set_dtype(DTypeToProto(t.dtype()));
  *p.mutable_shape() = ShapeToProto(t.shape());
  p.set_data(std::string(static_cast<const char*>(t.raw_data()), t.byte_size()));
  return p;
}

Result<Tensor> TensorFromProto(const proto::TensorProto& p) {
  KILN_ASSIGN_OR_RETURN(DType dtype, DTypeFromProto(p.dtype()));
  KILN_ASSIGN_OR_RETURN(Shape shape, ShapeFromProto(p.shape()));
  if (!shape.IsFullyKnown())
    return MakeError(ErrorCode::kInvalidArgument, "tensor shape ", shape.ToString(),
                     " is not fully known");
  // The data's length is checked against the shape before anything is allocated: a few bytes that
  // declare a huge shape (a corrupt checkpoint, graph or module) are refused, not allocated. A
  // shape whose size overflows, or a container dtype, is refused by Tensor::Create below.
  if (!IsContainer(dtype)) {
    int64_t bytes = DTypeSize(dtype);
    bool overflow = false;
    for (int64_t d : shape.dims()) overflow = overflow || __builtin_mul_overflow(bytes, d, &bytes);
    if (!overflow && bytes != static_cast<int64_t>(p.data().size()))
      return MakeError(ErrorCode::kDataLoss, "tensor ", DTypeName(dtype), shape.ToString(),
                       " needs ", bytes, " bytes of data, has ", p.data().size());
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
  if (t.byte_size()) std::memcpy(t.raw_data(), p.data().data(), t.byte_size());
  return t;
}

proto::NodeDef NodeToProto(const Node& n) {
  proto::NodeDef nd;
  nd.set_name(n.name);
  nd.set_op(n.op);
  for (const TensorRef& in : n.inputs) nd.add_inputs(in.port == 0 ? in.node : in.ToString());
  for (const std::string& c : n.control_inputs) nd.add_control_inputs(c);
  for (const auto& [name, value] : n.attrs.items())
    (*nd.mutable_attrs())[name] = AttrToProto(value);
  nd.set_device(n.device);
  nd.set_source(EscapeInvalidUtf8(n.source));  // only informs: kept readable, not refused
  return nd;
}

Result<Node> NodeFromProto(const proto::NodeDef& nd) {
  Node n;
  n.name = nd.name();
  n.op = nd.op();
  n.device = nd.device();
  n.source = nd.source();
  for (const std::string& in : nd.inputs()) {
    Result<TensorRef> ref = TensorRef::Parse(in);
    if (!ref.ok()) return n.MakeNodeError(ErrorCode::kInvalidArgument, ref.error().message());
    n.inputs.push_back(*ref);
  }
  n.control_inputs.assign(nd.control_inputs().begin(), nd.control_inputs().end());
  for (const auto& [name, value] : nd.attrs()) {
    Result<AttrValue> v = AttrFromProto(value);
    if (!v.ok())
      return n.MakeNodeError(ErrorCode::kInvalidArgument, "attribute '", name,
                             "': ", v.error().message());
    n.attrs.Set(name, std::move(*v));
  }
  return n;
}

proto::GraphDef GraphToProto(const Graph& graph) {
  proto::GraphDef def;
  def.set_format_version(Graph::kFormatVersion);
  for (const Node& n : graph.nodes()) *def.add_nodes() = NodeToProto(n);
  for (const std::string& in : graph.inputs()) def.add_inputs(in);
  for (const std::string& u : graph.update_ops()) def.add_update_ops(u);
  for (const GraphOutput& out : graph.outputs()) {
    proto::OutputDef* od = def.add_outputs();
    od->set_name(out.name);
    od->set_tensor(out.tensor.ToString());
  }
  std::vector<std::string> ops;
  for (const Node& n : graph.nodes()) ops.push_back(n.op);
  WritePluginUses(PluginUsesOf(ops), def.mutable_plugins());
  return def;
}

Result<Graph> GraphFromProto(const proto::GraphDef& def) {
  KILN_RETURN_IF_ERROR(CheckPluginsLoaded(ReadPluginUses(def.plugins()), "the graph"));
  Graph graph;
  for (const proto::NodeDef& nd : def.nodes()) {
    KILN_ASSIGN_OR_RETURN(Node n, NodeFromProto(nd));
    KILN_RETURN_IF_ERROR(graph.AddNode(std::move(n)).status());
  }
  graph.mutable_inputs().assign(def.inputs().begin(), def.inputs().end());
  graph.mutable_update_ops().assign(def.update_ops().begin(), def.update_ops().end());
  for (const proto::OutputDef& od : def.outputs()) {
    Result<TensorRef> ref = TensorRef::Parse(od.tensor());
    if (!ref.ok()) return ref.error().WithContext("graph output '" + od.name() + "'");
    graph.mutable_outputs().push_back({od.name(), *ref});
  }
  return graph;
}

std::string GraphToText(const Graph& graph) {
  google::protobuf::TextFormat::Printer printer;
  std::string text;
  printer.PrintToString(GraphToProto(graph), &text);
  return text;
}

Result<std::string> GraphToBinary(const Graph& graph) {
  return SerializeWithChecksum(GraphToProto(graph), "kiln graph", kMaxGraphFileBytes);
}

Result<Graph> GraphFromText(const std::string& text, const std::string& origin) {
  proto::GraphDef def;
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &def))
    return MakeError(ErrorCode::kInvalidArgument, origin, ": not a valid kiln text graph: ",
                     errors.first().empty() ? "parse error" : errors.first());
  return CheckVersionConvertVerify(def, origin);
}

Result<Graph> GraphFromBinary(const std::string& bytes, const std::string& origin) {
  proto::GraphDef def;
  KILN_RETURN_IF_ERROR(ParseWithChecksum(bytes, origin, "kiln graph", &def));
  return CheckVersionConvertVerify(def, origin);
}

Result<Graph> LoadGraph(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string data, ReadFileToString(path, kMaxGraphFileBytes));
  if (EndsWith(path, ".txt")) return GraphFromText(data, path);
  return GraphFromBinary(data, path);
}

Status SaveGraph(const Graph& graph, const std::string& path) {
  if (EndsWith(path, ".txt")) {
    std::string text = GraphToText(graph);
    if (static_cast<int64_t>(text.size()) > kMaxGraphFileBytes)
      return MakeError(ErrorCode::kResourceExhausted, path,
                       ": not written: the text graph would be ", text.size(), " bytes, over the ",
                       kMaxGraphFileBytes, " bytes a kiln graph file can hold");
    return WriteFileAtomically(path, text);
  }
  Result<std::string> bytes = GraphToBinary(graph);
  if (!bytes.ok()) return bytes.error().WithContext(path + ": not written");
  return WriteFileAtomically(path, *bytes);
}

}  // namespace kiln
