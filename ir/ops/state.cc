#include "ir/ops/state.h"

#include <algorithm>

#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {

const std::vector<std::string>& InitializerKinds() {
  static const std::vector<std::string> kinds = {"zeros",  "ones",           "constant",  "uniform",
                                                 "normal", "glorot_uniform", "he_normal", "tensor"};
  return kinds;
}

Value Variable(GraphBuilder& g, const std::string& name, DType dtype, Shape shape,
               const Initializer& init, SourceLocation loc) {
  return Variable(g, name, dtype, std::move(shape), init, true, loc);
}

Value Variable(GraphBuilder& g, const std::string& name, DType dtype, Shape shape,
               const Initializer& init, bool trainable, SourceLocation loc) {
  AttrMap a;
  if (!trainable) a.Set("trainable", false);
  a.Set("dtype", dtype);
  a.Set("shape", std::move(shape));
  a.Set("initializer", init.kind);
  if (init.kind == "constant") a.Set("init_value", init.value);
  if (init.kind == "uniform") {
    a.Set("init_low", init.low);
    a.Set("init_high", init.high);
  }
  if (init.kind == "normal") {
    a.Set("init_mean", init.mean);
    a.Set("init_stddev", init.stddev);
  }
  if (init.kind == "tensor") a.Set("init_tensor", init.tensor);
  if (init.seed != 0) a.Set("seed", init.seed);
  return g.AddOp1("Variable", {}, std::move(a), loc, name);
}

Value Assign(At v, Value x) { return internal::MakeOp("Assign", {v.value, x}, {}, v.loc); }
Value AssignAdd(At v, Value x) { return internal::MakeOp("AssignAdd", {v.value, x}, {}, v.loc); }
Value AssignSub(At v, Value x) { return internal::MakeOp("AssignSub", {v.value, x}, {}, v.loc); }
Value AssignAdd(At v, Value x, Value scale) {
  return internal::MakeOp("AssignAdd", {v.value, x, scale}, {}, v.loc);
}
Value AssignSub(At v, Value x, Value scale) {
  return internal::MakeOp("AssignSub", {v.value, x, scale}, {}, v.loc);
}
Value Identity(At x) { return internal::MakeOp("Identity", {x.value}, {}, x.loc); }
Value CheckNumerics(At x, const std::string& what) {
  AttrMap attrs;
  attrs.Set("what", what);
  return internal::MakeOp("CheckNumerics", {x.value}, std::move(attrs), x.loc);
}
Value StopGradient(At x) { return internal::MakeOp("StopGradient", {x.value}, {}, x.loc); }

Value Group(const std::vector<Value>& deps, const std::string& name, SourceLocation loc) {
  for (const Value& d : deps)
    if (d.valid()) {
      return d.builder()->AddOp("NoOp", {}, {}, loc, name, deps)[0];
    }
  return Value();
}

namespace {

Status InferPlaceholder(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(DType dtype, ctx.attrs().GetDType("dtype"));
  KILN_ASSIGN_OR_RETURN(Shape shape, ctx.attrs().GetShape("shape"));
  if (IsContainer(dtype) && shape.rank() != 0)
    return ctx.Fail("a ", DTypeName(dtype), " placeholder has shape [], not ", shape.ToString());
  ctx.AddOutput(dtype, shape);
  return OkStatus();
}

Status InferConstant(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Tensor value, ctx.attrs().GetTensor("value"));
  if (IsContainer(value.dtype()))
    return ctx.Fail("a constant holds a tensor, not a ", DTypeName(value.dtype()));
  ctx.AddOutput(value.dtype(), value.shape());
  return OkStatus();
}

Result<std::vector<Tensor>> ConstantValue(const InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Tensor value, ctx.attrs().GetTensor("value"));
  return std::vector<Tensor>{std::move(value)};
}

Status InferVariable(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(DType dtype, ctx.attrs().GetDType("dtype"));
  KILN_ASSIGN_OR_RETURN(Shape shape, ctx.attrs().GetShape("shape"));
  KILN_ASSIGN_OR_RETURN(std::string init, ctx.attrs().GetString("initializer"));
  if (!shape.IsFullyKnown())
    return ctx.Fail("a Variable needs a fully known shape, got ", shape.ToString());
  const auto& kinds = InitializerKinds();
  if (std::find(kinds.begin(), kinds.end(), init) == kinds.end())
    return ctx.Fail(
        "unknown initializer '", init,
        "' (expected zeros, ones, constant, uniform, normal, glorot_uniform, he_normal or tensor)");
  if (init == "tensor") {
    KILN_ASSIGN_OR_RETURN(Tensor t, ctx.attrs().GetTensor("init_tensor"));
    if (t.dtype() != dtype || t.shape() != shape)
      return ctx.Fail("initializer 'tensor' needs an init_tensor of type ", DTypeName(dtype),
                      shape.ToString(), ", got ", t.valid() ? t.Summary(0) : std::string("none"));
  } else if (init != "zeros" && init != "ones" && init != "constant" && !IsFloat(dtype))
    return ctx.Fail("initializer '", init, "' needs a float dtype, got ", DTypeName(dtype));
  KILN_ASSIGN_OR_RETURN(double stddev, ctx.attrs().GetFloat("init_stddev"));
  if (stddev < 0) return ctx.Fail("init_stddev must be >= 0, got ", stddev);
  ctx.AddOutput(dtype, shape);
  return OkStatus();
}

