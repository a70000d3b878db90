#include "ir/onnx/deferred_node.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>

#include "ir/io/onnx_tensor.h"
#include "ir/ops/deferred.h"

namespace kiln::onnx_import {
namespace {

constexpr char kExpanderName[] = "onnx";

// Ops whose output 0 (every output, for Split) has input 0's rank and dtype.
const std::set<std::string>& RankKeepingOps() {
  static const std::set<std::string> ops = {"Slice",
                                            "Tile",
                                            "Pad",
                                            "Resize",
                                            "Upsample",
                                            "CumSum",
                                            "Trilu",
                                            "Conv",
                                            "ConvTranspose",
                                            "MaxPool",
                                            "AveragePool",
                                            "LpPool",
                                            "Hardmax",
                                            "Softmax",
                                            "LogSoftmax",
                                            "Split",
                                            "DepthToSpace",
                                            "SpaceToDepth",
                                            "LRN",
                                            "InstanceNormalization",
                                            "BatchNormalization",
                                            "Transpose",
                                            "Identity",
                                            "ScatterND",
                                            "ReverseSequence",
                                            "MaxUnpool"};
  return ops;
}

const std::set<std::string>& ReduceOps() {
  static const std::set<std::string> ops = {
      "ReduceSum", "ReduceMean", "ReduceMax",       "ReduceMin",    "ReduceProd",
      "ReduceL1",  "ReduceL2",   "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"};
  return ops;
}

// The number of entries of a 1-D input of known length, or of an ints attribute when the input
// is absent; nullopt when neither tells.
std::optional<int64_t> CountOf(const OnnxNode& n, int input, const std::string& attr) {
  if (n.has_input(input)) {
    Result<Value> v = n.input(input);
    if (!v.ok() || v->rank() != 1 || v->shape()[0] < 0) return std::nullopt;
    return v->shape()[0];
  }
  if (!attr.empty() && n.has_attr(attr)) {
    Result<std::vector<int64_t>> ints = n.Ints(attr);
    if (ints.ok()) return static_cast<int64_t>(ints->size());
  }
  return std::nullopt;
}

TensorType Unknown(DType dtype, int64_t rank) {
  return {dtype, Shape(std::vector<int64_t>(static_cast<size_t>(std::max<int64_t>(rank, 0)),
                                            kUnknownDim))};
}

// Output `i`'s type as the op implies it (dims unknown), when its rank can be told now.
std::optional<TensorType> ImpliedType(const OnnxNode& n, int i) {
  Result<Value> x = n.input(0);
  if (!x.ok()) return std::nullopt;
  const DType dtype = x->dtype();
  const int64_t rank = x->rank();
  const std::string& op = n.op_type();
  if (RankKeepingOps().count(op) && (i == 0 || op == "Split")) return Unknown(dtype, rank);
  if (op == "Dropout") return Unknown(i == 0 ? dtype : DType::kBool, rank);
  if (op == "TopK") return Unknown(i == 0 ? dtype : DType::kI64, rank);
  if (op == "Range") return Unknown(dtype, 1);
  if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow") {
    Result<int64_t> onnx_type = n.Int("output_datatype", 1);
    std::optional<DType> out =
        onnx_type.ok() ? DTypeOfOnnx(static_cast<int32_t>(*onnx_type)) : std::nullopt;
    if (!out) return std::nullopt;
    return Unknown(*out, 1);
  }
  if (op == "GatherND") {  // (q - 1) + (r - batch_dims - k) for indices [..., k] of rank q
    Result<Value> indices = n.input(1);
    Result<int64_t> b = n.Int("batch_dims", 0);
    if (!indices.ok() || !b.ok() || indices->rank() < 1 || indices->shape().dims().back() < 0)
      return std::nullopt;
    return Unknown(dtype, indices->rank() - 1 + rank - *b - indices->shape().dims().back());
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::optional<int64_t> axes = CountOf(n, 1, n.opset() >= 13 ? "" : "axes");
    if (!axes) return std::nullopt;
    return Unknown(dtype, op == "Unsqueeze" ? rank + *axes : rank - *axes);
  }
  if (op == "Reshape" || op == "ConstantOfShape") {
    std::optional<int64_t> entries = CountOf(n, op == "Reshape" ? 1 : 0, "");
    if (!entries) return std::nullopt;
    if (op == "Reshape") return Unknown(dtype, *entries);
    DType filled = DType::kF32;
    if (n.has_attr("value")) {
      Result<Tensor> value = n.TensorAttr("value");
      if (!value.ok()) return std::nullopt;
      filled = value->dtype();
    }
    return Unknown(filled, *entries);
  }
  if (op == "Expand") {
    std::optional<int64_t> entries = CountOf(n, 1, "");
    if (!entries) return std::nullopt;
    return Unknown(dtype, std::max(rank, *entries));
  }
  if (op == "OneHot") {
    Result<Value> values = n.input(2);
    if (!values.ok()) return std::nullopt;
    return Unknown(values->dtype(), rank + 1);
  }
  if (ReduceOps().count(op)) {
    Result<int64_t> keep = n.Int("keepdims", 1);
    if (!keep.ok()) return std::nullopt;
    if (*keep) return Unknown(dtype, rank);
    const bool axes_input = op == "ReduceSum" ? n.opset() >= 13 : n.opset() >= 18;
    std::optional<int64_t> axes = CountOf(n, 1, axes_input ? "" : "axes");
    if (!axes || *axes == 0) return std::nullopt;  // no axes: all of them, or none (noop)
    return Unknown(dtype, rank - *axes);
  }
  return std::nullopt;
}

std::string TextOf(const onnx::NodeProto& node) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  // Fields this ONNX version does not know (a newer producer's) mean nothing to the converters,
  // and the text parser would refuse them by number.
  printer.SetHideUnknownFields(true);
  std::string text;
  printer.PrintToString(node, &text);
  return text;
}

