// Element types of kiln tensors, their names and sizes, and 16-bit float conversions.
//
// Names are the short forms used everywhere in kiln's text ("f32", "bf16", "i64", "bool").
// i16, u16, u32 and u64 (appended last, so that the earlier codes keep their values) are stored,
// fed, fetched, cast and computed by the reference kernels; generated kernels do not take them
// (those nodes run their reference kernels on the compiled backends).
// Half (IEEE binary16) and bfloat16 conversions round to nearest even and keep inf and NaN.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

enum class DType : uint8_t {
  kInvalid = 0,
  kF32,
  kF64,
  kF16,
  kBF16,
  kI8,
  kU8,
  kI32,
  kI64,
  kBool,
  kI16,
  kU16,
  kU32,
  kU64,
  // Not tensors: host containers of tensors (ONNX's sequence and optional types). A value of
  // these types is a Tensor of shape [] that holds its elements (Tensor::Sequence,
  // Tensor::Optional); they have no bytes, no element accessors and no compiled kernels.
  kSeq,
  kOptional
};

inline constexpr DType f32 = DType::kF32;
inline constexpr DType f64 = DType::kF64;
inline constexpr DType f16 = DType::kF16;
inline constexpr DType bf16 = DType::kBF16;
inline constexpr DType i8 = DType::kI8;
inline constexpr DType u8 = DType::kU8;
inline constexpr DType i32 = DType::kI32;
inline constexpr DType i64 = DType::kI64;
inline constexpr DType boolean = DType::kBool;
inline constexpr DType i16 = DType::kI16;
inline constexpr DType u16 = DType::kU16;
inline constexpr DType u32 = DType::kU32;
inline constexpr DType u64 = DType::kU64;
inline constexpr DType seq = DType::kSeq;
inline constexpr DType optional = DType::kOptional;

// Every tensor dtype, in enum order (not the containers seq and optional: an op takes those only
// where it says so).
const std::vector<DType>& AllDTypes();
// seq or optional.
inline bool IsContainer(DType t) { return t == DType::kSeq || t == DType::kOptional; }

std::string_view DTypeName(DType t);
std::optional<DType> DTypeFromName(std::string_view name);
// Bytes per element (bool is one byte; 0 for the containers, which hold no bytes).
int DTypeSize(DType t);

bool IsFloat(DType t);     // f32 f64 f16 bf16
bool IsInteger(DType t);   // i8 u8 i16 u16 i32 u32 i64 u64
bool IsUnsigned(DType t);  // u8 u16 u32 u64
// The integer dtypes generated kernels take (i8 u8 i32 i64); the others run reference kernels.
bool HasGeneratedKernels(DType t);
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
