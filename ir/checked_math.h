// Overflow-checked arithmetic on dimensions and sizes: nullopt when the result does not fit in
// int64 (shape inference and the verifier refuse such tensors instead of wrapping around).
#pragma once

#include <cstdint>
#include <optional>

namespace kiln {

inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace kiln
