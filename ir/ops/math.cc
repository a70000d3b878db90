#include "ir/ops/math.h"

#include <cmath>

#include "ir/ops/math_grad.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {

using internal::MakeOp;

Value Exp(At x) { return MakeOp("Exp", {x.value}, {}, x.loc); }
Value Log(At x) { return MakeOp("Log", {x.value}, {}, x.loc); }
Value Sqrt(At x) { return MakeOp("Sqrt", {x.value}, {}, x.loc); }
Value Rsqrt(At x) { return MakeOp("Rsqrt", {x.value}, {}, x.loc); }
Value Reciprocal(At x) { return MakeOp("Reciprocal", {x.value}, {}, x.loc); }
Value Sigmoid(At x) { return MakeOp("Sigmoid", {x.value}, {}, x.loc); }
Value Tanh(At x) { return MakeOp("Tanh", {x.value}, {}, x.loc); }
Value Erf(At x) { return MakeOp("Erf", {x.value}, {}, x.loc); }
Value Sin(At x) { return MakeOp("Sin", {x.value}, {}, x.loc); }
Value Cos(At x) { return MakeOp("Cos", {x.value}, {}, x.loc); }
Value Asin(At x) { return MakeOp("Asin", {x.value}, {}, x.loc); }
Value Acos(At x) { return MakeOp("Acos", {x.value}, {}, x.loc); }
Value Atan(At x) { return MakeOp("Atan", {x.value}, {}, x.loc); }
Value Floor(At x) { return MakeOp("Floor", {x.value}, {}, x.loc); }
Value Ceil(At x) { return MakeOp("Ceil", {x.value}, {}, x.loc); }
Value Round(At x) { return MakeOp("Round", {x.value}, {}, x.loc); }
Value Neg(At x) { return MakeOp("Neg", {x.value}, {}, x.loc); }
Value Abs(At x) { return MakeOp("Abs", {x.value}, {}, x.loc); }
Value Square(At x) { return MakeOp("Square", {x.value}, {}, x.loc); }
Value Sign(At x) { return MakeOp("Sign", {x.value}, {}, x.loc); }
Value Relu(At x) { return MakeOp("Relu", {x.value}, {}, x.loc); }
Value Not(At x) { return MakeOp("Not", {x.value}, {}, x.loc); }
Value ZerosLike(At x) { return MakeOp("ZerosLike", {x.value}, {}, x.loc); }
Value OnesLike(At x) { return MakeOp("OnesLike", {x.value}, {}, x.loc); }

