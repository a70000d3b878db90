// ONNX sequence and optional ops as kiln's (ir/ops/sequence.h), and SequenceMap as a While over
// the sequences' elements (ir/ops/control.h).
//
// kiln's SequenceAt and OptionalGetElement declare their outputs' dtype and shape: the import
// takes them from what it knows of the container's elements (ElementType: the declared types of
// graph and body inputs, and what SequenceConstruct, SequenceInsert and Optional were given),
// and refuses the node when it does not know them.
#include <limits>

#include "ir/io/onnx_tensor.h"
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/control.h"
#include "ir/ops/math.h"
#include "ir/ops/sequence.h"

namespace kiln::onnx_import {
namespace {

ElementTypePtr TensorElement(DType dtype, std::optional<Shape> shape) {
  auto e = std::make_shared<ElementType>();
  e->dtype = dtype;
  e->shape = std::move(shape);
  return e;
}

ElementTypePtr ElementOfValue(const Value& v, const ElementTypePtr& nested) {
  if (v.dtype() == seq) {
    auto e = std::make_shared<ElementType>();
    e->dtype = seq;
    e->element = nested;
    return e;
  }
  return TensorElement(v.dtype(), v.shape());
}

// The dtype and shape a node declares for an element of `element`, or an error naming what is
// unknown.
Result<std::pair<DType, Shape>> Declared(const OnnxNode& n, const ElementTypePtr& element,
                                         const char* what) {
  if (!element || element->dtype == DType::kInvalid)
    return n.Unsupported("the type of ", what, " is not known at import");
  if (element->dtype == seq) return std::make_pair(seq, Shape{});
  if (!element->shape) return n.Unsupported("the rank of ", what, " is not known at import");
  return std::make_pair(element->dtype, *element->shape);
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
  n.SetOutput(0, SequenceEmpty(n.g(), dtype), TensorElement(dtype, std::nullopt));
  return OkStatus();
}

Status ConvertSequenceConstruct(OnnxNode& n) {
  std::vector<Value> elements;
  ElementTypePtr element;
  for (int i = 0; i < n.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(Value x, n.input(i));
    ElementTypePtr type = TensorElement(x.dtype(), x.shape());
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
              GrownElementType(n.element_of(0), TensorElement(x.dtype(), x.shape())));
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
  KILN_ASSIGN_OR_RETURN(auto declared, Declared(n, n.element_of(0), "the sequence's elements"));
  n.SetOutput(0, SequenceAt(s, position, declared.first, declared.second));
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
  KILN_ASSIGN_OR_RETURN(auto declared, Declared(n, element, "the optional's value"));
  n.SetOutput(0, OptionalGetElement(o, declared.first, declared.second),
              element ? element->element : nullptr);
  return OkStatus();
}

// SequenceMap(s0, x1, ...) with body (e0, x1, ...) -> (y0, ...): for each position t of the
// sequences, the body on element t of every sequence input and the other inputs as they are; the
// k-th outputs of all iterations form output sequence k. It becomes While over (t, length, the
// inputs, the captured values, the output sequences), the body inserting each result at the end.
Status ConvertSequenceMap(OnnxNode& n) {
  const onnx::AttributeProto* attr = n.Attr("body");
  if (!attr || !attr->has_g()) return n.Fail("needs the graph attribute 'body'");
  const onnx::GraphProto& body = attr->g();
  if (body.input_size() != n.num_inputs())
    return n.Fail("its body takes ", body.input_size(), " inputs for ", n.num_inputs());
  if (body.output_size() != n.num_outputs() || n.num_outputs() < 1)
    return n.Fail("its body gives ", body.output_size(), " outputs for ", n.num_outputs());
  GraphBuilder& g = n.g();
  KILN_ASSIGN_OR_RETURN(Value first, ContainerInput(n, 0, seq));
  std::vector<Value> vars = {g.Constant(Tensor::Scalar<int64_t>(0)), SequenceLength(first)};
  for (int k = 0; k < n.num_inputs(); ++k) {
    KILN_ASSIGN_OR_RETURN(Value v, n.input(k));
    vars.push_back(v);
  }
  const std::vector<std::string> captured = OuterNames(body);
  for (const std::string& name : captured) {
    const OnnxValue* v = n.value_of(name);
    if (!v || !v->value.valid())
      return n.Fail("its body reads '", name,
                    "', which is not a graph input, an initializer or an earlier node's output");
    vars.push_back(v->value);
  }
  GraphBuilder bg;
  std::vector<Value> args;
  for (size_t k = 0; k < vars.size(); ++k)
    args.push_back(bg.Placeholder("arg_" + std::to_string(k), vars[k].dtype(), vars[k].shape()));
  std::map<std::string, OnnxValue> values;
  for (int k = 0; k < n.num_inputs(); ++k) {
    Value arg = args[2 + k];
    OnnxValue v;
    if (arg.dtype() == seq) {
      ElementTypePtr element = ElementTypeOf(body.input(k).type());
      if (!element || !element->shape) element = n.element_of(k);
      KILN_ASSIGN_OR_RETURN(auto declared, Declared(n, element, "the sequence's elements"));
      v.value = SequenceAt(arg, args[0], declared.first, declared.second);
    } else {
      v.value = arg;
      v.element = n.element_of(k);
    }
    values[body.input(k).name()] = std::move(v);
  }
  for (size_t k = 0; k < captured.size(); ++k) {
    OnnxValue v = *n.value_of(captured[k]);
    v.value = args[2 + n.num_inputs() + k];
    values[captured[k]] = std::move(v);
  }
  KILN_RETURN_IF_ERROR(ConvertSubgraphNodes(bg, body, n.opset(), n.label() + " body", values));
  std::vector<Value> next = {args[0] + 1.0, args[1]};
  for (size_t k = 2; k < args.size(); ++k) next.push_back(args[k]);  // unchanged
  std::vector<ElementTypePtr> out_elements;
  for (int j = 0; j < body.output_size(); ++j) {
    auto it = values.find(body.output(j).name());
    if (it == values.end() || !it->second.value.valid())
      return n.Fail("its body's output '", body.output(j).name(), "' is not computed in it");
    const Value y = it->second.value;
    if (IsContainer(y.dtype()))
      return n.Unsupported("a body output of type ", DTypeName(y.dtype()),
                           " (kiln's sequences hold tensors)");
    Value out = bg.Placeholder("arg_" + std::to_string(vars.size()), seq, Shape{});
    next.push_back(SequenceInsert(out, y));
    vars.push_back(SequenceEmpty(g, y.dtype()));
    out_elements.push_back(TensorElement(y.dtype(), y.shape()));
  }
  for (size_t i = 0; i < next.size(); ++i) bg.Output("result_" + std::to_string(i), next[i]);
  Result<Graph> built = bg.Build();
  if (!built.ok()) return n.Fail("body: ", built.error().message());
  auto loop_body = std::make_shared<const Graph>(std::move(*built));
  std::vector<TensorType> types;
  for (const Value& v : vars) types.push_back(v.type());
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> cond,
                        BuildBody(types, [](const std::vector<Value>& a) {
                          return std::vector<Value>{Less(a[0], a[1])};
                        }));
  std::vector<Value> finals = While(vars, cond, loop_body);
  if (finals.size() != vars.size()) return n.Fail("its loop could not be built");
  const size_t outputs_from = vars.size() - body.output_size();
  for (int j = 0; j < body.output_size(); ++j)
    n.SetOutput(j, finals[outputs_from + j], out_elements[j]);
  return OkStatus();
}

}  // namespace

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
  return TensorElement(*dtype, std::move(shape));
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
    return TensorElement(a->dtype, std::nullopt);
  Shape joined = *a->shape;
  for (int d = 0; d < joined.rank(); ++d)
    if (joined[d] != (*b->shape)[d]) joined.set_dim(d, kUnknownDim);
  return TensorElement(a->dtype, std::move(joined));
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
  t["SequenceMap"] = ConvertSequenceMap;
  t["Optional"] = ConvertOptional;
  t["OptionalHasElement"] = ConvertOptionalHasElement;
  t["OptionalGetElement"] = ConvertOptionalGetElement;
}

}  // namespace kiln::onnx_import
