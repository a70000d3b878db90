// ONNX elementwise math: unary and binary arithmetic, comparisons, logic, Where, Cast, Clip, Mod,
// BitShift, IsNaN/IsInf and the variadic Sum/Mean/Max/Min. Integer arithmetic on values known at
// import is folded (shape computations).
#include <cmath>
#include <limits>

#include "ir/onnx/convert_context.h"
#include "ir/ops/math.h"
#include "ir/ops/state.h"

namespace kiln::onnx_import {
namespace {

using Unary = Value (*)(At);

// The kiln function of each unary op that maps one to one.
const std::map<std::string, Unary>& UnaryOps() {
  static const std::map<std::string, Unary> ops = {
      {"Abs", [](At x) { return Abs(x); }},
      {"Neg", [](At x) { return Neg(x); }},
      {"Exp", [](At x) { return Exp(x); }},
      {"Log", [](At x) { return Log(x); }},
      {"Sqrt", [](At x) { return Sqrt(x); }},
      {"Reciprocal", [](At x) { return Reciprocal(x); }},
      {"Sigmoid", [](At x) { return Sigmoid(x); }},
      {"Tanh", [](At x) { return Tanh(x); }},
      {"Erf", [](At x) { return Erf(x); }},
      {"Sin", [](At x) { return Sin(x); }},
      {"Cos", [](At x) { return Cos(x); }},
      {"Asin", [](At x) { return Asin(x); }},
      {"Acos", [](At x) { return Acos(x); }},
      {"Atan", [](At x) { return Atan(x); }},
      {"Floor", [](At x) { return Floor(x); }},
      {"Ceil", [](At x) { return Ceil(x); }},
      {"Round", [](At x) { return Round(x); }},
      {"Relu", [](At x) { return Relu(x); }},
      {"Sign", [](At x) { return Sign(x); }},
      {"Not", [](At x) { return Not(x); }},
      {"Identity", [](At x) { return Identity(x); }},
      // Compositions that are exact up to rounding.
      {"Tan", [](At x) { return Sin(x) / Cos(x.value); }},
      {"Sinh", [](At x) { return (Exp(x) - Exp(Neg(x.value))) * 0.5; }},
      {"Cosh", [](At x) { return (Exp(x) + Exp(Neg(x.value))) * 0.5; }},
      {"Asinh", [](At x) { return Log(x + Sqrt(Square(x) + 1.0)); }},
      {"Acosh", [](At x) { return Log(x + Sqrt(Square(x) - 1.0)); }},
      {"Atanh", [](At x) { return Log((1.0 + x) / (1.0 - x)) * 0.5; }},
      {"Softsign", [](At x) { return x / (Abs(x) + 1.0); }},
      {"Softplus", [](At x) { return Log(Exp(x) + 1.0); }},
      {"IsNaN", [](At x) { return Not(Equal(x, x.value)); }},
  };
  return ops;
}

Status ConvertUnary(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  if ((n.op_type() == "Neg" || n.op_type() == "Abs" || n.op_type() == "Identity" ||
       n.op_type() == "Sign") &&
      AllInputsKnownSmallInts(n)) {
    const std::string& op = n.op_type();
    KILN_ASSIGN_OR_RETURN(Tensor t, FoldInts(n, x.dtype(), [&](const std::vector<int64_t>& a) {
                            int64_t v = a[0];
                            if (op == "Neg") return -v;
                            if (op == "Abs") return v < 0 ? -v : v;
                            if (op == "Sign") return int64_t{(v > 0) - (v < 0)};
                            return v;
                          }));
    n.SetKnown(0, t);
    return OkStatus();
  }
  if (IsContainer(x.dtype())) {  // Identity of a sequence or optional (others refuse it)
    n.SetOutput(0, UnaryOps().at(n.op_type())(x), n.element_of(0));
    return OkStatus();
  }
  n.SetOutput(0, UnaryOps().at(n.op_type())(x));
  return OkStatus();
}

using Binary = Value (*)(At, Value);

const std::map<std::string, Binary>& BinaryOps() {
  static const std::map<std::string, Binary> ops = {
      {"Add", [](At a, Value b) { return Add(a, b); }},
      {"Sub", [](At a, Value b) { return Sub(a, b); }},
      {"Mul", [](At a, Value b) { return Mul(a, b); }},
      {"Div", [](At a, Value b) { return Div(a, b); }},
      {"Equal", [](At a, Value b) { return Equal(a, b); }},
      {"Less", [](At a, Value b) { return Less(a, b); }},
      {"LessOrEqual", [](At a, Value b) { return LessEqual(a, b); }},
      {"Greater", [](At a, Value b) { return Greater(a, b); }},
      {"GreaterOrEqual", [](At a, Value b) { return GreaterEqual(a, b); }},
      {"And", [](At a, Value b) { return And(a, b); }},
      {"Or", [](At a, Value b) { return Or(a, b); }},
      {"Xor", [](At a, Value b) { return Not(Equal(a, b)); }},
  };
  return ops;
}

// Integer semantics of the binary ops, for folding. nullopt: not foldable (division by zero).
std::optional<int64_t> FoldBinary(const std::string& op, int64_t a, int64_t b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return b == 0 ? std::nullopt : std::optional<int64_t>(a / b);
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  if (op == "LessOrEqual") return a <= b;
  if (op == "Greater") return a > b;
  if (op == "GreaterOrEqual") return a >= b;
  if (op == "And") return a && b;
  if (op == "Or") return a || b;
  if (op == "Xor") return (a != 0) != (b != 0);
  return std::nullopt;
}

Status ConvertBinary(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value a, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value b, n.input(1));
  const std::string& op = n.op_type();
  if (AllInputsKnownSmallInts(n)) {
    bool ok = true;
    bool compare = op != "Add" && op != "Sub" && op != "Mul" && op != "Div";
    KILN_ASSIGN_OR_RETURN(Tensor t, FoldInts(n, compare ? boolean : a.dtype(), [&](const auto& v) {
                            std::optional<int64_t> r = FoldBinary(op, v[0], v[1]);
                            ok = ok && r.has_value();
                            return r.value_or(0);
                          }));
    if (ok) {
      n.SetKnown(0, t);
      return OkStatus();
    }
  }
  n.SetOutput(0, BinaryOps().at(op)(a, b));
  return OkStatus();
}

Status ConvertPow(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value a, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value b, n.input(1));
  if (b.dtype() != a.dtype()) b = Cast(b, a.dtype());
  n.SetOutput(0, Pow(a, b));
  return OkStatus();
}