Value Elu(At x, double alpha) {
  AttrMap a;
  a.Set("alpha", alpha);
  return MakeOp("Elu", {x.value}, std::move(a), x.loc);
}
Value Gelu(At x, const std::string& approximate) {
  AttrMap a;
  a.Set("approximate", approximate);
  return MakeOp("Gelu", {x.value}, std::move(a), x.loc);
}
double GeluTanhValue(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
Value LeakyRelu(At x, double alpha) {
  AttrMap a;
  a.Set("alpha", alpha);
  return MakeOp("LeakyRelu", {x.value}, std::move(a), x.loc);
}
Value Clip(At x, double min, double max) {
  AttrMap a;
  a.Set("min", min);
  a.Set("max", max);
  return MakeOp("Clip", {x.value}, std::move(a), x.loc);
}
Value Cast(At x, DType to) {
  AttrMap a;
  a.Set("to", to);
  return MakeOp("Cast", {x.value}, std::move(a), x.loc);
}

Value Add(At a, Value b) { return MakeOp("Add", {a.value, b}, {}, a.loc); }
Value Sub(At a, Value b) { return MakeOp("Sub", {a.value, b}, {}, a.loc); }
Value Mul(At a, Value b) { return MakeOp("Mul", {a.value, b}, {}, a.loc); }
Value Div(At a, Value b) { return MakeOp("Div", {a.value, b}, {}, a.loc); }
Value Pow(At a, Value b) { return MakeOp("Pow", {a.value, b}, {}, a.loc); }
Value Maximum(At a, Value b) { return MakeOp("Maximum", {a.value, b}, {}, a.loc); }
Value Minimum(At a, Value b) { return MakeOp("Minimum", {a.value, b}, {}, a.loc); }
Value Equal(At a, Value b) { return MakeOp("Equal", {a.value, b}, {}, a.loc); }
Value Less(At a, Value b) { return MakeOp("Less", {a.value, b}, {}, a.loc); }
Value LessEqual(At a, Value b) { return MakeOp("LessEqual", {a.value, b}, {}, a.loc); }
Value Greater(At a, Value b) { return MakeOp("Greater", {a.value, b}, {}, a.loc); }
Value GreaterEqual(At a, Value b) { return MakeOp("GreaterEqual", {a.value, b}, {}, a.loc); }
Value And(At a, Value b) { return MakeOp("And", {a.value, b}, {}, a.loc); }
Value Or(At a, Value b) { return MakeOp("Or", {a.value, b}, {}, a.loc); }
Value ShiftLeft(At a, Value b) { return MakeOp("ShiftLeft", {a.value, b}, {}, a.loc); }
Value ShiftRight(At a, Value b) { return MakeOp("ShiftRight", {a.value, b}, {}, a.loc); }
Value Select(At c, Value x, Value y) { return MakeOp("Select", {c.value, x, y}, {}, c.loc); }

namespace {

Status InferClip(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(double lo, ctx.attrs().GetFloat("min"));
  KILN_ASSIGN_OR_RETURN(double hi, ctx.attrs().GetFloat("max"));
  if (lo > hi) return ctx.Fail("min (", lo, ") must not exceed max (", hi, ")");
  ctx.AddOutput(ctx.dtype(0), ctx.shape(0));
  return OkStatus();
}

Status InferGelu(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string approx, ctx.attrs().GetString("approximate"));
  if (approx != "none" && approx != "tanh")
    return ctx.Fail("attribute 'approximate' must be \"none\" or \"tanh\", got \"", approx, "\"");
  ctx.AddOutput(ctx.dtype(0), ctx.shape(0));
  return OkStatus();
}

Status InferCast(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(DType to, ctx.attrs().GetDType("to"));
  ctx.AddOutput(to, ctx.shape(0));
  return OkStatus();
}

Status InferSelect(InferContext& ctx) {
  Result<Shape> s = BroadcastShapes(ctx.shape(0), ctx.shape(1));
  if (s.ok()) s = BroadcastShapes(*s, ctx.shape(2));
  if (!s.ok()) return ctx.Fail(s.error().message());
  ctx.AddOutput(ctx.dtype(1), *s);
  return OkStatus();
}

}  // namespace

