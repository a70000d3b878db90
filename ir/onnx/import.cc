#include "ir/onnx/import.h"

#include <set>

#include "ir/builder.h"
#include "ir/file_util.h"
#include "ir/io/onnx_tensor.h"
#include "ir/onnx/convert_context.h"
#include "ir/onnx/deferred_node.h"
#include "ir/onnx/external_data.h"
#include "ir/ops/state.h"
#include "ir/protobuf_errors.h"
#include "proto/onnx.pb.h"

namespace kiln {
namespace {

using onnx_import::ConverterKey;
using onnx_import::Converters;
using onnx_import::IsDefaultDomain;
using onnx_import::OnnxNode;
using onnx_import::OnnxValue;

// Whether a node of `graph` (or of its subgraphs) is of the default domain.
bool UsesDefaultDomain(const onnx::GraphProto& graph) {
  for (const onnx::NodeProto& n : graph.node()) {
    if (IsDefaultDomain(n.domain())) return true;
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g() && UsesDefaultDomain(a.g())) return true;
      for (const onnx::GraphProto& g : a.graphs())
        if (UsesDefaultDomain(g)) return true;
    }
  }
  return false;
}

// Every node without a converter (in the graph and its If and Loop subgraphs), by op type.
void FindUnsupported(const onnx::GraphProto& graph,
                     std::map<std::string, std::vector<std::string>>& missing) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& n = graph.node(i);
    const std::string op = ConverterKey(n);
    if (!Converters().count(op))
      missing[op].push_back(n.name().empty() ? "#" + std::to_string(i) : "'" + n.name() + "'");
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) FindUnsupported(a.g(), missing);
      for (const onnx::GraphProto& g : a.graphs()) FindUnsupported(g, missing);
    }
  }
}

// Every node whose op type has no converter, grouped by op type: one error for all of them.
Status CheckSupported(const onnx::GraphProto& graph, const std::string& origin) {
  std::map<std::string, std::vector<std::string>> missing;
  FindUnsupported(graph, missing);
  if (missing.empty()) return OkStatus();
  std::string message =
      origin + ": " + std::to_string(missing.size()) + " unsupported ONNX op type(s):";
  for (const auto& [op, nodes] : missing) {
    message += "\n  " + op + " (" + std::to_string(nodes.size()) + " node" +
               (nodes.size() == 1 ? "" : "s") + ": ";
    for (size_t k = 0; k < nodes.size() && k < 8; ++k) message += (k ? ", " : "") + nodes[k];
    if (nodes.size() > 8) message += ", ...";
    message += ")";
  }
  return Error(ErrorCode::kUnimplemented, message);
}

// The kind of a non-tensor type, for errors.
const char* TypeKind(const onnx::TypeProto& t) {
  if (t.has_sequence_type()) return "a sequence";
  if (t.has_map_type()) return "a map";
  if (t.has_optional_type()) return "an optional";
  if (t.has_sparse_tensor_type()) return "a sparse tensor";
  return "of no type";
}

Result<TensorType> InputType(const onnx::ValueInfoProto& vi, const std::string& origin) {
  // Sequences and optionals of tensors: fed as Tensor::Sequence and Tensor::Optional.
  if (vi.type().has_sequence_type() || vi.type().has_optional_type()) {
    if (!onnx_import::ElementTypeOf(vi.type()))
      return MakeError(ErrorCode::kUnimplemented, origin, ": graph input '", vi.name(), "' is ",
                       TypeKind(vi.type()),
                       " of a type kiln does not support (kiln's hold tensors or sequences)");
    return TensorType{vi.type().has_sequence_type() ? seq : optional, Shape{}};
  }
  if (!vi.type().has_tensor_type())
    return MakeError(ErrorCode::kUnimplemented, origin, ": graph input '", vi.name(), "' is ",
                     TypeKind(vi.type()), "; kiln imports tensors only");
  const auto& tt = vi.type().tensor_type();
  std::optional<DType> dtype = DTypeOfOnnx(tt.elem_type());
  if (!dtype)
    return MakeError(ErrorCode::kUnimplemented, origin, ": graph input '", vi.name(),
                     "' has element type ", OnnxTypeName(tt.elem_type()),
                     ", which kiln does not support");
  std::vector<int64_t> dims;
  if (!tt.has_shape())
    return MakeError(ErrorCode::kUnimplemented, origin, ": graph input '", vi.name(),
                     "' has no shape (unknown rank); kiln needs the rank of every input");
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() < 0)
      return MakeError(ErrorCode::kInvalidArgument, origin, ": graph input '", vi.name(),
                       "' has a negative dimension ", d.dim_value());
    dims.push_back(d.has_dim_value() ? d.dim_value() : kUnknownDim);
  }
  return TensorType{*dtype, Shape(std::move(dims))};
}

