// Element types of kiln tensors, their names and sizes, and 16-bit float conversions.
//
// Names are the short forms used everywhere in kiln's text ("f32", "bf16", "i64", "bool").
// Half (IEEE binary16) and bfloat16 conversions round to nearest even and keep inf and NaN.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

enum class DType : uint8_t { kInvalid = 0, kF32, kF64, kF16, kBF16, kI8, kU8, kI32, kI64, kBool };

inline constexpr DType f32 = DType::kF32;
inline constexpr DType f64 = DType::kF64;
inline constexpr DType f16 = DType::kF16;
inline constexpr DType bf16 = DType::kBF16;
inline constexpr DType i8 = DType::kI8;
inline constexpr DType u8 = DType::kU8;
inline constexpr DType i32 = DType::kI32;
inline constexpr DType i64 = DType::kI64;
inline constexpr DType boolean = DType::kBool;

// Every valid dtype, in enum order.
const std::vector<DType>& AllDTypes();

std::string_view DTypeName(DType t);
std::optional<DType> DTypeFromName(std::string_view name);
// Bytes per element (bool is one byte).
int DTypeSize(DType t);

bool IsFloat(DType t);    // f32 f64 f16 bf16
bool IsInteger(DType t);  // i8 u8 i32 i64
inline bool IsNumeric(DType t) { return IsFloat(t) || IsInteger(t); }

uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
// bf16 <-> float32 inline, so that conversion loops vectorize: round to nearest even, NaN stays a
// (quiet) NaN.
inline uint16_t FloatToBFloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}
inline float BFloat16ToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

}  // namespace kiln
