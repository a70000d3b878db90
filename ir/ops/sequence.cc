#include "ir/ops/sequence.h"

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {
namespace {

using internal::MakeOp;
using internal::OneAttr;

std::vector<Value> WithOptional(std::vector<Value> inputs, Value optional) {
  if (optional.valid()) inputs.push_back(optional);
  return inputs;
}

AttrMap DeclaredElement(DType dtype, Shape shape) {
  AttrMap a;
  a.Set("dtype", dtype);
  a.Set("shape", std::move(shape));
  return a;
}

// Input i, the position (where present), is a scalar.
Status CheckPosition(InferContext& ctx, int i) {
  if (i < ctx.num_inputs() && ctx.shape(i).rank() != 0)
    return ctx.Fail("its position must be a scalar, got ", ctx.input(i).ToString());
  return OkStatus();
}

Status InferSequenceOut(InferContext& ctx) {
  ctx.AddOutput(seq, Shape{});
  return OkStatus();
}

Status InferSequenceEmpty(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(DType dtype, ctx.attrs().GetDType("dtype"));
  if (!IsNumeric(dtype) && dtype != boolean)
    return ctx.Fail("a sequence holds tensors, not ", DTypeName(dtype));
  return InferSequenceOut(ctx);
}

Status InferSequenceConstruct(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.Fail("needs at least one element");
  return InferSequenceOut(ctx);
}

Status InferSequenceInsert(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckPosition(ctx, 2));
  return InferSequenceOut(ctx);
}

Status InferSequenceErase(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckPosition(ctx, 1));
  return InferSequenceOut(ctx);
}

// An element as the node declares it.
Status InferDeclaredElement(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(DType dtype, ctx.attrs().GetDType("dtype"));
  KILN_ASSIGN_OR_RETURN(Shape shape, ctx.attrs().GetShape("shape"));
  if (dtype == optional || (dtype == seq && shape.rank() != 0))
    return ctx.Fail("declares its element ", DTypeName(dtype), shape.ToString(),
                    ", expected a tensor or a sequence (shape [])");
  ctx.AddOutput(dtype, std::move(shape));
  return OkStatus();
}

Status InferSequenceAt(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckPosition(ctx, 1));
  KILN_ASSIGN_OR_RETURN(DType dtype, ctx.attrs().GetDType("dtype"));
  if (IsContainer(dtype)) return ctx.Fail("a sequence holds tensors, not ", DTypeName(dtype));
  return InferDeclaredElement(ctx);
}

Status InferScalar(InferContext& ctx, DType dtype) {
  ctx.AddOutput(dtype, Shape{});
  return OkStatus();
}

Status InferOptionalOf(InferContext& ctx) {
  if (ctx.dtype(0) == optional) return ctx.Fail("an optional holds a tensor or a sequence");
  ctx.AddOutput(optional, Shape{});
  return OkStatus();
}

Status InferOptionalNone(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(DType dtype, ctx.attrs().GetDType("dtype"));
  if (dtype == optional) return ctx.Fail("an optional holds a tensor or a sequence");
  ctx.AddOutput(optional, Shape{});
  return OkStatus();
}

std::vector<DType> TensorAndSequenceTypes() {
  std::vector<DType> types = AllDTypes();
  types.push_back(seq);
  return types;
}

OpDefBuilder ContainerOp(const char* name) {
  OpDefBuilder b(name, "array");
  b.NotDifferentiable().NoPrecisionList().Flops(NoFlops()).GivesContainers();
  return b;
}

}  // namespace

Value SequenceEmpty(GraphBuilder& g, DType dtype, SourceLocation loc) {
  return g.AddOp1("SequenceEmpty", {}, OneAttr("dtype", dtype), loc);
}

Value SequenceConstruct(const std::vector<Value>& elements, SourceLocation loc) {
  return MakeOp("SequenceConstruct", elements, {}, loc);
}

Value SequenceInsert(At sequence, Value element, Value position) {
  return MakeOp("SequenceInsert", WithOptional({sequence.value, element}, position), {},
                sequence.loc);
}

