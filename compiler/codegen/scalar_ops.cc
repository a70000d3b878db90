#include "compiler/codegen/scalar_ops.h"

#include <map>
#include <set>

namespace kiln::compiler::internal {
namespace {

enum class Kind {
  kFloatUnary,     // float -> same
  kNumericUnary,   // int or float -> same
  kAnyUnary,       // any -> same
  kBoolUnary,      // bool -> bool
  kCast,           // any -> any
  kNumericBinary,  // (T, T) -> T, numeric
  kCompare,        // (T, T) -> bool, numeric
  kEqual,          // (T, T) -> bool, any
  kBoolBinary,     // (bool, bool) -> bool
  kSelect,         // (bool, T, T) -> T
  kConstant,       // () -> any
};

const std::map<std::string, Kind>& Rules() {
  static const auto* rules = [] {
    auto* r = new std::map<std::string, Kind>;
    for (const char* op : {"Exp", "Log", "Sqrt", "Rsqrt", "Reciprocal", "Sigmoid", "Tanh", "Erf",
                           "Sin", "Cos", "Floor", "Ceil", "Round", "Elu", "LeakyRelu", "Gelu"})
      (*r)[op] = Kind::kFloatUnary;
    for (const char* op : {"Neg", "Abs", "Square", "Sign", "Relu", "Clip"})
      (*r)[op] = Kind::kNumericUnary;
    for (const char* op : {"Identity", "StopGradient", "ZerosLike", "OnesLike"})
      (*r)[op] = Kind::kAnyUnary;
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Minimum"})
      (*r)[op] = Kind::kNumericBinary;
    for (const char* op : {"Less", "LessEqual", "Greater", "GreaterEqual"})
      (*r)[op] = Kind::kCompare;
    (*r)["Not"] = Kind::kBoolUnary;
    (*r)["Cast"] = Kind::kCast;
    (*r)["Equal"] = Kind::kEqual;
    (*r)["And"] = Kind::kBoolBinary;
    (*r)["Or"] = Kind::kBoolBinary;
    (*r)["Select"] = Kind::kSelect;
    (*r)["Constant"] = Kind::kConstant;
    return r;
  }();
  return *rules;
}

int Arity(Kind k) {
  switch (k) {
    case Kind::kConstant:
      return 0;
    case Kind::kNumericBinary:
    case Kind::kCompare:
    case Kind::kEqual:
    case Kind::kBoolBinary:
      return 2;
    case Kind::kSelect:
      return 3;
    default:
      return 1;
  }
}

std::string Names(const std::vector<DType>& ts) {
  std::string s;
  for (DType t : ts) s += (s.empty() ? "" : ", ") + std::string(DTypeName(t));
  return "(" + s + ")";
}

// Ops whose result is exactly representable in the operand dtype (no rounding to f16/bf16 needed).
bool IsExact(const std::string& op) {
  static const std::set<std::string> exact = {
      "Identity",     "StopGradient", "Neg",  "Abs",   "Maximum", "Minimum",   "Relu",
      "Sign",         "Floor",        "Ceil", "Round", "Select",  "Cast",      "ZerosLike",
      "OnesLike",     "Constant",     "Clip", "Equal", "Less",    "LessEqual", "Greater",
      "GreaterEqual", "And",          "Or",   "Not"};
  return exact.count(op) > 0;
}

double FloatAttr(const KernelSpec::Op& op, const char* name, double fallback) {
  const AttrValue* v = op.attrs.Find(name);
  if (v && v->type() == AttrType::kFloat) return v->get<double>();
  if (v && v->type() == AttrType::kInt) return static_cast<double>(v->get<int64_t>());
  return fallback;
}

std::string IntPow(ScalarWriter& w, const Scalar& base, const Scalar& exp) {
  std::string t = ComputeType(base.dtype);
  int bits = DTypeSize(base.dtype) * 8;
  std::string zero = w.IntConst(0, t), one = w.IntConst(1, t);
  std::string lo = w.IntConst(0, "index"), hi = w.IntConst(bits, "index");
  std::string step = w.IntConst(1, "index");
  std::string loop = w.Fresh(), i = w.Fresh(), acc = w.Fresh(), b = w.Fresh(), e = w.Fresh();
  w.Line(loop + ":3 = scf.for " + i + " = " + lo + " to " + hi + " step " + step + " iter_args(" +
         acc + " = " + one + ", " + b + " = " + base.name + ", " + e + " = " + exp.name + ") -> (" +
         t + ", " + t + ", " + t + ") {");
  w.Indent();
  std::string odd = w.Cmp("arith.cmpi", "ne", w.Binary("arith.andi", e, one, t), zero, t);
  std::string next = w.Select(odd, w.Binary("arith.muli", acc, b, t), acc, t);
  std::string sq = w.Binary("arith.muli", b, b, t);
  std::string shifted = w.Binary("arith.shrui", e, one, t);
  w.Line("scf.yield " + next + ", " + sq + ", " + shifted + " : " + t + ", " + t + ", " + t);
  w.Dedent();
  w.Line("}");
  if (base.dtype == DType::kU8) return loop + "#0";
  // Negative exponents: 1 for base 1, (-1)^exp for base -1, else 0.
  std::string minus_one = w.IntConst(-1, t);
  std::string odd_exp =
      w.Cmp("arith.cmpi", "ne", w.Binary("arith.andi", exp.name, one, t), zero, t);
  std::string for_m1 = w.Select(odd_exp, minus_one, one, t);
  std::string neg_res =
      w.Select(w.Cmp("arith.cmpi", "eq", base.name, one, t), one,
               w.Select(w.Cmp("arith.cmpi", "eq", base.name, minus_one, t), for_m1, zero, t), t);
  return w.Select(w.Cmp("arith.cmpi", "slt", exp.name, zero, t), neg_res, loop + "#0", t);
}

std::string IntDiv(ScalarWriter& w, const Scalar& a, const Scalar& b) {
  std::string t = ComputeType(a.dtype);
  std::string zero = w.IntConst(0, t), one = w.IntConst(1, t);
  std::string is_zero = w.Cmp("arith.cmpi", "eq", b.name, zero, t);
  if (a.dtype == DType::kU8) {
    std::string q = w.Binary("arith.divui", a.name, w.Select(is_zero, one, b.name, t), t);
    return w.Select(is_zero, zero, q, t);
  }
  // x / 0 -> 0 and x / -1 -> -x (wrapping) without ever executing a trapping division.
  std::string is_m1 = w.Cmp("arith.cmpi", "eq", b.name, w.IntConst(-1, t), t);
  std::string safe = w.Select(w.Binary("arith.ori", is_zero, is_m1, "i1"), one, b.name, t);
  std::string q = w.Binary("arith.divsi", a.name, safe, t);
  q = w.Select(is_m1, w.Binary("arith.subi", zero, a.name, t), q, t);
  return w.Select(is_zero, zero, q, t);
}

// max/min with std::max/std::min's operand order, and NaN if either operand is NaN.
std::string FloatMinMax(ScalarWriter& w, bool is_max, const std::string& a, const std::string& b,
                        const std::string& t) {
  std::string pick_b = is_max ? w.Cmp("arith.cmpf", "olt", a, b, t)   // a < b ? b : a
                              : w.Cmp("arith.cmpf", "olt", b, a, t);  // b < a ? b : a
  std::string m = w.Select(pick_b, b, a, t);
  return w.Select(w.Cmp("arith.cmpf", "uno", a, b, t), w.NanConst(t), m, t);
}

std::string Sign(ScalarWriter& w, const Scalar& x) {
  std::string t = ComputeType(x.dtype);
  bool f = IsFloat(x.dtype);
  std::string cmp = f ? "arith.cmpf" : "arith.cmpi";
  std::string zero = f ? w.FloatConst(0, t) : w.IntConst(0, t);
  std::string one = f ? w.FloatConst(1, t) : w.IntConst(1, t);
  if (x.dtype == DType::kU8) return w.Select(w.Cmp(cmp, "ne", x.name, zero, t), one, zero, t);
  std::string minus = f ? w.FloatConst(-1, t) : w.IntConst(-1, t);
  std::string s = w.Select(w.Cmp(cmp, f ? "olt" : "slt", x.name, zero, t), minus, zero, t);
  s = w.Select(w.Cmp(cmp, f ? "ogt" : "sgt", x.name, zero, t), one, s, t);
  return f ? w.Select(w.Cmp(cmp, "uno", x.name, x.name, t), x.name, s, t) : s;
}

std::string Clip(ScalarWriter& w, const Scalar& x, double lo, double hi) {
  DType dt = IsFloat(x.dtype) ? x.dtype : DType::kF64;  // integers clamp in double
  std::string t = ComputeType(dt);
  std::string v = IsFloat(x.dtype) ? x.name : w.Cast(x.name, x.dtype, DType::kF64);
  std::string lo_c = w.DTypeConst(lo, dt), hi_c = w.DTypeConst(hi, dt);
  std::string m = w.Select(w.Cmp("arith.cmpf", "olt", v, lo_c, t), lo_c, v, t);
  m = w.Select(w.Cmp("arith.cmpf", "olt", hi_c, m, t), hi_c, m, t);
  if (IsFloat(x.dtype)) return w.Select(w.Cmp("arith.cmpf", "uno", v, v, t), v, m, t);
  std::string i = w.Convert("arith.fptosi", m, "f64", "i64");
  return x.dtype == DType::kI64 ? i : w.Convert("arith.trunci", i, "i64", ComputeType(x.dtype));
}

Result<std::string> Gelu(ScalarWriter& w, const KernelSpec::Op& op, const std::string& x,
                         const std::string& t) {
  std::string approx = "none";
  if (const AttrValue* v = op.attrs.Find("approximate")) {
    if (v->type() != AttrType::kString)
      return MakeError(ErrorCode::kInvalidArgument, "attribute 'approximate' must be a string");
    approx = v->get<std::string>();
  }
  std::string inner;
  if (approx == "none") {
    inner =
        w.Unary("math.erf", w.Binary("arith.mulf", x, w.FloatConst(0.7071067811865476, t), t), t);
  } else if (approx == "tanh") {
    std::string x3 = w.Binary("arith.mulf", w.Binary("arith.mulf", x, x, t), x, t);
    std::string s =
        w.Binary("arith.addf", x, w.Binary("arith.mulf", w.FloatConst(0.044715, t), x3, t), t);
    inner =
        w.Unary("math.tanh", w.Binary("arith.mulf", w.FloatConst(0.7978845608028654, t), s, t), t);
  } else {
    return MakeError(ErrorCode::kInvalidArgument,
                     "attribute 'approximate' must be \"none\" or \"tanh\", got \"", approx, "\"");
  }
  std::string half_x = w.Binary("arith.mulf", w.FloatConst(0.5, t), x, t);
  return w.Binary("arith.mulf", half_x, w.Binary("arith.addf", w.FloatConst(1, t), inner, t), t);
}

}  // namespace

bool HasScalarOp(const std::string& op) { return Rules().count(op) > 0; }

Status CheckScalarOp(const std::string& op, const std::vector<DType>& args, DType result) {
  auto it = Rules().find(op);
  if (it == Rules().end())
    return MakeError(ErrorCode::kUnimplemented, "op '", op,
                     "' is not supported in generated kernels");
  Kind k = it->second;
  if (static_cast<int>(args.size()) != Arity(k))
    return MakeError(ErrorCode::kInvalidArgument, "op '", op, "' takes ", Arity(k),
                     " operands, got ", args.size());
  for (DType t : args)
    if (t == DType::kInvalid)
      return MakeError(ErrorCode::kInvalidArgument, "invalid operand dtype");
  if (result == DType::kInvalid)
    return MakeError(ErrorCode::kInvalidArgument, "invalid result dtype");
  for (DType t : args)
    if (!HasGeneratedKernels(t))
      return MakeError(ErrorCode::kUnimplemented, "generated kernels do not take ", DTypeName(t));
  if (!HasGeneratedKernels(result))
    return MakeError(ErrorCode::kUnimplemented, "generated kernels do not take ",
                     DTypeName(result));
  auto bad = [&](const char* what) {
    return MakeError(ErrorCode::kUnimplemented, "op '", op, "' ", what, "; got operands ",
                     Names(args), " -> ", DTypeName(result));
  };
  bool same = true;
  for (size_t i = (k == Kind::kSelect ? 1 : 0); i + 1 < args.size(); ++i)
    same = same && args[i] == args[i + 1];
  switch (k) {
    case Kind::kFloatUnary:
      if (!IsFloat(args[0]) || result != args[0]) return bad("needs a float operand of its dtype");
      break;
    case Kind::kNumericUnary:
    case Kind::kNumericBinary:
      if (!IsNumeric(args[0]) || !same || result != args[0])
        return bad("needs numeric operands and result of one dtype");
      break;
    case Kind::kAnyUnary:
      if (result != args[0]) return bad("needs a result of its operand's dtype");
      break;
    case Kind::kBoolUnary:
    case Kind::kBoolBinary:
      if (!same || args[0] != DType::kBool || result != DType::kBool) return bad("needs bool");
      break;
    case Kind::kCompare:
    case Kind::kEqual:
      if (!same || result != DType::kBool || (k == Kind::kCompare && !IsNumeric(args[0])))
        return bad("compares two operands of one (numeric) dtype and gives bool");
      break;
    case Kind::kSelect:
      if (args[0] != DType::kBool || !same || result != args[1])
        return bad("needs a bool condition and two values of the result's dtype");
      break;
    case Kind::kCast:
    case Kind::kConstant:
      break;
  }
  return OkStatus();
}

Result<std::string> EmitScalarOp(ScalarWriter& w, const KernelSpec::Op& op,
                                 const std::vector<Scalar>& args) {
  const std::string& name = op.op;
  DType dt = args.empty() || name == "Select" ? op.dtype : args[0].dtype;
  std::string t = ComputeType(dt);
  bool f = IsFloat(dt), u = dt == DType::kU8;
  auto a = [&](int i) { return args[i].name; };
  auto fbin = [&](const char* fop, const char* iop) {
    return w.Binary(f ? fop : iop, a(0), a(1), t);
  };
  auto fc = [&](double v) { return w.FloatConst(v, t); };
  std::string r;
  if (name == "Identity" || name == "StopGradient") {
    r = a(0);
  } else if (name == "Constant") {
    const AttrValue* v = op.attrs.Find("value");
    if (!v || (v->type() != AttrType::kFloat && v->type() != AttrType::kInt))
      return MakeError(ErrorCode::kInvalidArgument, "Constant needs a numeric attribute 'value'");
    r = w.DTypeConst(FloatAttr(op, "value", 0), op.dtype);
  } else if (name == "ZerosLike" || name == "OnesLike") {
    r = w.DTypeConst(name == "OnesLike" ? 1 : 0, dt);
  } else if (name == "Add") {
    r = fbin("arith.addf", "arith.addi");
  } else if (name == "Sub") {
    r = fbin("arith.subf", "arith.subi");
  } else if (name == "Mul") {
    r = fbin("arith.mulf", "arith.muli");
  } else if (name == "Div") {
    r = f ? w.Binary("arith.divf", a(0), a(1), t) : IntDiv(w, args[0], args[1]);
  } else if (name == "Pow") {
    r = f ? w.Binary("math.powf", a(0), a(1), t) : IntPow(w, args[0], args[1]);
  } else if (name == "Maximum" || name == "Minimum") {
    bool mx = name == "Maximum";
    r = f ? FloatMinMax(w, mx, a(0), a(1), t)
          : w.Binary(std::string("arith.") + (mx ? "max" : "min") + (u ? "ui" : "si"), a(0), a(1),
                     t);
  } else if (name == "Neg") {
    r = f ? w.Unary("arith.negf", a(0), t) : w.Binary("arith.subi", w.IntConst(0, t), a(0), t);
  } else if (name == "Abs") {
    if (f)
      r = w.Unary("math.absf", a(0), t);
    else if (u)
      r = a(0);
    else
      r = w.Select(w.Cmp("arith.cmpi", "slt", a(0), w.IntConst(0, t), t),
                   w.Binary("arith.subi", w.IntConst(0, t), a(0), t), a(0), t);
  } else if (name == "Square") {
    r = w.Binary(f ? "arith.mulf" : "arith.muli", a(0), a(0), t);
  } else if (name == "Sign") {
    r = Sign(w, args[0]);
  } else if (name == "Relu") {
    if (f)
      r = w.Select(w.Cmp("arith.cmpf", "ugt", a(0), fc(0), t), a(0), fc(0), t);  // NaN stays
    else if (u)
      r = a(0);
    else
      r = w.Binary("arith.maxsi", a(0), w.IntConst(0, t), t);
  } else if (name == "Clip") {
    KILN_ASSIGN_OR_RETURN(double lo, op.attrs.GetFloat("min"));
    KILN_ASSIGN_OR_RETURN(double hi, op.attrs.GetFloat("max"));
    r = Clip(w, args[0], lo, hi);
  } else if (name == "Exp" || name == "Log" || name == "Sqrt" || name == "Tanh" || name == "Erf" ||
             name == "Sin" || name == "Cos" || name == "Floor" || name == "Ceil") {
    std::string m = name == "Exp"     ? "exp"
                    : name == "Log"   ? "log"
                    : name == "Sqrt"  ? "sqrt"
                    : name == "Tanh"  ? "tanh"
                    : name == "Erf"   ? "erf"
                    : name == "Sin"   ? "sin"
                    : name == "Cos"   ? "cos"
                    : name == "Floor" ? "floor"
                                      : "ceil";
    r = w.Unary("math." + m, a(0), t);
  } else if (name == "Round") {
    r = w.Unary("math.roundeven", a(0), t);
  } else if (name == "Rsqrt") {
    r = w.Binary("arith.divf", fc(1), w.Unary("math.sqrt", a(0), t), t);
  } else if (name == "Reciprocal") {
    r = w.Binary("arith.divf", fc(1), a(0), t);
  } else if (name == "Sigmoid") {
    std::string e = w.Unary("math.exp", w.Unary("arith.negf", a(0), t), t);
    r = w.Binary("arith.divf", fc(1), w.Binary("arith.addf", fc(1), e, t), t);
  } else if (name == "Elu") {
    std::string neg =
        w.Binary("arith.mulf", fc(FloatAttr(op, "alpha", 1.0)), w.Unary("math.expm1", a(0), t), t);
    r = w.Select(w.Cmp("arith.cmpf", "ogt", a(0), fc(0), t), a(0), neg, t);
  } else if (name == "LeakyRelu") {
    std::string neg = w.Binary("arith.mulf", fc(FloatAttr(op, "alpha", 0.01)), a(0), t);
    r = w.Select(w.Cmp("arith.cmpf", "oge", a(0), fc(0), t), a(0), neg, t);
  } else if (name == "Gelu") {
    KILN_ASSIGN_OR_RETURN(r, Gelu(w, op, a(0), t));
  } else if (name == "Cast") {
    r = w.Cast(a(0), dt, op.dtype);
  } else if (name == "Not") {
    r = w.Binary("arith.xori", a(0), w.BoolConst(true), "i1");
  } else if (name == "And" || name == "Or") {
    r = w.Binary(name == "And" ? "arith.andi" : "arith.ori", a(0), a(1), "i1");
  } else if (name == "Select") {
    r = w.Select(a(0), a(1), a(2), t);
  } else {  // comparisons
    static const std::map<std::string, std::pair<const char*, const char*>> preds = {
        {"Equal", {"oeq", "eq"}},
        {"Less", {"olt", "slt"}},
        {"LessEqual", {"ole", "sle"}},
        {"Greater", {"ogt", "sgt"}},
        {"GreaterEqual", {"oge", "sge"}}};
    auto it = preds.find(name);
    if (it == preds.end())
      return MakeError(ErrorCode::kUnimplemented, "op '", name, "' is not supported");
    std::string p = f ? it->second.first : it->second.second;
    if (u && p != "eq") p[0] = 'u';  // unsigned compare for u8
    r = w.Cmp(f ? "arith.cmpf" : "arith.cmpi", p, a(0), a(1), t);
  }
  return IsExact(name) ? r : w.RoundTo(r, op.dtype);
}

}  // namespace kiln::compiler::internal
