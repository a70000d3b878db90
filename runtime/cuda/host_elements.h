// Elements of device buffers as the simulated device's library routines (host_matmul.cc,
// host_conv.cc) read and write them: f32, bf16 or f16 values at raw addresses, as float; a store
// rounds to the element type (to nearest even).
#pragma once

#include <cstdint>

#include "ir/dtype.h"

namespace kiln::cuda {

inline float LoadElement(const void* base, int64_t i, DType t) {
  switch (t) {
    case DType::kF32:
      return static_cast<const float*>(base)[i];
    case DType::kBF16:
      return BFloat16ToFloat(static_cast<const uint16_t*>(base)[i]);
    default:  // f16 (the routines admit no other)
      return HalfToFloat(static_cast<const uint16_t*>(base)[i]);
  }
}

inline void StoreElement(void* base, int64_t i, DType t, float v) {
  switch (t) {
    case DType::kF32:
      static_cast<float*>(base)[i] = v;
      return;
    case DType::kBF16:
      static_cast<uint16_t*>(base)[i] = FloatToBFloat16(v);
      return;
    default:
      static_cast<uint16_t*>(base)[i] = FloatToHalf(v);
  }
}

}  // namespace kiln::cuda
