#include "runtime/distributed/all_reduce_message.h"

namespace kiln {
namespace {

template <typename Wide>
void PackAs(Wide* out, DType dtype, const void* values, int64_t n, double scale) {
  switch (dtype) {
    case DType::kF64:
    case DType::kF32: {
      const Wide* in = static_cast<const Wide*>(values);
      const Wide s = static_cast<Wide>(scale);
      for (int64_t k = 0; k < n; ++k) out[k] = in[k] * s;
      return;
    }
    case DType::kBF16: {
      const uint16_t* in = static_cast<const uint16_t*>(values);
      const float s = static_cast<float>(scale);
      for (int64_t k = 0; k < n; ++k) out[k] = BFloat16ToFloat(in[k]) * s;
      return;
    }
    default: {  // f16
      const uint16_t* in = static_cast<const uint16_t*>(values);
      const float s = static_cast<float>(scale);
      for (int64_t k = 0; k < n; ++k) out[k] = HalfToFloat(in[k]) * s;
      return;
    }
  }
}

template <typename Wide>
void UnpackAs(const Wide* in, DType dtype, void* values, int64_t n, double scale) {
  switch (dtype) {
    case DType::kF64:
    case DType::kF32: {
      Wide* out = static_cast<Wide*>(values);
      const Wide s = static_cast<Wide>(scale);
      for (int64_t k = 0; k < n; ++k) out[k] = in[k] * s;
      return;
    }
    case DType::kBF16: {
      uint16_t* out = static_cast<uint16_t*>(values);
      const float s = static_cast<float>(scale);
      for (int64_t k = 0; k < n; ++k) out[k] = FloatToBFloat16(in[k] * s);
      return;
    }
    default: {  // f16
      uint16_t* out = static_cast<uint16_t*>(values);
      const float s = static_cast<float>(scale);
      for (int64_t k = 0; k < n; ++k) out[k] = FloatToHalf(in[k] * s);
      return;
    }
  }
}

}  // namespace

AllReduceMessage::AllReduceMessage(DType dtype, int64_t count)
    : dtype_(dtype), wide_(dtype == DType::kF64 ? DType::kF64 : DType::kF32), count_(count) {
  if (wide_ == DType::kF64)
    f64_.resize(static_cast<size_t>(count));
  else
    f32_.resize(static_cast<size_t>(count));
}

void AllReduceMessage::Pack(int64_t at, const void* values, int64_t n, double scale) {
  if (wide_ == DType::kF64)
    PackAs(f64_.data() + at, dtype_, values, n, scale);
  else
    PackAs(f32_.data() + at, dtype_, values, n, scale);
}

void AllReduceMessage::Unpack(int64_t at, void* values, int64_t n, double scale) const {
  if (wide_ == DType::kF64)
    UnpackAs(f64_.data() + at, dtype_, values, n, scale);
  else
    UnpackAs(f32_.data() + at, dtype_, values, n, scale);
}

AllReduceScales ScalesOf(const std::string& reduction, double share) {
  if (reduction == "mean") return {share, 1};
  if (reduction == "mean_over_share") return {share, 1 / share};
  return {1, 1};
}

}  // namespace kiln