// Sum, Mean, Max, Min: one or more inputs, broadcasting.
Status ConvertVariadic(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value acc, n.input(0));
  const std::string& op = n.op_type();
  if ((op == "Max" || op == "Min" || op == "Sum") && AllInputsKnownSmallInts(n)) {
    KILN_ASSIGN_OR_RETURN(
        Tensor t, FoldInts(n, acc.dtype(), [&](const auto& v) {
          int64_t r = v[0];
          for (size_t k = 1; k < v.size(); ++k)
            r = op == "Max" ? std::max(r, v[k]) : op == "Min" ? std::min(r, v[k]) : r + v[k];
          return r;
        }));
    n.SetKnown(0, t);
    return OkStatus();
  }
  for (int i = 1; i < n.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(Value x, n.input(i));
    if (op == "Sum" || op == "Mean") acc = Add(acc, x);
    if (op == "Max") acc = Maximum(acc, x);
    if (op == "Min") acc = Minimum(acc, x);
  }
  if (op == "Mean") acc = acc / static_cast<double>(n.num_inputs());
  if (n.num_inputs() == 1) acc = Identity(acc);
  n.SetOutput(0, acc);
  return OkStatus();
}

Status ConvertWhere(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value c, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value x, n.input(1));
  KILN_ASSIGN_OR_RETURN(Value y, n.input(2));
  if (AllInputsKnownSmallInts(n)) {
    KILN_ASSIGN_OR_RETURN(Tensor t,
                          FoldInts(n, x.dtype(), [](const auto& v) { return v[0] ? v[1] : v[2]; }));
    n.SetKnown(0, t);
    return OkStatus();
  }
  n.SetOutput(0, Select(c, x, y));
  return OkStatus();
}

Status ConvertCast(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  DType to;
  if (n.op_type() == "CastLike") {
    KILN_ASSIGN_OR_RETURN(Value like, n.input(1));
    to = like.dtype();
  } else {
    KILN_ASSIGN_OR_RETURN(int64_t t, n.Int("to", 0));
    KILN_ASSIGN_OR_RETURN(to, OnnxDType(n, t));
  }
  if (const Tensor* k = n.known(0); k && k->num_elements() <= 4096) {
    n.SetKnown(0, k->CastTo(to));
    return OkStatus();
  }
  n.SetOutput(0, Cast(x, to));
  return OkStatus();
}

