#include "ir/onnx/convert_context.h"

#include "ir/io/onnx_tensor.h"
#include "ir/ops/math.h"

namespace kiln::onnx_import {
namespace {

using A = onnx::AttributeProto;

const char* AttrTypeName(int t) {
  switch (t) {
    case A::FLOAT:
      return "FLOAT";
    case A::INT:
      return "INT";
    case A::STRING:
      return "STRING";
    case A::TENSOR:
      return "TENSOR";
    case A::GRAPH:
      return "GRAPH";
    case A::FLOATS:
      return "FLOATS";
    case A::INTS:
      return "INTS";
    case A::STRINGS:
      return "STRINGS";
    default:
      return "another kind";
  }
}

// For files that leave AttributeProto.type unset (IR version 1): the kind from the field set.
int KindOf(const A& a) {
  if (a.type() != A::UNDEFINED) return a.type();
  if (a.has_f()) return A::FLOAT;
  if (a.has_i()) return A::INT;
  if (a.has_s()) return A::STRING;
  if (a.has_t()) return A::TENSOR;
  if (a.has_g()) return A::GRAPH;
  if (a.floats_size()) return A::FLOATS;
  if (a.ints_size()) return A::INTS;
  if (a.strings_size()) return A::STRINGS;
  return A::UNDEFINED;
}

}  // namespace

Result<Value> OnnxNode::input(int i) const {
  if (!has_input(i)) return Fail("input ", i, " is required but absent");
  auto it = values_.find(node_.input(i));
  if (it == values_.end())
    return Fail("input ", i, " '", node_.input(i),
                "' is not a graph input, an initializer or an earlier node's output");
  return it->second.value;
}

const Tensor* OnnxNode::known(int i) const {
  if (!has_input(i)) return nullptr;
  auto it = values_.find(node_.input(i));
  if (it == values_.end() || !it->second.known.valid()) return nullptr;
  return &it->second.known;
}

Result<Tensor> OnnxNode::Const(int i) const {
  KILN_RETURN_IF_ERROR(input(i).status());
  const Tensor* t = known(i);
  if (!t)
    return NotKnownYet("input ", i, " '", node_.input(i),
                       "' must be known at import (a constant, an initializer or computed from "
                       "known shapes)");
  return *t;
}

Result<std::vector<int64_t>> OnnxNode::ConstInts(int i) const {
  KILN_ASSIGN_OR_RETURN(Tensor t, Const(i));
  if (!IsInteger(t.dtype()))
    return Fail("input ", i, " must be an integer tensor, got ", t.Summary(0));
  return KnownInts(t);
}

Result<double> OnnxNode::ConstScalar(int i) const {
  KILN_ASSIGN_OR_RETURN(Tensor t, Const(i));
  if (t.num_elements() != 1) return Fail("input ", i, " must be a scalar, got ", t.Summary(0));
  return t.GetDouble(0);
}

void OnnxNode::SetOutput(int i, Value v) {
  if (!wants_output(i) || !v.valid()) return;
  OnnxValue& out = values_[node_.output(i)];
  out.value = v;
  out.known = Tensor();
  out.partial.clear();
  out.element = nullptr;
}

void OnnxNode::SetOutput(int i, Value v, ElementTypePtr element) {
  SetOutput(i, v);
  if (wants_output(i) && v.valid()) values_[node_.output(i)].element = std::move(element);
}

ElementTypePtr OnnxNode::element_of(int i) const {
  if (!has_input(i)) return nullptr;
  const OnnxValue* v = value_of(node_.input(i));
  return v ? v->element : nullptr;
}

void OnnxNode::SetKnown(int i, const Tensor& t) {
  if (!wants_output(i)) return;
  OnnxValue& out = values_[node_.output(i)];
  out.value = g_.Constant(t);
  out.known = t;
  out.partial.clear();
}

std::optional<std::vector<DimEntry>> OnnxNode::Partial(int i) const {
  if (const Tensor* t = known(i);
      t && IsInteger(t->dtype()) && t->rank() <= 1 && t->num_elements() <= 64) {
    std::vector<DimEntry> entries;
    for (int64_t v : t->ToInts()) entries.push_back({v, "", 0});
    return entries;
  }
  if (!has_input(i)) return std::nullopt;
  auto it = values_.find(node_.input(i));
  if (it == values_.end() || it->second.partial.empty()) return std::nullopt;
  return it->second.partial;
}

void OnnxNode::SetPartial(int i, Value v, std::vector<DimEntry> entries) {
  if (!wants_output(i) || !v.valid()) return;
  bool all_known = true;
  for (const DimEntry& e : entries) all_known = all_known && e.of.empty();
  if (all_known && IsInteger(v.dtype()) && v.rank() <= 1 &&
      v.shape().NumElements() == static_cast<int64_t>(entries.size())) {
    Tensor t(v.dtype(), v.shape());
    for (size_t k = 0; k < entries.size(); ++k) t.SetInt(static_cast<int64_t>(k), entries[k].value);
    return SetKnown(i, t);
  }
  OnnxValue& out = values_[node_.output(i)];
  out.value = v;
  out.known = Tensor();
  out.partial = std::move(entries);
}

const onnx::AttributeProto* OnnxNode::Attr(const std::string& name) const {
  for (const A& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

Result<const onnx::AttributeProto*> OnnxNode::AttrOfType(const std::string& name, int type) const {
  const A* a = Attr(name);
  if (!a) return a;
  if (!a->ref_attr_name().empty())
    return Unsupported("attribute '", name, "' refers to a function attribute");
  int kind = KindOf(*a);
  if (kind != type)
    return Fail("attribute '", name, "' must be ", AttrTypeName(type), ", got ",
                AttrTypeName(kind));
  return a;
}

Result<int64_t> OnnxNode::Int(const std::string& name, int64_t def) const {
  KILN_ASSIGN_OR_RETURN(const A* a, AttrOfType(name, A::INT));
  return a ? a->i() : def;
}

Result<double> OnnxNode::Float(const std::string& name, double def) const {
  KILN_ASSIGN_OR_RETURN(const A* a, AttrOfType(name, A::FLOAT));
  return a ? double{a->f()} : def;
}

Result<std::string> OnnxNode::String(const std::string& name, const std::string& def) const {
  KILN_ASSIGN_OR_RETURN(const A* a, AttrOfType(name, A::STRING));
  return a ? a->s() : def;
}

Result<std::vector<int64_t>> OnnxNode::Ints(const std::string& name,
                                            const std::vector<int64_t>& def) const {
  const A* a = Attr(name);
  if (a && KindOf(*a) == A::UNDEFINED) return std::vector<int64_t>{};  // an empty list
  KILN_ASSIGN_OR_RETURN(a, AttrOfType(name, A::INTS));
  if (!a) return def;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

Result<std::vector<double>> OnnxNode::Floats(const std::string& name,
                                             const std::vector<double>& def) const {
  const A* a = Attr(name);
  if (a && KindOf(*a) == A::UNDEFINED) return std::vector<double>{};
  KILN_ASSIGN_OR_RETURN(a, AttrOfType(name, A::FLOATS));
  if (!a) return def;
  return std::vector<double>(a->floats().begin(), a->floats().end());
}

Result<Tensor> OnnxNode::TensorAttr(const std::string& name) const {
  KILN_ASSIGN_OR_RETURN(const A* a, AttrOfType(name, A::TENSOR));
  if (!a) return Fail("attribute '", name, "' is required");
  Result<Tensor> t = OnnxTensorFromProto(a->t(), "attribute " + name);
  if (!t.ok()) return t.error().WithContext(label_);
  return t;
}

std::vector<int64_t> KnownInts(const Tensor& t) { return t.ToInts(); }

bool AllInputsKnownSmallInts(const OnnxNode& n) {
  bool any = false;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) continue;
    const Tensor* t = n.known(i);
    if (!t || t->num_elements() > 4096 || !(IsInteger(t->dtype()) || t->dtype() == boolean))
      return false;
    any = true;
  }
  return any;
}

Result<Tensor> FoldInts(const OnnxNode& n, DType out,
                        const std::function<int64_t(const std::vector<int64_t>&)>& f) {
  std::vector<Tensor> in;
  Shape shape;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) continue;
    in.push_back(*n.known(i));
    Result<Shape> s = BroadcastShapes(shape, in.back().shape());
    if (!s.ok()) return n.Fail(s.error().message());
    shape = *s;
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(out, shape));
  std::vector<int64_t> strides = RowMajorStrides(shape);
  std::vector<int64_t> args(in.size());
  for (int64_t e = 0; e < t.num_elements(); ++e) {
    for (size_t k = 0; k < in.size(); ++k) {
      // The element of input k that broadcasts to output element e.
      const Shape& s = in[k].shape();
      int64_t index = 0, rem = e;
      int offset = shape.rank() - s.rank();
      for (int d = 0; d < shape.rank(); ++d) {
        int64_t coord = rem / strides[d];
        rem %= strides[d];
        if (d >= offset) index = index * s[d - offset] + (s[d - offset] == 1 ? 0 : coord);
      }
      args[k] = in[k].GetInt(index);
    }
    t.SetInt(e, f(args));
  }
  return t;
}