Status InferAssign(InferContext& ctx) {
  if (ctx.shape(0).rank() != ctx.shape(1).rank())
    return ctx.Fail("cannot assign a value of shape ", ctx.shape(1).ToString(),
                    " to a variable of shape ", ctx.shape(0).ToString());
  for (int i = 0; i < ctx.shape(0).rank(); ++i)
    if (ctx.shape(1)[i] >= 0 && ctx.shape(1)[i] != ctx.shape(0)[i])
      return ctx.Fail("cannot assign a value of shape ", ctx.shape(1).ToString(),
                      " to a variable of shape ", ctx.shape(0).ToString());
  if (ctx.num_inputs() == 3) {  // AssignAdd, AssignSub with a scale
    if (!IsFloat(ctx.dtype(0)))
      return ctx.Fail("a scaled update needs a float variable, got ", DTypeName(ctx.dtype(0)));
    if (ctx.shape(2).rank() != 0)
      return ctx.Fail("the scale must be a scalar, got shape ", ctx.shape(2).ToString());
  }
  ctx.AddOutput(ctx.dtype(0), ctx.shape(0));
  return OkStatus();
}

}  // namespace

void RegisterStateOps(OpRegistry& r) {
  std::vector<DType> all = AllDTypes();
  r.Register(OpDefBuilder("Placeholder", "state")
                 .Output("y")
                 .RequiredAttr("dtype", AttrType::kDType)
                 .RequiredAttr("shape", AttrType::kShape)
                 .Infer(InferPlaceholder)
                 .GivesContainers()
                 .NotDifferentiable()
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
  r.Register(OpDefBuilder("Constant", "state")
                 .Output("y")
                 .RequiredAttr("value", AttrType::kTensor)
                 .Infer(InferConstant)
                 .StaticValue(ConstantValue)
                 .NotDifferentiable()
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
  r.Register(OpDefBuilder("Variable", "state")
                 .Output("y")
                 .RequiredAttr("dtype", AttrType::kDType)
                 .RequiredAttr("shape", AttrType::kShape)
                 .Attr("initializer", AttrType::kString, "zeros")
                 .Attr("init_value", AttrType::kFloat, 0.0)
                 .Attr("init_low", AttrType::kFloat, -0.05)
                 .Attr("init_high", AttrType::kFloat, 0.05)
                 .Attr("init_mean", AttrType::kFloat, 0.0)
                 .Attr("init_stddev", AttrType::kFloat, 1.0)
                 .Attr("init_tensor", AttrType::kTensor, Tensor())
                 .Attr("seed", AttrType::kInt, int64_t{0})
                 .Attr("trainable", AttrType::kBool, true)
                 .Infer(InferVariable)
                 .Stateful()
                 .NotDifferentiable()
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
  r.Register(OpDefBuilder("Assign", "state")
                 .Input("variable", "T")
                 .Input("value", "T")
                 .Output("y")
                 .Types("T", all)
                 .Infer(InferAssign)
                 .Stateful()
                 .NotDifferentiable()
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
  for (const char* op : {"AssignAdd", "AssignSub"})
    r.Register(OpDefBuilder(op, "state")
                   .Input("variable", "T")
                   .Input("value", "T")
                   .OptionalInput("scale", "T")
                   .Output("y")
                   .Types("T", NumericTypes())
                   .Infer(InferAssign)
                   .Stateful()
                   .NotDifferentiable()
                   .NoPrecisionList()
                   .Flops(FlopsPerOutputElement())
                   .Build());
  std::vector<DType> all_and_containers = all;  // Identity passes sequences and optionals too
  all_and_containers.insert(all_and_containers.end(), {seq, optional});
  r.Register(OpDefBuilder("Identity", "state")
                 .Input("x", "T")
                 .Output("y")
                 .Types("T", all_and_containers)
                 .GivesContainers()
                 .Infer(SameAsInput(0))
                 .Grad([](GradContext& ctx) {
                   ctx.SetInputGrad(0, ctx.grad(0));
                   return OkStatus();
                 })
                 .Precision(PrecisionList::kNeutral)
                 .Flops(NoFlops())
                 .Build());
  r.Register(OpDefBuilder("CheckNumerics", "state")
                 .Input("x", "T")
                 .Output("y")
                 .Types("T", FloatTypes())
                 .RequiredAttr("what", AttrType::kString)
                 .Infer(SameAsInput(0))
                 .Grad([](GradContext& ctx) {
                   ctx.SetInputGrad(0, ctx.grad(0));
                   return OkStatus();
                 })
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
  r.Register(OpDefBuilder("StopGradient", "state")
                 .Input("x", "T")
                 .Output("y")
                 .Types("T", all)
                 .Infer(SameAsInput(0))
                 .NotDifferentiable()
                 .Precision(PrecisionList::kNeutral)
                 .Flops(NoFlops())
                 .Build());
  r.Register(OpDefBuilder("NoOp", "state")
                 .Infer([](InferContext&) { return OkStatus(); })
                 .NotDifferentiable()
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
}

}  // namespace kiln