Result<Tensor> InitializerValue(const onnx::TensorProto& p, const std::string& model_dir,
                                const std::string& origin) {
  std::string name = origin + ": initializer '" + p.name() + "'";
  if (p.data_location() == onnx::TensorProto::EXTERNAL || p.external_data_size() > 0)
    return onnx_import::ReadExternalTensor(p, model_dir, name);
  return OnnxTensorFromProto(p, name);
}

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string model_dir, std::string origin,
           const OnnxImportOptions& options)
      : model_(model),
        model_dir_(std::move(model_dir)),
        origin_(std::move(origin)),
        options_(options) {}

  Result<Graph> Run() {
    if (!model_.has_graph())
      return MakeError(ErrorCode::kInvalidArgument, origin_,
                       ": the ONNX model has no graph (truncated or not an ONNX model)");
    const onnx::GraphProto& graph = model_.graph();
    KILN_RETURN_IF_ERROR(CheckSupported(graph, origin_));
    KILN_RETURN_IF_ERROR(CheckOpset());
    KILN_RETURN_IF_ERROR(AddInitializers(graph));
    KILN_RETURN_IF_ERROR(AddInputs(graph));
    onnx_import::AddDeclaredTypes(graph, declared_types_);
    for (int i = 0; i < graph.node_size(); ++i) KILN_RETURN_IF_ERROR(AddNode(graph.node(i), i));
    for (const onnx::ValueInfoProto& out : graph.output()) {
      auto it = values_.find(out.name());
      if (it == values_.end())
        return MakeError(ErrorCode::kInvalidArgument, origin_, ": graph output '", out.name(),
                         "' is not produced by any node, input or initializer");
      KILN_RETURN_IF_ERROR(CheckDeclaredOutput(out, it->second.value));
      g_.Output(out.name(), it->second.value);
    }
    Result<Graph> built = g_.Build();
    if (!built.ok()) return built.error().WithContext(origin_);
    return built;
  }

 private:
  // A graph output's declared element type and shape (where given: symbolic or missing dims say
  // nothing) must be what the graph computes.
  Status CheckDeclaredOutput(const onnx::ValueInfoProto& out, const Value& v) const {
    const DType container = out.type().has_sequence_type()   ? seq
                            : out.type().has_optional_type() ? optional
                                                             : DType::kInvalid;
    if (container != DType::kInvalid && v.dtype() != container)
      return MakeError(ErrorCode::kInvalidArgument, origin_, ": graph output '", out.name(),
                       "' is declared ", TypeKind(out.type()), " but the graph computes ",
                       DTypeName(v.dtype()), v.shape().ToString());
    if (!out.type().has_tensor_type()) return OkStatus();
    const auto& tt = out.type().tensor_type();
    auto contradiction = [&](const std::string& what) {
      return MakeError(ErrorCode::kInvalidArgument, origin_, ": graph output '", out.name(),
                       "' is declared ", what, " but the graph computes ", DTypeName(v.dtype()),
                       v.shape().ToString());
    };
    if (tt.elem_type() != 0) {
      std::optional<DType> declared = DTypeOfOnnx(tt.elem_type());
      if (!declared || *declared != v.dtype())
        return contradiction(std::string("of element type ") + OnnxTypeName(tt.elem_type()));
    }
    if (!tt.has_shape()) return OkStatus();
    std::vector<int64_t> dims;
    for (const auto& d : tt.shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    bool agrees = static_cast<int>(dims.size()) == v.rank();
    for (int i = 0; agrees && i < v.rank(); ++i)
      agrees = dims[i] < 0 || v.shape()[i] < 0 || dims[i] == v.shape()[i];
    return agrees ? OkStatus() : contradiction("of shape " + Shape(dims).ToString());
  }

  Status CheckOpset() {
    bool found = false;
    for (const onnx::OperatorSetIdProto& o : model_.opset_import()) {
      if (!IsDefaultDomain(o.domain())) continue;
      found = true;
      opset_ = o.version();
    }
    if (!found) {
      // A model of other domains' ops only (the training optimizers) needs no default opset.
      if (model_.opset_import_size() > 0 && !UsesDefaultDomain(model_.graph())) return OkStatus();
      if (model_.ir_version() >= 3 || model_.opset_import_size() > 0)
        return MakeError(ErrorCode::kInvalidArgument, origin_,
                         ": the model imports no version of the default ONNX opset");
      opset_ = 1;  // IR versions before opset_import existed
    }
    if (opset_ < 1 || opset_ > kMaxOnnxOpset)
      return MakeError(ErrorCode::kUnimplemented, origin_, ": ONNX opset ", opset_,
                       " is not supported (kiln imports opsets 1 to ", kMaxOnnxOpset, ")");
    return OkStatus();
  }

  Status AddInitializers(const onnx::GraphProto& graph) {
    for (const onnx::TensorProto& p : graph.initializer()) {
      if (p.name().empty())
        return MakeError(ErrorCode::kInvalidArgument, origin_, ": an initializer has no name");
      if (values_.count(p.name()))
        return MakeError(ErrorCode::kInvalidArgument, origin_, ": initializer '", p.name(),
                         "' is defined twice");
      KILN_ASSIGN_OR_RETURN(Tensor t, InitializerValue(p, model_dir_, origin_));
      GraphBuilder::SourceOverride at(&g_, origin_ + ": initializer '" + p.name() + "'");
      OnnxValue v;
      v.known = t;
      const std::string name = NodeName(p.name());
      if (!options_.initializers_as_constants && IsFloat(t.dtype()))
        v.value = Variable(g_, name, t.dtype(), t.shape(), Initializer::FromTensor(t));
      else
        v.value = g_.Constant(t).Named(name);
      if (!v.value.valid()) return BuilderError("initializer '" + p.name() + "'");
      values_[p.name()] = std::move(v);
    }
    return OkStatus();
  }

  Status AddInputs(const onnx::GraphProto& graph) {
    for (const onnx::ValueInfoProto& vi : graph.input()) {
      if (values_.count(vi.name())) continue;  // an initializer listed as an input (IR < 4)
      if (vi.name().empty())
        return MakeError(ErrorCode::kInvalidArgument, origin_, ": a graph input has no name");
      KILN_ASSIGN_OR_RETURN(TensorType type, InputType(vi, origin_));
      GraphBuilder::SourceOverride at(&g_, origin_ + ": graph input '" + vi.name() + "'");
      OnnxValue v;
      auto bound = options_.input_values.find(vi.name());
      if (bound != options_.input_values.end()) {
        const Tensor& t = bound->second;
        if (t.dtype() != type.dtype || !type.shape.IsCompatibleWith(t.shape()))
          return MakeError(ErrorCode::kInvalidArgument, origin_, ": the value given for input '",
                           vi.name(), "' is ", t.Summary(0), ", expected ", type.ToString());
        v.known = t;
        v.value = g_.Constant(t).Named(NodeName(vi.name()));
      } else {
        v.value = g_.Placeholder(NodeName(vi.name()), type.dtype, type.shape);
        v.element = onnx_import::ElementTypeOf(vi.type());
      }
      if (!v.value.valid()) return BuilderError("graph input '" + vi.name() + "'");
      values_[vi.name()] = std::move(v);
    }
    return OkStatus();
  }

  Status AddNode(const onnx::NodeProto& node, int index) {
    return onnx_import::ConvertNode(g_, values_, declared_types_, node, index, opset_, origin_);
  }

  // The kiln node name for an ONNX initializer or input name: ':' (kiln's port separator, in
  // PyTorch's "onnx::Conv_193") becomes '_', with a suffix when that name is already taken.
  std::string NodeName(const std::string& onnx_name) {
    std::string name = onnx_name;
    for (char& c : name)
      if (c == ':') c = '_';
    if (name != onnx_name) {
      std::string base = name;
      for (int k = 1; values_.count(name) || node_names_.count(name); ++k)
        name = base + "_" + std::to_string(k);
    }
    node_names_.insert(name);
    return name;
  }

  // The first error the builder recorded, with context.
  Error BuilderError(const std::string& what) {
    const Error& e = g_.errors().back();
    return Error(e.code(), origin_ + ": while importing " + what + ": " + e.message());
  }

  const onnx::ModelProto& model_;
  std::string model_dir_, origin_;
  const OnnxImportOptions& options_;
  int64_t opset_ = 0;
  GraphBuilder g_;
  std::map<std::string, OnnxValue> values_;
  std::set<std::string> node_names_;  // names given to initializer and input nodes
  std::map<std::string, TensorType> declared_types_;
};

}  // namespace

