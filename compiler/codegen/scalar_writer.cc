#include "compiler/codegen/scalar_writer.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kiln::compiler::internal {
namespace {

// A float literal MLIR parses back to exactly `v` (decimal when that round-trips, else hex bits).
std::string FloatLiteral(double v, bool is_f64) {
  if (std::isfinite(v)) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), is_f64 ? "%.17g" : "%.9g", v);
    std::string s = buf;
    bool exact = is_f64 ? std::strtod(buf, nullptr) == v
                        : static_cast<float>(std::strtod(buf, nullptr)) == static_cast<float>(v);
    if (exact) {
      if (s.find('.') == std::string::npos) {
        size_t e = s.find('e');
        s.insert(e == std::string::npos ? s.size() : e, ".0");
      }
      return s;
    }
  }
  char buf[32];
  if (is_f64)
    std::snprintf(buf, sizeof(buf), "0x%016llX",
                  static_cast<unsigned long long>(std::bit_cast<uint64_t>(v)));
  else
    std::snprintf(buf, sizeof(buf), "0x%08X", std::bit_cast<uint32_t>(static_cast<float>(v)));
  return buf;
}

template <typename T>
int64_t Saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<int64_t>(static_cast<T>(v));
}

int Bits(DType t) { return t == DType::kBool ? 1 : DTypeSize(t) * 8; }

}  // namespace

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

std::string MemRef(const std::vector<int64_t>& dims, DType t, bool dynamic_first) {
  std::string s = "memref<";
  for (size_t g = 0; g < dims.size(); ++g)
    s += (g == 0 && dynamic_first ? std::string("?") : std::to_string(dims[g])) + "x";
  s += StorageType(t);
  if (dynamic_first) {
    std::vector<std::string> strides(dims.size());
    int64_t stride = 1;
    for (size_t g = dims.size(); g-- > 0;) strides[g] = std::to_string(stride), stride *= dims[g];
    s += ", strided<[" + Join(strides, ", ") + "], offset: ?>";
  }
  return s + ">";
}

std::string ComputeType(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kBool:
      return "i1";
    default:
      return "i" + std::to_string(Bits(t));
  }
}

std::string StorageType(DType t) {
  switch (t) {
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "i16";
    case DType::kBool:
      return "i8";
    default:
      return ComputeType(t);
  }
}

std::string ScalarWriter::Emit(const std::string& rhs) {
  std::string name = Fresh();
  Line(name + " = " + rhs);
  return name;
}

void ScalarWriter::Dedent() {
  indent_.resize(indent_.size() - 2);
  for (auto it = consts_.begin(); it != consts_.end();)
    it = it->second.depth > indent_.size() ? consts_.erase(it) : std::next(it);
}

std::string ScalarWriter::Constant(const std::string& literal, const std::string& type) {
  std::string key = type + "|" + literal;
  auto it = consts_.find(key);
  if (it != consts_.end()) return it->second.name;
  std::string name = Emit("arith.constant " + literal + (type == "i1" ? "" : " : " + type));
  consts_[key] = {name, indent_.size()};
  return name;
}

std::string ScalarWriter::FloatConst(double v, const std::string& type) {
  return Constant(FloatLiteral(v, type == "f64"), type);
}

std::string ScalarWriter::IntConst(int64_t v, const std::string& type) {
  if (type == "i1") return Constant(v ? "true" : "false", "i1");
  return Constant(std::to_string(v), type);
}

std::string ScalarWriter::NanConst(const std::string& type) {
  return Constant(type == "f64" ? "0x7FF8000000000000" : "0x7FC00000", type);
}

std::string ScalarWriter::DTypeConst(double v, DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return FloatConst(v, "f64");
    case DType::kF32:
      return FloatConst(static_cast<float>(v), "f32");
    case DType::kF16:
      return FloatConst(HalfToFloat(FloatToHalf(static_cast<float>(v))), "f32");
    case DType::kBF16:
      return FloatConst(BFloat16ToFloat(FloatToBFloat16(static_cast<float>(v))), "f32");
    case DType::kBool:
      return BoolConst(v != 0.0);
    case DType::kI8:
      return IntConst(Saturate<int8_t>(v), "i8");
    case DType::kU8:  // the same bits as a signed i8 literal
      return IntConst(static_cast<int8_t>(static_cast<uint8_t>(Saturate<uint8_t>(v))), "i8");
    case DType::kI32:
      return IntConst(Saturate<int32_t>(v), "i32");
    default:
      return IntConst(Saturate<int64_t>(v), "i64");
  }
}

std::string ScalarWriter::Binary(const std::string& op, const std::string& a, const std::string& b,
                                 const std::string& type) {
  return Emit(op + " " + a + ", " + b + " : " + type);
}

std::string ScalarWriter::Unary(const std::string& op, const std::string& a,
                                const std::string& type) {
  return Emit(op + " " + a + " : " + type);
}

std::string ScalarWriter::Cmp(const std::string& op, const std::string& pred, const std::string& a,
                              const std::string& b, const std::string& type) {
  return Emit(op + " " + pred + ", " + a + ", " + b + " : " + type);
}

std::string ScalarWriter::Select(const std::string& c, const std::string& a, const std::string& b,
                                 const std::string& type) {
  return Emit("arith.select " + c + ", " + a + ", " + b + " : " + type);
}

std::string ScalarWriter::Convert(const std::string& op, const std::string& a,
                                  const std::string& from, const std::string& to) {
  return Emit(op + " " + a + " : " + from + " to " + to);
}

