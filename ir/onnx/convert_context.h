// What an ONNX op converter sees (internal to ir/onnx/): one NodeProto with its inputs as builder
// Values, the values known at import, typed attribute getters with defaults, and the opset.
//
// A converter is `Status Convert(OnnxNode& n)`: it reads inputs and attributes, builds kiln ops
// with the ordinary builder functions and reports each ONNX output with SetOutput (or SetKnown
// for a value computed at import). Converters live in ir/onnx/convert_<family>.cc, one Add*
// function per family filling the table. Errors name the node; a value needed at import that is
// not known is kUnimplemented ("must be known at import", through NotKnownYet).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "proto/onnx.pb.h"

namespace kiln::onnx_import {

// An ONNX tensor name's kiln Value, and its value when known at import.
// One entry of a shape vector that is only partly known at import: a number, or "dim `dim` of
// the ONNX value `of`" (unknown until run time). PyTorch's x.view(x.size(0), -1) exports such a
// vector: Shape -> Gather -> Unsqueeze -> Concat -> Reshape with an unknown batch dim.
struct DimEntry {
  int64_t value = 0;  // when `of` is empty
  std::string of;     // kRunTimeEntry: computed at run time from something else
  int dim = 0;
};
inline const char* const kRunTimeEntry = "<run time>";

// What the import knows of the elements of a sequence or optional value (from declared types and
// the ops that built it): SequenceAt and OptionalGetElement declare their outputs with it.
struct ElementType {
  DType dtype = DType::kInvalid;  // kInvalid: unknown; seq for an optional holding a sequence
  std::optional<Shape> shape;     // a tensor's shape (-1 dims unknown); nullopt: rank unknown
  std::shared_ptr<const ElementType> element;  // a nested sequence's elements
};
using ElementTypePtr = std::shared_ptr<const ElementType>;
// A tensor element of `dtype` and `shape` (nullopt: rank unknown).
ElementTypePtr TensorElementType(DType dtype, std::optional<Shape> shape);
// The element type of an ONNX sequence or optional type (null for a tensor type).
ElementTypePtr ElementTypeOf(const onnx::TypeProto& type);
// A value of ONNX type `type` (a tensor or a sequence) as an element (null for other types).
ElementTypePtr TypeAsElement(const onnx::TypeProto& type);
// The type both `a` and `b` fit (dims that differ unknown; null when either is).
ElementTypePtr JoinElementTypes(const ElementTypePtr& a, const ElementTypePtr& b);
// The elements of a sequence of `before` elements after elements of `added` join it: their join,
// or `added` when `before` has no rank (an empty sequence's elements are only a dtype).
ElementTypePtr GrownElementType(const ElementTypePtr& before, const ElementTypePtr& added);

struct OnnxValue {
  Value value;
  ElementTypePtr element;  // of a sequence or optional value, when known
  Tensor known;            // invalid when not known
  // For a scalar or 1-D integer value that is not fully known: what is known of each entry.
  std::vector<DimEntry> partial;
};

class OnnxNode {
 public:
  OnnxNode(GraphBuilder& g, const onnx::NodeProto& node, int64_t opset,
           std::map<std::string, OnnxValue>& values, std::string label)
      : g_(g), node_(node), opset_(opset), values_(values), label_(std::move(label)) {}

  GraphBuilder& g() const { return g_; }
  const onnx::NodeProto& proto() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  int64_t opset() const { return opset_; }
  // "node 'name' (Op)" for messages.
  const std::string& label() const { return label_; }

  // Inputs: optional ones may be absent (fewer inputs) or named "".
  int num_inputs() const { return node_.input_size(); }
  bool has_input(int i) const { return i < node_.input_size() && !node_.input(i).empty(); }
  // The Value of input i; an error when it is absent.
  Result<Value> input(int i) const;
  // The value of input i when it is known at import (nullptr otherwise or when absent).
  const Tensor* known(int i) const;
  // The value of input i, which must be known at import.
  Result<Tensor> Const(int i) const;
  Result<std::vector<int64_t>> ConstInts(int i) const;
  // A scalar input known at import, as a double.
  Result<double> ConstScalar(int i) const;