void RegisterMathOps(OpRegistry& registry) {
  // Each op has its gradient in MathGradients() or is marked not differentiable (comparisons,
  // logic, rounding, sign: their gradient is zero or undefined wherever it exists).
  // Mixed precision (ir/precision.h): activations and arithmetic follow their inputs, functions
  // that lose accuracy in 16 bits keep float32, comparisons and rounding are neutral, and
  // trigonometry, casts and logic are in no list.
  internal::RegistryWithGradients r(registry, internal::MathGradients());
  using P = PrecisionList;
  auto unary = [&r](const char* op, const std::vector<DType>& types, std::optional<P> list,
                    bool differentiable = true) {
    OpDefBuilder b(op, "math");
    b.Input("x", "T").Output("y").Types("T", types).Infer(SameAsInput(0));
    b.Flops(FlopsPerOutputElement());
    if (list)
      b.Precision(*list);
    else
      b.NoPrecisionList();
    if (!differentiable) b.NotDifferentiable();
    r.Register(b.Build());
  };
  for (const char* op : {"Exp", "Log", "Sqrt", "Rsqrt", "Reciprocal", "Erf"})
    unary(op, FloatTypes(), P::kKeep32);
  for (const char* op : {"Sigmoid", "Tanh"}) unary(op, FloatTypes(), P::kFollow);
  for (const char* op : {"Sin", "Cos", "Asin", "Acos", "Atan"})
    unary(op, FloatTypes(), std::nullopt);
  for (const char* op : {"Floor", "Ceil", "Round"}) unary(op, FloatTypes(), P::kNeutral, false);
  for (const char* op : {"Neg", "Abs", "Relu"}) unary(op, NumericTypes(), P::kFollow);
  unary("Square", NumericTypes(), P::kKeep32);
  unary("Sign", NumericTypes(), P::kNeutral, false);
  r.Register(OpDefBuilder("Elu", "math")
                 .Input("x", "T")
                 .Output("y")
                 .Types("T", FloatTypes())
                 .Attr("alpha", AttrType::kFloat, 1.0)
                 .Infer(SameAsInput(0))
                 .Precision(P::kFollow)
                 .Flops(FlopsPerOutputElement())
                 .Build());
  r.Register(OpDefBuilder("LeakyRelu", "math")
                 .Input("x", "T")
                 .Output("y")
                 .Types("T", FloatTypes())
                 .Attr("alpha", AttrType::kFloat, 0.01)
                 .Infer(SameAsInput(0))
                 .Precision(P::kFollow)
                 .Flops(FlopsPerOutputElement())
                 .Build());
  r.Register(OpDefBuilder("Gelu", "math")
                 .Input("x", "T")
                 .Output("y")
                 .Types("T", FloatTypes())
                 .Attr("approximate", AttrType::kString, "none")
                 .Infer(InferGelu)
                 .Precision(P::kFollow)
                 .Flops(FlopsPerOutputElement())
                 .Build());
  r.Register(OpDefBuilder("Clip", "math")
                 .Input("x", "T")
                 .Output("y")
                 .Types("T", NumericTypes())
                 .RequiredAttr("min", AttrType::kFloat)
                 .RequiredAttr("max", AttrType::kFloat)
                 .Infer(InferClip)
                 .Precision(P::kFollow)
                 .Flops(FlopsPerOutputElement())
                 .Build());
  r.Register(OpDefBuilder("Cast", "math")
                 .Input("x", "T")
                 .Output("y")
                 .Types("T", AllDTypes())
                 .RequiredAttr("to", AttrType::kDType)
                 .Infer(InferCast)
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
  r.Register(OpDefBuilder("Not", "math")
                 .Input("x", "T")
                 .Output("y")
                 .Types("T", BoolTypes())
                 .Infer(SameAsInput(0))
                 .NotDifferentiable()
                 .NoPrecisionList()
                 .Flops(FlopsPerOutputElement())
                 .Build());
  for (const char* op : {"ZerosLike", "OnesLike"})
    r.Register(OpDefBuilder(op, "math")
                   .Input("x", "T")
                   .Output("y")
                   .Types("T", AllDTypes())
                   .Infer(SameAsInput(0))
                   .NotDifferentiable()
                   .Precision(P::kNeutral)
                   .Flops(FlopsPerOutputElement())
                   .Build());

  // A binary op with a boolean result (a comparison, logic) is not differentiable.
  auto binary = [&r](const char* op, const std::vector<DType>& types, std::optional<DType> out,
                     std::optional<P> list) {
    OpDefBuilder b(op, "math");
    b.Input("a", "T").Input("b", "T").Output("y").Types("T", types).Infer(BroadcastInputs(out));
    b.Flops(FlopsPerOutputElement());
    if (out == boolean) b.NotDifferentiable();
    if (list)
      b.Precision(*list);
    else
      b.NoPrecisionList();
    r.Register(b.Build());
  };
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Maximum", "Minimum"})
    binary(op, NumericTypes(), std::nullopt, P::kFollow);
  binary("Pow", NumericTypes(), std::nullopt, P::kKeep32);
  binary("Equal", AllDTypes(), boolean, P::kNeutral);
  for (const char* op : {"Less", "LessEqual", "Greater", "GreaterEqual"})
    binary(op, NumericTypes(), boolean, P::kNeutral);
  for (const char* op : {"And", "Or"}) binary(op, BoolTypes(), boolean, std::nullopt);
  for (const char* op : {"ShiftLeft", "ShiftRight"})
    r.Register(OpDefBuilder(op, "math")
                   .Input("a", "T")
                   .Input("b", "T")
                   .Output("y")
                   .Types("T", {u8, u16, u32, u64})
                   .Infer(BroadcastInputs(std::nullopt))
                   .NotDifferentiable()
                   .NoPrecisionList()
                   .Flops(FlopsPerOutputElement())
                   .Build());
  r.Register(OpDefBuilder("Select", "math")
                 .Input("cond", "C")
                 .Input("x", "T")
                 .Input("y", "T")
                 .Output("z")
                 .Types("C", BoolTypes())
                 .Types("T", AllDTypes())
                 .Infer(InferSelect)
                 .Precision(P::kFollow)
                 .Flops(FlopsPerOutputElement())
                 .Build());
}

}  // namespace kiln