Result<DType> OnnxDType(const OnnxNode& n, int64_t onnx_type) {
  std::optional<DType> t = DTypeOfOnnx(static_cast<int32_t>(onnx_type));
  if (!t)
    return n.Unsupported("element type ", OnnxTypeName(static_cast<int32_t>(onnx_type)),
                         " is not supported by kiln");
  return *t;
}

Result<Tensor> NewTensor(const OnnxNode& n, DType dtype, Shape shape) {
  Result<Tensor> t = Tensor::Create(dtype, std::move(shape));
  if (!t.ok()) return t.error().WithContext(n.label());
  return t;
}

Result<int> Axis(const OnnxNode& n, int64_t axis, int rank) {
  Result<int> a = NormalizeAxis(axis, rank);
  if (!a.ok()) return n.Fail("axis ", axis, " is out of range for rank ", rank);
  return a;
}

Result<Value> Requantize(const OnnxNode& n, Value acc, Value multiplier, Value zp) {
  if (zp.dtype() != u8 && zp.dtype() != i8)
    return n.Unsupported("only uint8 and int8 outputs are supported, got ", zp.type().ToString());
  Value q = Round(acc * multiplier) + Cast(zp, f64);
  q = zp.dtype() == u8 ? Clip(q, 0, 255) : Clip(q, -128, 127);
  return Cast(q, zp.dtype());
}

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string ConverterKey(const onnx::NodeProto& node) {
  return IsDefaultDomain(node.domain()) ? node.op_type() : node.domain() + "." + node.op_type();
}

const ConverterTable& Converters() {
  static const ConverterTable* table = [] {
    auto* t = new ConverterTable;
    AddMathConverters(*t);
    AddActivationConverters(*t);
    AddNnConverters(*t);
    AddArrayConverters(*t);
    AddShapeConverters(*t);
    AddReduceConverters(*t);
    AddLinalgConverters(*t);
    AddEinsumConverter(*t);
    AddLossConverters(*t);
    AddMaskedConverters(*t);
    AddResizeConverters(*t);
    AddIndexConverters(*t);
    AddRnnConverters(*t);
    AddControlConverters(*t);
    AddSignalConverters(*t);
    AddTextConverters(*t);
    AddGridSampleConverter(*t);
    AddPoolConverters(*t);
    AddTrainingConverters(*t);
    AddSequenceConverters(*t);
    return t;
  }();
  return *table;
}

}  // namespace kiln::onnx_import