Result<Graph> ImportOnnxFromBytes(const std::string& bytes, const std::string& model_dir,
                                  const std::string& origin, const OnnxImportOptions& options) {
  onnx::ModelProto model;
  {
    ProtobufErrorCapture protobuf_says;  // the parse's messages only
    if (bytes.empty() || !model.ParseFromString(bytes))
      return MakeError(ErrorCode::kDataLoss, origin,
                       ": not a valid ONNX model (the file is truncated, corrupt or not an ONNX "
                       "ModelProto)",
                       protobuf_says.Detail());
  }
  return Importer(model, model_dir, origin, options).Run();
}

Result<Graph> ImportOnnx(const std::string& path, const OnnxImportOptions& options) {
  Result<std::string> bytes = ReadFileToString(path, kMaxOnnxFileBytes);
  if (!bytes.ok()) {
    if (bytes.error().code() == ErrorCode::kResourceExhausted)
      return MakeError(ErrorCode::kResourceExhausted, "'", path,
                       "' is larger than 2 GiB, the protobuf limit for one ONNX file; save the "
                       "model with external data (onnx.save(..., save_as_external_data=True))");
    return bytes.error();
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return ImportOnnxFromBytes(*bytes, dir, path, options);
}

void RegisterOnnxFrontend() { onnx_import::RegisterOnnxExpander(); }

std::vector<std::string> SupportedOnnxOps() {
  std::vector<std::string> ops;
  for (const auto& [op, fn] : onnx_import::Converters()) ops.push_back(op);
  return ops;
}

}  // namespace kiln