Result<DeferredExpansion> ExpandOnnxNode(const Node& node, const std::vector<TensorType>& types,
                                         const std::vector<const Tensor*>& values) {
  const std::string label = node.source.empty() ? node.Describe() : node.source;
  KILN_ASSIGN_OR_RETURN(std::string text, node.attrs.GetString("source_node"));
  KILN_ASSIGN_OR_RETURN(int64_t opset, node.attrs.GetInt("version"));
  onnx::NodeProto proto;
  if (!google::protobuf::TextFormat::ParseFromString(text, &proto))
    return node.MakeNodeError(ErrorCode::kInvalidArgument,
                              "its source_node is not an ONNX NodeProto in text form");
  auto converter = Converters().find(ConverterKey(proto));
  if (converter == Converters().end())
    return node.MakeNodeError(ErrorCode::kUnimplemented, "ONNX op '", proto.op_type(),
                              "' has no converter");
  GraphBuilder g;
  std::map<std::string, OnnxValue> onnx_values;
  int k = 0;  // the node's inputs are the NodeProto's present inputs, in order
  for (int j = 0; j < proto.input_size(); ++j) {
    if (proto.input(j).empty() || onnx_values.count(proto.input(j))) continue;
    if (k >= static_cast<int>(types.size()))
      return node.MakeNodeError(ErrorCode::kInvalidArgument, "has ", types.size(),
                                " inputs; its ONNX node names more");
    OnnxValue v;
    v.value = g.Placeholder(DeferredInputName(k), types[k].dtype, types[k].shape);
    if (values[k]) v.known = *values[k];
    onnx_values[proto.input(j)] = std::move(v);
    ++k;
  }
  if (k != static_cast<int>(types.size()))
    return node.MakeNodeError(ErrorCode::kInvalidArgument, "has ", types.size(),
                              " inputs; its ONNX node names ", k);
  OnnxNode n(g, proto, opset, onnx_values, label);
  {
    GraphBuilder::SourceOverride at(&g, label);
    KILN_RETURN_IF_ERROR(converter->second(n));
  }
  if (!g.errors().empty()) return g.errors().front();
  DeferredExpansion expansion;
  std::vector<Value> outputs;
  for (int i = 0; i < proto.output_size(); ++i) {
    if (!n.wants_output(i)) continue;
    auto it = onnx_values.find(proto.output(i));
    if (it == onnx_values.end() || !it->second.value.valid())
      return MakeError(ErrorCode::kUnimplemented, label, ": output ", i,
                       " is not supported by kiln's converter");
    outputs.push_back(it->second.value);
  }
  for (const Value& v : outputs) expansion.outputs.push_back(v.ref());
  KILN_ASSIGN_OR_RETURN(expansion.graph, g.Build());
  return expansion;
}

}  // namespace

Status DeferNode(OnnxNode& n, const std::map<std::string, TensorType>& declared) {
  std::vector<Value> inputs;
  std::set<std::string> seen;
  for (int j = 0; j < n.num_inputs(); ++j) {
    if (!n.has_input(j) || !seen.insert(n.input_name(j)).second) continue;
    KILN_ASSIGN_OR_RETURN(Value v, n.input(j));
    inputs.push_back(v);
  }
  if (inputs.empty()) return n.Unsupported("has no inputs to wait for");
  std::vector<TensorType> types;
  std::vector<int> outputs;  // the ONNX outputs the Deferred node computes, in order
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (!n.wants_output(i)) continue;
    auto given = declared.find(n.proto().output(i));
    std::optional<TensorType> type;
    if (given != declared.end())
      type = given->second;
    else
      type = ImpliedType(n, i);
    if (!type)
      return n.Unsupported("output ", i, " '", n.proto().output(i),
                           "': its rank depends on values known only at run time, and the model "
                           "does not declare its type (value_info)");
    types.push_back(*type);
    outputs.push_back(i);
  }
  if (types.empty()) return OkStatus();  // nothing uses it
  RegisterOnnxExpander();
  std::vector<Value> values =
      Deferred(n.g(), kExpanderName, TextOf(n.proto()), n.opset(), inputs, types);
  for (size_t k = 0; k < outputs.size(); ++k) n.SetOutput(outputs[k], values[k]);
  return OkStatus();
}

void RegisterOnnxExpander() {
  static std::once_flag once;
  std::call_once(once, [] { RegisterDeferredExpander(kExpanderName, ExpandOnnxNode); });
}

}  // namespace kiln::onnx_import