Status ConvertClip(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  const DType dtype = x.dtype();
  double inf = std::numeric_limits<double>::infinity();
  double lo = -inf, hi = inf;
  if (n.opset() < 11) {
    KILN_ASSIGN_OR_RETURN(lo, n.Float("min", -inf));
    KILN_ASSIGN_OR_RETURN(hi, n.Float("max", inf));
  } else {
    // Known bounds become attributes; others are applied as Maximum / Minimum.
    if (n.has_input(1)) {
      if (n.known(1)) {
        KILN_ASSIGN_OR_RETURN(lo, n.ConstScalar(1));
      } else {
        KILN_ASSIGN_OR_RETURN(Value v, n.input(1));
        x = Maximum(x, v);
      }
    }
    if (n.has_input(2)) {
      if (n.known(2)) {
        KILN_ASSIGN_OR_RETURN(hi, n.ConstScalar(2));
      } else {
        KILN_ASSIGN_OR_RETURN(Value v, n.input(2));
        x = Minimum(x, v);
      }
    }
  }
  if (!IsFloat(dtype)) {
    // Integer tensors: clamp with constants of their own dtype (infinite bounds are no bound).
    if (lo > -inf) x = Maximum(x, n.g().Scalar(lo, dtype));
    if (hi < inf) x = Minimum(x, n.g().Scalar(hi, dtype));
    n.SetOutput(0, Identity(x));
    return OkStatus();
  }
  n.SetOutput(0, Clip(x, lo, hi));
  return OkStatus();
}

// fmod = 1: the sign of the dividend (C fmod); fmod = 0: the sign of the divisor (Python %).
Status ConvertBitShift(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value a, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value b, n.input(1));
  KILN_ASSIGN_OR_RETURN(std::string direction, n.String("direction", ""));
  if (direction != "LEFT" && direction != "RIGHT")
    return n.Fail("direction must be LEFT or RIGHT, got '", direction, "'");
  n.SetOutput(0, direction == "LEFT" ? ShiftLeft(a, b) : ShiftRight(a, b));
  return OkStatus();
}

Status ConvertMod(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value a, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value b, n.input(1));
  KILN_ASSIGN_OR_RETURN(int64_t fmod, n.Int("fmod", 0));
  if (IsFloat(a.dtype()) && !fmod)
    return n.Fail("Mod of floats needs fmod = 1 (as the ONNX specification requires)");
  if (AllInputsKnownSmallInts(n)) {  // e.g. the head split of PyTorch's attention export
    bool ok = true;
    KILN_ASSIGN_OR_RETURN(Tensor t, FoldInts(n, a.dtype(), [&](const std::vector<int64_t>& v) {
                            if (v[1] == 0) {
                              ok = false;
                              return int64_t{0};
                            }
                            int64_t r = v[0] % v[1];  // the dividend's sign, as fmod = 1
                            if (!fmod && r != 0 && ((r < 0) != (v[1] < 0))) r += v[1];
                            return r;
                          }));
    if (ok) {
      n.SetKnown(0, t);
      return OkStatus();
    }
  }
  Value q = Div(a, b);  // integers: truncates toward zero
  if (IsFloat(a.dtype())) {
    Value zero = n.g().Scalar(0, a.dtype());
    q = Select(Less(q, zero), Ceil(q), Floor(q));
  }
  Value r = a - Mul(q, b);
  if (!fmod) {
    Value zero = n.g().Scalar(0, a.dtype());
    Value fix = And(Not(Equal(r, zero)), Not(Equal(Less(r, zero), Less(b, zero))));
    r = Select(fix, r + b, r);
  }
  n.SetOutput(0, r);
  return OkStatus();
}

Status ConvertIsInf(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(int64_t pos, n.Int("detect_positive", 1));
  KILN_ASSIGN_OR_RETURN(int64_t neg, n.Int("detect_negative", 1));
  double inf = std::numeric_limits<double>::infinity();
  Value p = Equal(x, n.g().Scalar(inf, x.dtype()));
  Value m = Equal(x, n.g().Scalar(-inf, x.dtype()));
  Value r = pos && neg ? Or(p, m) : pos ? p : neg ? m : And(p, m);
  n.SetOutput(0, r);
  return OkStatus();
}

}  // namespace

void AddMathConverters(ConverterTable& t) {
  for (const auto& [op, fn] : UnaryOps()) t[op] = ConvertUnary;
  for (const auto& [op, fn] : BinaryOps()) t[op] = ConvertBinary;
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) t[op] = ConvertVariadic;
  t["Pow"] = ConvertPow;
  t["Where"] = ConvertWhere;
  t["Cast"] = ConvertCast;
  t["CastLike"] = ConvertCast;
  t["Clip"] = ConvertClip;
  t["Mod"] = ConvertMod;
  t["BitShift"] = ConvertBitShift;
  t["IsInf"] = ConvertIsInf;
}

}  // namespace kiln::onnx_import