Value SequenceErase(At sequence, Value position) {
  return MakeOp("SequenceErase", WithOptional({sequence.value}, position), {}, sequence.loc);
}

Value SequenceAt(At sequence, Value position, DType dtype, Shape shape) {
  return MakeOp("SequenceAt", {sequence.value, position}, DeclaredElement(dtype, std::move(shape)),
                sequence.loc);
}

Value SequenceLength(At sequence) {
  return MakeOp("SequenceLength", {sequence.value}, {}, sequence.loc);
}

Value OptionalOf(At value) { return MakeOp("OptionalOf", {value.value}, {}, value.loc); }

Value OptionalNone(GraphBuilder& g, DType dtype, SourceLocation loc) {
  return g.AddOp1("OptionalNone", {}, OneAttr("dtype", dtype), loc);
}

Value OptionalHasElement(At optional) {
  return MakeOp("OptionalHasElement", {optional.value}, {}, optional.loc);
}

Value OptionalGetElement(At optional, DType dtype, Shape shape) {
  return MakeOp("OptionalGetElement", {optional.value}, DeclaredElement(dtype, std::move(shape)),
                optional.loc);
}

void RegisterSequenceOps(OpRegistry& r) {
  const std::vector<DType> index = {i32, i64};
  r.Register(ContainerOp("SequenceEmpty")
                 .Output("sequence")
                 .Attr("dtype", AttrType::kDType, f32)
                 .Infer(InferSequenceEmpty)
                 .Build());
  r.Register(ContainerOp("SequenceConstruct")
                 .VariadicInput("elements", "T")
                 .Output("sequence")
                 .Types("T", AllDTypes())
                 .Infer(InferSequenceConstruct)
                 .Build());
  r.Register(ContainerOp("SequenceInsert")
                 .Input("sequence", "S")
                 .Input("element", "T")
                 .OptionalInput("position", "I")
                 .Output("sequence")
                 .Types("S", {seq})
                 .Types("T", AllDTypes())
                 .Types("I", index)
                 .Infer(InferSequenceInsert)
                 .Build());
  r.Register(ContainerOp("SequenceErase")
                 .Input("sequence", "S")
                 .OptionalInput("position", "I")
                 .Output("sequence")
                 .Types("S", {seq})
                 .Types("I", index)
                 .Infer(InferSequenceErase)
                 .Build());
  r.Register(ContainerOp("SequenceAt")
                 .Input("sequence", "S")
                 .Input("position", "I")
                 .Output("element")
                 .Types("S", {seq})
                 .Types("I", index)
                 .RequiredAttr("dtype", AttrType::kDType)
                 .RequiredAttr("shape", AttrType::kShape)
                 .Infer(InferSequenceAt)
                 .Build());
  r.Register(ContainerOp("SequenceLength")
                 .Input("sequence", "S")
                 .Output("length")
                 .Types("S", {seq})
                 .Infer([](InferContext& ctx) { return InferScalar(ctx, i64); })
                 .Build());
  r.Register(ContainerOp("OptionalOf")
                 .Input("value", "V")
                 .Output("optional")
                 .Types("V", TensorAndSequenceTypes())
                 .Infer(InferOptionalOf)
                 .Build());
  r.Register(ContainerOp("OptionalNone")
                 .Output("optional")
                 .Attr("dtype", AttrType::kDType, f32)
                 .Infer(InferOptionalNone)
                 .Build());
  r.Register(ContainerOp("OptionalHasElement")
                 .Input("optional", "O")
                 .Output("has_element")
                 .Types("O", {optional})
                 .Infer([](InferContext& ctx) { return InferScalar(ctx, boolean); })
                 .Build());
  r.Register(ContainerOp("OptionalGetElement")
                 .Input("optional", "O")
                 .Output("value")
                 .Types("O", {optional})
                 .RequiredAttr("dtype", AttrType::kDType)
                 .RequiredAttr("shape", AttrType::kShape)
                 .Infer(InferDeclaredElement)
                 .Build());
}

}  // namespace kiln
