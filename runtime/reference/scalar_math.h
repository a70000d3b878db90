// Scalar semantics shared by reference kernels: integer arithmetic that wraps (two's complement)
// instead of overflowing into undefined behaviour, and max/min that propagate NaN (numpy's
// maximum/minimum, ONNX Max/Min).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kiln::reference {

inline int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(uint64_t(a) + uint64_t(b));
}
inline int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(uint64_t(a) - uint64_t(b));
}
inline int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(uint64_t(a) * uint64_t(b));
}
inline int64_t WrapNeg(int64_t a) { return static_cast<int64_t>(0 - uint64_t(a)); }

inline double NanMax(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
}
inline double NanMin(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
}

}  // namespace kiln::reference