std::string ScalarWriter::Load(const std::string& arg, DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return Cmp("arith.cmpi", "ne", arg, IntConst(0, "i8"), "i8");
    case DType::kF16:
      return Convert("arith.extf", arg, "f16", "f32");
    case DType::kBF16: {
      std::string wide = Convert("arith.extui", arg, "i16", "i32");
      std::string bits = Binary("arith.shli", wide, IntConst(16, "i32"), "i32");
      return Convert("arith.bitcast", bits, "i32", "f32");
    }
    default:
      return arg;
  }
}

std::string ScalarWriter::Store(const std::string& v, DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return Convert("arith.extui", v, "i1", "i8");
    case DType::kF16:
      return Convert("arith.truncf", v, "f32", "f16");  // exact: v is already rounded
    case DType::kBF16: {
      std::string bits = Convert("arith.bitcast", v, "f32", "i32");
      std::string high = Binary("arith.shrui", bits, IntConst(16, "i32"), "i32");
      return Convert("arith.trunci", high, "i32", "i16");
    }
    default:
      return v;
  }
}

std::string ScalarWriter::RoundTo(const std::string& v, DType dtype) {
  if (dtype == DType::kF16)
    return Convert("arith.extf", Convert("arith.truncf", v, "f32", "f16"), "f16", "f32");
  if (dtype != DType::kBF16) return v;
  // Round to nearest even on the upper 16 bits; a NaN stays a (quiet) NaN, as FloatToBFloat16.
  std::string bits = Convert("arith.bitcast", v, "f32", "i32");
  std::string lsb = Binary("arith.andi", Binary("arith.shrui", bits, IntConst(16, "i32"), "i32"),
                           IntConst(1, "i32"), "i32");
  std::string sum =
      Binary("arith.addi", bits, Binary("arith.addi", lsb, IntConst(0x7fff, "i32"), "i32"), "i32");
  std::string mask = IntConst(static_cast<int32_t>(0xffff0000u), "i32");
  std::string rounded = Binary("arith.andi", sum, mask, "i32");
  std::string quiet = Binary("arith.ori", Binary("arith.andi", bits, mask, "i32"),
                             IntConst(0x400000, "i32"), "i32");
  std::string nan = Cmp("arith.cmpf", "uno", v, v, "f32");
  return Convert("arith.bitcast", Select(nan, quiet, rounded, "i32"), "i32", "f32");
}

std::string ScalarWriter::FloatToF64(const std::string& v, DType from) {
  return from == DType::kF64 ? v : Convert("arith.extf", v, "f32", "f64");
}

// Tensor::SetDouble's saturating conversion: NaN -> 0, beyond the range -> its end, else truncate.
std::string ScalarWriter::FloatToInt(const std::string& v, DType from, DType to) {
  std::string d = FloatToF64(v, from), it = ComputeType(to);
  double lo = to == DType::kU8 ? 0.0 : -std::ldexp(1.0, Bits(to) - 1);
  double hi = to == DType::kU8 ? 255.0 : std::ldexp(1.0, Bits(to) - 1) - 1.0;
  std::string t =
      to == DType::kI64 || to == DType::kI32
          ? Convert("arith.fptosi", d, "f64", it)
          : Convert("arith.trunci", Convert("arith.fptosi", d, "f64", "i32"), "i32", it);
  std::string lo_c = Cmp("arith.cmpf", "ole", d, FloatConst(lo, "f64"), "f64");
  std::string hi_c = Cmp("arith.cmpf", "oge", d, FloatConst(hi, "f64"), "f64");
  std::string nan_c = Cmp("arith.cmpf", "uno", d, d, "f64");
  t = Select(lo_c, DTypeConst(lo, to), t, it);
  t = Select(hi_c, DTypeConst(hi, to), t, it);
  return Select(nan_c, IntConst(0, it), t, it);
}

std::string ScalarWriter::Cast(const std::string& v, DType from, DType to) {
  if (from == to) return v;
  std::string ft = ComputeType(from), tt = ComputeType(to);
  bool from_int = !IsFloat(from), to_int = !IsFloat(to);
  if (from_int && to_int) {
    if (to == DType::kBool) return Cmp("arith.cmpi", "ne", v, IntConst(0, ft), ft);
    int fb = Bits(from), tb = Bits(to);
    if (fb == tb) return v;  // i8 <-> u8: the same bits
    if (fb > tb) return Convert("arith.trunci", v, ft, tt);
    bool zero_extend = from == DType::kBool || from == DType::kU8;
    return Convert(zero_extend ? "arith.extui" : "arith.extsi", v, ft, tt);
  }
  if (from_int) {  // -> float, through double as the reference (one rounding unless from i64)
    bool unsigned_src = from == DType::kBool || from == DType::kU8;
    std::string op = unsigned_src ? "arith.uitofp" : "arith.sitofp";
    if (from == DType::kI64 && tt == "f32")
      return RoundTo(Convert("arith.truncf", Convert(op, v, ft, "f64"), "f64", "f32"), to);
    return RoundTo(Convert(op, v, ft, tt), to);
  }
  if (to == DType::kBool) return Cmp("arith.cmpf", "une", v, FloatConst(0.0, ft), ft);
  if (to_int) return FloatToInt(v, from, to);
  if (ft == tt) return RoundTo(v, to);  // among f32, f16, bf16
  if (tt == "f64") return Convert("arith.extf", v, "f32", "f64");
  return RoundTo(Convert("arith.truncf", v, "f64", "f32"), to);
}

}  // namespace kiln::compiler::internal
