// ONNX sequence and optional ops as kiln's (ir/ops/sequence.h); SequenceMap, a loop, is in
// convert_control.cc.
//
// kiln's SequenceAt and OptionalGetElement declare their outputs' dtype and shape: the import
// takes them from what it knows of the container's elements (ElementType: the declared types of
// graph and body inputs, and what SequenceConstruct, SequenceInsert and Optional were given),
// and refuses the node when it does not know them.
#include "ir/io/onnx_tensor.h"
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/sequence.h"

namespace kiln::onnx_import {
namespace {

ElementTypePtr ElementOfValue(const Value& v, const ElementTypePtr& nested) {
  if (v.dtype() == seq) {
    auto e = std::make_shared<ElementType>();
    e->dtype = seq;
    e->element = nested;
    return e;
  }
  return TensorElementType(v.dtype(), v.shape());
}

Result<Value> ContainerInput(const OnnxNode& n, int i, DType dtype) {
  KILN_ASSIGN_OR_RETURN(Value v, n.input(i));
  if (v.dtype() != dtype)
    return n.Fail("input ", i, " must be a ", DTypeName(dtype), ", got ", v.type().ToString());
  return v;
}

// Position input i as a scalar (the suite passes one-element [1] tensors too), or an invalid
// Value when absent.
Value PositionInput(const OnnxNode& n, int i) {
  Result<Value> v = n.input(i);
  if (!n.has_input(i) || !v.ok()) return Value();
  return v->rank() == 0 ? *v : Reshape(*v, {});
}

Status ConvertSequenceEmpty(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(int64_t type, n.Int("dtype", 1));
  KILN_ASSIGN_OR_RETURN(DType dtype, OnnxDType(n, type));
  n.SetOutput(0, SequenceEmpty(n.g(), dtype), TensorElementType(dtype, std::nullopt));
  return OkStatus();
}

Status ConvertSequenceConstruct(OnnxNode& n) {
  std::vector<Value> elements;
  ElementTypePtr element;
  for (int i = 0; i < n.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(Value x, n.input(i));
    ElementTypePtr type = TensorElementType(x.dtype(), x.shape());
    element = i == 0 ? type : JoinElementTypes(element, type);
    elements.push_back(x);
  }
  n.SetOutput(0, SequenceConstruct(elements), element);
  return OkStatus();
}

Status ConvertSequenceInsert(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value s, ContainerInput(n, 0, seq));
  KILN_ASSIGN_OR_RETURN(Value x, n.input(1));
  n.SetOutput(0, SequenceInsert(s, x, PositionInput(n, 2)),
              GrownElementType(n.element_of(0), TensorElementType(x.dtype(), x.shape())));
  return OkStatus();
}

Status ConvertSequenceErase(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value s, ContainerInput(n, 0, seq));
  n.SetOutput(0, SequenceErase(s, PositionInput(n, 1)), n.element_of(0));
  return OkStatus();
}

Status ConvertSequenceAt(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value s, ContainerInput(n, 0, seq));
  Value position = PositionInput(n, 1);
  if (!position.valid()) return n.Fail("needs a position");
  KILN_ASSIGN_OR_RETURN(TensorType declared,
                        DeclaredElementType(n, n.element_of(0), "the sequence's elements"));
  n.SetOutput(0, SequenceAt(s, position, declared.dtype, declared.shape));
  return OkStatus();
}

Status ConvertSequenceLength(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value s, ContainerInput(n, 0, seq));
  n.SetOutput(0, SequenceLength(s));
  return OkStatus();
}

// Optional(x) holds x; Optional() with the attribute `type` holds none.
Status ConvertOptional(OnnxNode& n) {
  if (n.has_input(0)) {
    KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
    n.SetOutput(0, OptionalOf(x), ElementOfValue(x, n.element_of(0)));
    return OkStatus();
  }
  const onnx::AttributeProto* type = n.Attr("type");
  if (!type || !type->has_tp()) return n.Fail("needs an input or the attribute 'type'");
  ElementTypePtr element = TypeAsElement(type->tp());
  if (!element || element->dtype == DType::kInvalid)
    return n.Unsupported("an optional of this type (kiln's hold tensors or sequences of them)");
  n.SetOutput(0, OptionalNone(n.g(), element->dtype), element);
  return OkStatus();
}