  int num_outputs() const { return node_.output_size(); }
  // True when output i exists and is used (named).
  bool wants_output(int i) const { return i < node_.output_size() && !node_.output(i).empty(); }
  void SetOutput(int i, Value v);
  // Output i is the sequence or optional `v` whose elements are `element`.
  void SetOutput(int i, Value v, ElementTypePtr element);
  // What is known of input i's elements (a sequence or optional; null when unknown or absent).
  ElementTypePtr element_of(int i) const;
  // Output i is `t`, computed at import: a Constant.
  void SetKnown(int i, const Tensor& t);
  // The entries of input i when it is a partly known shape vector (or known: then all numbers);
  // nullopt otherwise.
  std::optional<std::vector<DimEntry>> Partial(int i) const;
  // Output i is `v`, whose entries are `entries` (for a shape vector partly known at import).
  void SetPartial(int i, Value v, std::vector<DimEntry> entries);
  // The ONNX name of input i.
  const std::string& input_name(int i) const { return node_.input(i); }
  // Any value of the enclosing graph by its ONNX name (what a subgraph reads), or null.
  const OnnxValue* value_of(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }

  // Attributes. Getters with a default return it when the attribute is absent; an attribute of
  // the wrong kind is an error.
  bool has_attr(const std::string& name) const { return Attr(name) != nullptr; }
  const onnx::AttributeProto* Attr(const std::string& name) const;
  Result<int64_t> Int(const std::string& name, int64_t def) const;
  Result<double> Float(const std::string& name, double def) const;
  Result<std::string> String(const std::string& name, const std::string& def) const;
  Result<std::vector<int64_t>> Ints(const std::string& name,
                                    const std::vector<int64_t>& def = {}) const;
  Result<std::vector<double>> Floats(const std::string& name,
                                     const std::vector<double>& def = {}) const;
  Result<Tensor> TensorAttr(const std::string& name) const;

  // An error about this node.
  template <typename... Args>
  Error Fail(const Args&... parts) const {
    return MakeError(ErrorCode::kInvalidArgument, label_, ": ", parts...);
  }
  template <typename... Args>
  Error Unsupported(const Args&... parts) const {
    return MakeError(ErrorCode::kUnimplemented, label_, ": ", parts...);
  }
  // The node cannot be converted until a value or dim not known at import is (a fed input, a
  // dynamic dim): the importer then defers it (deferred_node.h) instead of failing.
  template <typename... Args>
  Error NotKnownYet(const Args&... parts) const {
    waits_for_values_ = true;
    return Unsupported(parts...);
  }
  bool waits_for_values() const { return waits_for_values_; }

