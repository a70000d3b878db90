// Reference kernels of op family "math" (see ir/ops/math.h for the semantics).
#include "ir/ops/math.h"

#include <cmath>
#include <limits>

#include "runtime/reference/kernel.h"
#include "runtime/reference/loops.h"
#include "runtime/reference/scalar_math.h"

namespace kiln::reference {
namespace {

int64_t IntPow(int64_t base, int64_t exp) {
  if (exp < 0) return base == 1 ? 1 : base == -1 ? (exp % 2 ? -1 : 1) : 0;
  int64_t result = 1;
  while (exp) {
    if (exp & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    exp >>= 1;
  }
  return result;
}

KernelFn Unary(UnaryFloatFn ff, UnaryIntFn fi = nullptr) {
  return [ff, fi](KernelContext& ctx) { return MapUnary(ctx, ff, fi); };
}
KernelFn Binary(BinaryFloatFn ff, BinaryIntFn fi) {
  return [ff, fi](KernelContext& ctx) { return MapBinary(ctx, ff, fi); };
}

Status DivKernel(KernelContext& ctx) {
  if (!IsFloat(ctx.input(0).dtype())) {
    const Tensor& b = ctx.input(1);
    for (int64_t i = 0; i < b.num_elements(); ++i)
      if (b.GetInt(i) == 0) return ctx.Fail("integer division by zero (divisor element ", i, ")");
  }
  return MapBinary(
      ctx, [](double a, double b) { return a / b; },
      [](int64_t a, int64_t b) { return b == -1 ? WrapNeg(a) : a / b; });
}

Status GeluKernel(KernelContext& ctx) {
  bool tanh_form = ctx.attrs().Find("approximate")->get<std::string>() == "tanh";
  return MapUnary(ctx, [tanh_form](double x) {
    if (tanh_form) return GeluTanhValue(x);
    return 0.5 * x * (1.0 + std::erf(x * 0.7071067811865476));
  });
}

Status ClipKernel(KernelContext& ctx) {
  double lo = ctx.attrs().Find("min")->get<double>(), hi = ctx.attrs().Find("max")->get<double>();
  return MapUnary(
      ctx, [lo, hi](double x) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); },
      [lo, hi](int64_t x) {
        double c = std::min(std::max(double(x), lo), hi);
        return static_cast<int64_t>(c);
      });
}

Status CastKernel(KernelContext& ctx) {
  ctx.set_output(0, ctx.input(0).CastTo(ctx.output_type(0).dtype));
  return OkStatus();
}

Status SelectKernel(KernelContext& ctx) {
  const Tensor &c = ctx.input(0), &x = ctx.input(1), &y = ctx.input(2);
  Tensor& out = ctx.output(0);
  BroadcastIndex ic(out.shape(), c.shape()), ix(out.shape(), x.shape()), iy(out.shape(), y.shape());
  int size = DTypeSize(out.dtype());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const Tensor& src = c.GetInt(ic(i)) ? x : y;
    int64_t j = c.GetInt(ic(i)) ? ix(i) : iy(i);
    std::memcpy(dst + i * size, static_cast<const uint8_t*>(src.raw_data()) + j * size, size);
  }
  return OkStatus();
}

}  // namespace

