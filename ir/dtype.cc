#include "ir/dtype.h"

#include <bit>
#include <cmath>

namespace kiln {

const std::vector<DType>& AllDTypes() {
  static const std::vector<DType> all = {f32, f64,     f16, bf16, i8,  u8, i32,
                                         i64, boolean, i16, u16,  u32, u64};
  return all;
}

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kI8:
      return "i8";
    case DType::kU8:
      return "u8";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kBool:
      return "bool";
    case DType::kI16:
      return "i16";
    case DType::kU16:
      return "u16";
    case DType::kU32:
      return "u32";
    case DType::kU64:
      return "u64";
    case DType::kSeq:
      return "seq";
    case DType::kOptional:
      return "optional";
    case DType::kInvalid:
      break;
  }
  return "invalid";
}

std::optional<DType> DTypeFromName(std::string_view name) {
  for (DType t : AllDTypes())
    if (DTypeName(t) == name) return t;
  for (DType t : {seq, optional})
    if (DTypeName(t) == name) return t;
  return std::nullopt;
}

int DTypeSize(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kI64:
    case DType::kU64:
      return 8;
    case DType::kF32:
    case DType::kI32:
    case DType::kU32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
    case DType::kU16:
      return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      return 1;
    case DType::kSeq:
    case DType::kOptional:
    case DType::kInvalid:
      break;
  }
  return 0;
}

bool IsFloat(DType t) { return t == f32 || t == f64 || t == f16 || t == bf16; }
bool IsInteger(DType t) { return t == i8 || t == i16 || t == i32 || t == i64 || IsUnsigned(t); }
bool IsUnsigned(DType t) { return t == u8 || t == u16 || t == u32 || t == u64; }
bool HasGeneratedKernels(DType t) {
  return IsFloat(t) || t == boolean || t == i8 || t == u8 || t == i32 || t == i64;
}

uint16_t FloatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // subnormal or zero in half
    // Scale so that the half subnormal unit (2^-24) becomes 1, then round to nearest even.
    float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // 2^24
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (abs >> 13));
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

}  // namespace kiln