 private:
  Result<const onnx::AttributeProto*> AttrOfType(const std::string& name, int type) const;
  GraphBuilder& g_;
  const onnx::NodeProto& node_;
  int64_t opset_;
  std::map<std::string, OnnxValue>& values_;
  std::string label_;
  mutable bool waits_for_values_ = false;
};

using ConvertFn = Status (*)(OnnxNode& n);
using ConverterTable = std::map<std::string, ConvertFn>;

// One per family (ir/onnx/convert_<family>.cc).
void AddMathConverters(ConverterTable& t);
void AddActivationConverters(ConverterTable& t);
void AddNnConverters(ConverterTable& t);
void AddArrayConverters(ConverterTable& t);
void AddShapeConverters(ConverterTable& t);
void AddReduceConverters(ConverterTable& t);
void AddLinalgConverters(ConverterTable& t);
void AddEinsumConverter(ConverterTable& t);
void AddLossConverters(ConverterTable& t);
void AddMaskedConverters(ConverterTable& t);
void AddResizeConverters(ConverterTable& t);
void AddIndexConverters(ConverterTable& t);
void AddRnnConverters(ConverterTable& t);
void AddControlConverters(ConverterTable& t);
void AddSignalConverters(ConverterTable& t);
void AddTextConverters(ConverterTable& t);
void AddGridSampleConverter(ConverterTable& t);
void AddPoolConverters(ConverterTable& t);
void AddTrainingConverters(ConverterTable& t);
void AddSequenceConverters(ConverterTable& t);

// Every converter, by ConverterKey.
const ConverterTable& Converters();
// Whether `domain` is ONNX's default one ("" or "ai.onnx").
bool IsDefaultDomain(const std::string& domain);
// A node's op as the converter table names it: the op type in the default domain, else
// "<domain>.<op type>" (ai.onnx.preview.training.Adam).
std::string ConverterKey(const onnx::NodeProto& node);

// Graphs of nodes (ir/onnx/convert_graph.cc), for the model's graph and for If's and Loop's
// subgraphs alike.
// "node 'conv1' (Conv)", or "node #3 (Conv)" when it has no name.
std::string NodeLabel(const onnx::NodeProto& n, int index);
// The tensor types a graph declares for its values (value_info and outputs, with shapes).
void AddDeclaredTypes(const onnx::GraphProto& graph, std::map<std::string, TensorType>& declared);
// Converts one node (node `index` of its graph) into `g`: its inputs are read from `values`, its
// outputs added there; a node whose converter needs a value not known yet becomes a Deferred node
// (deferred_node.h, with the `declared` types). Errors name the node and `origin`.
Status ConvertNode(GraphBuilder& g, std::map<std::string, OnnxValue>& values,
                   const std::map<std::string, TensorType>& declared, const onnx::NodeProto& node,
                   int index, int64_t opset, const std::string& origin);
// Converts a subgraph's initializers (as Constants) and nodes into `g`; `values` already holds its
// inputs and the names it reads from enclosing graphs.
Status ConvertSubgraphNodes(GraphBuilder& g, const onnx::GraphProto& body, int64_t opset,
                            const std::string& origin, std::map<std::string, OnnxValue>& values);
// The names a subgraph (or a subgraph in it) reads without defining them, in order of first use.
std::vector<std::string> OuterNames(const onnx::GraphProto& body);

// Shared helpers for converters.
// The dtype and shape a node declares for a value of `element` (a tensor, or a sequence: seq[]),
// or kUnimplemented naming `what` when the import does not know them.
Result<TensorType> DeclaredElementType(const OnnxNode& n, const ElementTypePtr& element,
                                       const char* what);
// The integer elements of a known tensor.
std::vector<int64_t> KnownInts(const Tensor& t);
// True when every present input is known at import and is a small integer or bool tensor: the
// node may then be evaluated at import (shape arithmetic).
bool AllInputsKnownSmallInts(const OnnxNode& n);
// Evaluates an elementwise function of the node's known integer/bool inputs at import, with numpy
// broadcasting; the result has dtype `out`.
Result<Tensor> FoldInts(const OnnxNode& n, DType out,
                        const std::function<int64_t(const std::vector<int64_t>&)>& f);
// The kiln dtype of an ONNX TensorProto.DataType (kUnimplemented for types kiln lacks).
Result<DType> OnnxDType(const OnnxNode& n, int64_t onnx_type);
// A zero-filled tensor whose size comes from the model: an error (not a crash) when too large.
Result<Tensor> NewTensor(const OnnxNode& n, DType dtype, Shape shape);
// Normalizes axis against rank or fails naming the node.
Result<int> Axis(const OnnxNode& n, int64_t axis, int rank);
// QLinear ops' output: the exact integer accumulator `acc` (f64) times `multiplier` (f64, input
// scales over the output scale, broadcast to acc), rounded half to even, plus zero point `zp` (u8
// or i8), saturated to zp's dtype.
Result<Value> Requantize(const OnnxNode& n, Value acc, Value multiplier, Value zp);

// Shape vectors whose values are known only at run time (ir/onnx/dynamic_shape.cc), e.g. a shape
// computed from a dynamic batch dim. One entry: a number known at import, or (`runtime` valid) a
// scalar i64 Value. Such a shape is realized as a tensor of zeros built with Range, whose shape
// shape-following ops (ReshapeLike, broadcasting) then take; entries that turn out negative at
// run time give an empty dim there (a later element-count check reports it).
struct ShapeDim {
  int64_t value = 0;
  Value runtime;
};
inline constexpr int64_t kMaxDynamicRank = 16;
// The entries of input i, a 1-D integer shape vector of known length: numbers where known at
// import (a known tensor, or the known entries of a partly known one), run-time scalars elsewhere.
Result<std::vector<ShapeDim>> ShapeDims(const OnnxNode& n, int i);
// Zeros of `dtype` in the shape `dims` (every number must be >= 0).
Result<Value> ZerosOfDims(const OnnxNode& n, const std::vector<ShapeDim>& dims, DType dtype);
// ONNX Reshape of x to `dims`: a 0 copies x's dim (unless allowzero), one -1 is inferred from
// the element count, for entries known at import and run-time entries alike.
Result<Value> ReshapeToDims(const OnnxNode& n, Value x, std::vector<ShapeDim> dims, bool allowzero);

}  // namespace kiln::onnx_import
