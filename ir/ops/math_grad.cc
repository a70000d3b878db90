// Gradients of op family "math". Each is written with the same op functions a user would call.
#include "ir/ops/math_grad.h"

#include "ir/ops/math.h"
#include "ir/ops/op_helpers.h"

namespace kiln::internal {
namespace {

// Unary op: dx = dy * f'(x, y).
GradFn UnaryGrad(std::function<Value(GradContext&, Value x, Value y)> derivative) {
  return [derivative](GradContext& ctx) -> Status {
    ctx.SetInputGrad(0, ctx.grad(0) * derivative(ctx, ctx.input(0), ctx.output(0)));
    return OkStatus();
  };
}

Status GeluGrad(GradContext& ctx) {
  Value x = ctx.input(0);
  Value d;
  if (ctx.attrs().Find("approximate")->get<std::string>() == "tanh") {
    // y = 0.5 x (1 + t), t = tanh(k (x + c x^3)); dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c
    // x^2)
    const double k = 0.7978845608028654, c = 0.044715;
    Value t = Tanh(k * (x + c * x * x * x));
    d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * (k * (1.0 + 3 * c * x * x));
  } else {
    // y = x Phi(x); dy/dx = Phi(x) + x phi(x)
    d = 0.5 * (1.0 + Erf(x * 0.7071067811865476)) + x * (0.3989422804014327 * Exp(-0.5 * x * x));
  }
  ctx.SetInputGrad(0, ctx.grad(0) * d);
  return OkStatus();
}

Status ClipGrad(GradContext& ctx) {
  Value x = ctx.input(0);
  double lo = ctx.attrs().Find("min")->get<double>(), hi = ctx.attrs().Find("max")->get<double>();
  Value inside = And(GreaterEqual(x, ScalarLike(x, lo)), LessEqual(x, ScalarLike(x, hi)));
  ctx.SetInputGrad(0, ctx.grad(0) * MaskLike(inside, x));
  return OkStatus();
}

Status CastGrad(GradContext& ctx) {
  if (IsFloat(ctx.input(0).dtype()) && IsFloat(ctx.output(0).dtype()))
    ctx.SetInputGrad(0, Cast(ctx.grad(0), ctx.input(0).dtype()));
  return OkStatus();
}

// Binary op with partials (da, db) before summing back to each input's shape.
GradFn BinaryGrad(
    std::function<std::pair<Value, Value>(GradContext&, Value a, Value b, Value y, Value dy)>
        partials) {
  return [partials](GradContext& ctx) -> Status {
    auto [da, db] = partials(ctx, ctx.input(0), ctx.input(1), ctx.output(0), ctx.grad(0));
    ctx.SetInputGrad(0, SumToShapeOf(da, ctx.input(0)));
    ctx.SetInputGrad(1, SumToShapeOf(db, ctx.input(1)));
    return OkStatus();
  };
}

Status SelectGrad(GradContext& ctx) {
  Value cond = ctx.input(0), dy = ctx.grad(0);
  Value zeros = ZerosLike(dy);
  ctx.SetInputGrad(1, SumToShapeOf(Select(cond, dy, zeros), ctx.input(1)));
  ctx.SetInputGrad(2, SumToShapeOf(Select(cond, zeros, dy), ctx.input(2)));
  return OkStatus();
}

}  // namespace

const std::map<std::string, GradFn>& MathGradients() {
  static const std::map<std::string, GradFn> grads = {
      {"Neg", UnaryGrad([](GradContext&, Value x, Value) { return ScalarLike(x, -1); })},
      {"Abs", UnaryGrad([](GradContext&, Value x, Value) { return Sign(x); })},
      {"Exp", UnaryGrad([](GradContext&, Value, Value y) { return y; })},
      {"Log", UnaryGrad([](GradContext&, Value x, Value) { return Reciprocal(x); })},
      {"Sqrt", UnaryGrad([](GradContext&, Value, Value y) { return 0.5 / y; })},
      {"Rsqrt", UnaryGrad([](GradContext&, Value, Value y) { return -0.5 * y * y * y; })},
      {"Reciprocal", UnaryGrad([](GradContext&, Value, Value y) { return -(y * y); })},
      {"Square", UnaryGrad([](GradContext&, Value x, Value) { return 2.0 * x; })},
      {"Sigmoid", UnaryGrad([](GradContext&, Value, Value y) { return y * (1.0 - y); })},
      {"Tanh", UnaryGrad([](GradContext&, Value, Value y) { return 1.0 - y * y; })},
      {"Erf",
       UnaryGrad([](GradContext&, Value x, Value) { return 1.1283791670955126 * Exp(-(x * x)); })},
      {"Sin", UnaryGrad([](GradContext&, Value x, Value) { return Cos(x); })},
      {"Cos", UnaryGrad([](GradContext&, Value x, Value) { return -Sin(x); })},
      {"Asin", UnaryGrad([](GradContext&, Value x, Value) { return Rsqrt(1.0 - x * x); })},
      {"Acos", UnaryGrad([](GradContext&, Value x, Value) { return -Rsqrt(1.0 - x * x); })},
      {"Atan", UnaryGrad([](GradContext&, Value x, Value) { return Reciprocal(1.0 + x * x); })},
      {"Relu", UnaryGrad([](GradContext&, Value x, Value) {
         return MaskLike(Greater(x, ScalarLike(x, 0)), x);
       })},
      {"LeakyRelu", UnaryGrad([](GradContext& ctx, Value x, Value) {
         double alpha = ctx.attrs().Find("alpha")->get<double>();
         Value pos = MaskLike(GreaterEqual(x, ScalarLike(x, 0)), x);
         return pos + alpha * (1.0 - pos);
       })},
      {"Elu", UnaryGrad([](GradContext& ctx, Value x, Value y) {
         double alpha = ctx.attrs().Find("alpha")->get<double>();
         Value pos = MaskLike(Greater(x, ScalarLike(x, 0)), x);
         return pos + (1.0 - pos) * (y + alpha);
       })},
      {"Gelu", GeluGrad},
      {"Clip", ClipGrad},
      {"Cast", CastGrad},
      {"Add", BinaryGrad([](GradContext&, Value, Value, Value, Value dy) {
         return std::pair{dy, dy};
       })},
      {"Sub", BinaryGrad([](GradContext&, Value, Value, Value, Value dy) {
         return std::pair{dy, -dy};
       })},
      {"Mul", BinaryGrad([](GradContext&, Value a, Value b, Value, Value dy) {
         return std::pair{dy * b, dy * a};
       })},
      {"Div", BinaryGrad([](GradContext&, Value, Value b, Value y, Value dy) {
         return std::pair{dy / b, -(dy * y) / b};
       })},
      {"Pow", BinaryGrad([](GradContext&, Value a, Value b, Value y, Value dy) {
         // d/da = b a^(b-1); d/db = y log(a), taken as 0 where a <= 0 (as PyTorch does at 0).
         Value positive = Greater(a, ScalarLike(a, 0));
         Value log_a = Select(positive, Log(Select(positive, a, OnesLike(a))), ZerosLike(a));
         return std::pair{dy * b * Pow(a, b - 1.0), dy * y * log_a};
       })},
      {"Maximum", BinaryGrad([](GradContext&, Value a, Value b, Value, Value dy) {
         Value take_a = MaskLike(GreaterEqual(a, b), dy);  // ties go to a
         return std::pair{dy * take_a, dy * (1.0 - take_a)};
       })},
      {"Minimum", BinaryGrad([](GradContext&, Value a, Value b, Value, Value dy) {
         Value take_a = MaskLike(LessEqual(a, b), dy);
         return std::pair{dy * take_a, dy * (1.0 - take_a)};
       })},
      {"Select", SelectGrad},
  };
  return grads;
}

}  // namespace kiln::internal
