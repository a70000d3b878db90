// One AllReduce bucket as one message (ir/ops/collective.h): its inputs packed end to end, each
// scaled as it is packed (a rank's share, for "mean"), in f64 for f64 values and in f32 for f32,
// bf16 and f16 values (16-bit values are summed in f32); after the sum, unpacked into the outputs
// (scaled again for "mean_over_share"), narrowed back to their dtype. Shared by the reference
// kernel and the cpu backend's asynchronous all-reduce step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/status.h"

namespace kiln {

class AllReduceMessage {
 public:
  // Room for `count` values of `dtype` (f32, f64, bf16 or f16).
  AllReduceMessage(DType dtype, int64_t count);

  // Values [at, at + n) of the message from `values` (of the dtype), times `scale`.
  void Pack(int64_t at, const void* values, int64_t n, double scale);
  // Values [at, at + n) of the message into `values`, times `scale`.
  void Unpack(int64_t at, void* values, int64_t n, double scale) const;

  void* data() { return wide_ == DType::kF64 ? static_cast<void*>(f64_.data()) : f32_.data(); }
  DType wide() const { return wide_; }  // what the communicator sums: f32 or f64
  int64_t count() const { return count_; }
  int64_t bytes() const { return count_ * DTypeSize(wide_); }

 private:
  DType dtype_, wide_;
  int64_t count_;
  std::vector<float> f32_;
  std::vector<double> f64_;
};

// The scales of a reduction by name ("sum", "mean", "mean_over_share") for a rank of `share`: what
// its values are multiplied by as they are packed, and as they are unpacked.
struct AllReduceScales {
  double before = 1, after = 1;
};
AllReduceScales ScalesOf(const std::string& reduction, double share);

}  // namespace kiln