void RegisterMathKernels(KernelRegistry& r) {
  r.Register("Exp", Unary([](double x) { return std::exp(x); }));
  r.Register("Log", Unary([](double x) { return std::log(x); }));
  r.Register("Sqrt", Unary([](double x) { return std::sqrt(x); }));
  r.Register("Rsqrt", Unary([](double x) { return 1.0 / std::sqrt(x); }));
  r.Register("Reciprocal", Unary([](double x) { return 1.0 / x; }));
  r.Register("Sigmoid", Unary([](double x) { return 1.0 / (1.0 + std::exp(-x)); }));
  r.Register("Tanh", Unary([](double x) { return std::tanh(x); }));
  r.Register("Erf", Unary([](double x) { return std::erf(x); }));
  r.Register("Sin", Unary([](double x) { return std::sin(x); }));
  r.Register("Cos", Unary([](double x) { return std::cos(x); }));
  r.Register("Asin", Unary([](double x) { return std::asin(x); }));
  r.Register("Acos", Unary([](double x) { return std::acos(x); }));
  r.Register("Atan", Unary([](double x) { return std::atan(x); }));
  r.Register("Floor", Unary([](double x) { return std::floor(x); }));
  r.Register("Ceil", Unary([](double x) { return std::ceil(x); }));
  r.Register("Round", Unary([](double x) { return std::nearbyint(x); }));
  r.Register("Neg", Unary([](double x) { return -x; }, WrapNeg));
  r.Register("Abs", Unary([](double x) { return std::fabs(x); },
                          [](int64_t x) { return x < 0 ? WrapNeg(x) : x; }));
  r.Register("Square",
             Unary([](double x) { return x * x; }, [](int64_t x) { return WrapMul(x, x); }));
  r.Register("Sign", Unary([](double x) { return std::isnan(x) ? x : double((x > 0) - (x < 0)); },
                           [](int64_t x) { return int64_t((x > 0) - (x < 0)); }));
  r.Register("Relu", Unary([](double x) { return x > 0 ? x : (std::isnan(x) ? x : 0.0); },
                           [](int64_t x) { return x > 0 ? x : 0; }));
  r.Register("Elu", [](KernelContext& ctx) {
    double alpha = ctx.attrs().Find("alpha")->get<double>();
    return MapUnary(ctx, [alpha](double x) { return x > 0 ? x : alpha * std::expm1(x); });
  });
  r.Register("LeakyRelu", [](KernelContext& ctx) {
    double alpha = ctx.attrs().Find("alpha")->get<double>();
    return MapUnary(ctx, [alpha](double x) { return x >= 0 ? x : alpha * x; });
  });
  r.Register("Gelu", GeluKernel);
  r.Register("Clip", ClipKernel);
  r.Register("Cast", CastKernel);
  r.Register("Not", Unary([](double x) { return double(x == 0); },
                          [](int64_t x) { return int64_t(x == 0); }));

  r.Register("Add", Binary([](double a, double b) { return a + b; }, WrapAdd));
  r.Register("Sub", Binary([](double a, double b) { return a - b; }, WrapSub));
  r.Register("Mul", Binary([](double a, double b) { return a * b; }, WrapMul));
  r.Register("Div", DivKernel);
  r.Register("Pow", Binary([](double a, double b) { return std::pow(a, b); }, IntPow));
  r.Register("Maximum", Binary(NanMax, [](int64_t a, int64_t b) { return std::max(a, b); }));
  r.Register("Minimum", Binary(NanMin, [](int64_t a, int64_t b) { return std::min(a, b); }));
  r.Register("Equal", Binary([](double a, double b) { return double(a == b); },
                             [](int64_t a, int64_t b) { return int64_t(a == b); }));
  r.Register("Less", Binary([](double a, double b) { return double(a < b); },
                            [](int64_t a, int64_t b) { return int64_t(a < b); }));
  r.Register("LessEqual", Binary([](double a, double b) { return double(a <= b); },
                                 [](int64_t a, int64_t b) { return int64_t(a <= b); }));
  r.Register("Greater", Binary([](double a, double b) { return double(a > b); },
                               [](int64_t a, int64_t b) { return int64_t(a > b); }));
  r.Register("GreaterEqual", Binary([](double a, double b) { return double(a >= b); },
                                    [](int64_t a, int64_t b) { return int64_t(a >= b); }));
  r.Register("And", Binary([](double a, double b) { return double(a != 0 && b != 0); },
                           [](int64_t a, int64_t b) { return int64_t(a != 0 && b != 0); }));
  r.Register("Or", Binary([](double a, double b) { return double(a != 0 || b != 0); },
                          [](int64_t a, int64_t b) { return int64_t(a != 0 || b != 0); }));
  // Logical shifts of the value's 64 bits; SetInt keeps the dtype's low bits.
  r.Register("ShiftLeft", Binary(nullptr, [](int64_t a, int64_t b) {
               const auto s = static_cast<uint64_t>(b);
               return s >= 64 ? int64_t{0} : static_cast<int64_t>(static_cast<uint64_t>(a) << s);
             }));
  r.Register("ShiftRight", Binary(nullptr, [](int64_t a, int64_t b) {
               const auto s = static_cast<uint64_t>(b);
               return s >= 64 ? int64_t{0} : static_cast<int64_t>(static_cast<uint64_t>(a) >> s);
             }));
  r.Register("Select", SelectKernel);
  r.Register("ZerosLike", [](KernelContext&) { return OkStatus(); });  // outputs start zeroed
  r.Register("OnesLike", [](KernelContext& ctx) {
    for (int64_t i = 0; i < ctx.output(0).num_elements(); ++i) ctx.output(0).SetInt(i, 1);
    return OkStatus();
  });
}

}  // namespace kiln::reference