Status ConvertOptionalHasElement(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value o, ContainerInput(n, 0, optional));
  n.SetOutput(0, OptionalHasElement(o));
  return OkStatus();
}

Status ConvertOptionalGetElement(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value o, n.input(0));
  if (o.dtype() != optional) {  // opset 18 passes a tensor or sequence through
    n.SetOutput(0, o, n.element_of(0));
    return OkStatus();
  }
  ElementTypePtr element = n.element_of(0);
  KILN_ASSIGN_OR_RETURN(TensorType declared,
                        DeclaredElementType(n, element, "the optional's value"));
  n.SetOutput(0, OptionalGetElement(o, declared.dtype, declared.shape),
              element ? element->element : nullptr);
  return OkStatus();
}

}  // namespace

ElementTypePtr TensorElementType(DType dtype, std::optional<Shape> shape) {
  auto e = std::make_shared<ElementType>();
  e->dtype = dtype;
  e->shape = std::move(shape);
  return e;
}

Result<TensorType> DeclaredElementType(const OnnxNode& n, const ElementTypePtr& element,
                                       const char* what) {
  if (!element || element->dtype == DType::kInvalid)
    return n.Unsupported("the type of ", what, " is not known at import");
  if (element->dtype == seq) return TensorType{seq, Shape{}};
  if (!element->shape) return n.Unsupported("the rank of ", what, " is not known at import");
  return TensorType{element->dtype, *element->shape};
}

ElementTypePtr ElementTypeOf(const onnx::TypeProto& type) {
  if (type.has_sequence_type() && type.sequence_type().has_elem_type())
    return TypeAsElement(type.sequence_type().elem_type());
  if (type.has_optional_type() && type.optional_type().has_elem_type())
    return TypeAsElement(type.optional_type().elem_type());
  return nullptr;
}

ElementTypePtr TypeAsElement(const onnx::TypeProto& type) {
  if (type.has_sequence_type()) {
    auto e = std::make_shared<ElementType>();
    e->dtype = seq;
    e->element = ElementTypeOf(type);
    return e;
  }
  if (!type.has_tensor_type()) return nullptr;
  const auto& tt = type.tensor_type();
  std::optional<DType> dtype = DTypeOfOnnx(tt.elem_type());
  if (!dtype) return nullptr;
  std::optional<Shape> shape;
  if (tt.has_shape()) {
    std::vector<int64_t> dims;
    for (const auto& d : tt.shape().dim())
      dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : kUnknownDim);
    shape = Shape(std::move(dims));
  }
  return TensorElementType(*dtype, std::move(shape));
}

ElementTypePtr JoinElementTypes(const ElementTypePtr& a, const ElementTypePtr& b) {
  if (!a || !b || a->dtype != b->dtype) return nullptr;
  if (a->dtype == seq) {
    auto e = std::make_shared<ElementType>();
    e->dtype = seq;
    e->element = JoinElementTypes(a->element, b->element);
    return e;
  }
  if (!a->shape || !b->shape || a->shape->rank() != b->shape->rank())
    return TensorElementType(a->dtype, std::nullopt);
  Shape joined = *a->shape;
  for (int d = 0; d < joined.rank(); ++d)
    if (joined[d] != (*b->shape)[d]) joined.set_dim(d, kUnknownDim);
  return TensorElementType(a->dtype, std::move(joined));
}

ElementTypePtr GrownElementType(const ElementTypePtr& before, const ElementTypePtr& added) {
  if (before && added && before->dtype == added->dtype && before->dtype != seq && !before->shape)
    return added;
  return JoinElementTypes(before, added);
}

void AddSequenceConverters(ConverterTable& t) {
  t["SequenceEmpty"] = ConvertSequenceEmpty;
  t["SequenceConstruct"] = ConvertSequenceConstruct;
  t["SequenceInsert"] = ConvertSequenceInsert;
  t["SequenceErase"] = ConvertSequenceErase;
  t["SequenceAt"] = ConvertSequenceAt;
  t["SequenceLength"] = ConvertSequenceLength;
  t["Optional"] = ConvertOptional;
  t["OptionalHasElement"] = ConvertOptionalHasElement;
  t["OptionalGetElement"] = ConvertOptionalGetElement;
}

}  // namespace kiln::onnx_import
