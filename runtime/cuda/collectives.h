// The cuda backends' collectives: the AllReduce steps (ir/ops/collective.h) of a data-parallel
// plan, run on the device in the stream's order, as PyTorch DDP and Horovod run theirs on GPUs.
// A device opens them once per executor from the session's communicator (Device::OpenCollectives):
//   "cuda"      NCCL (nccl_api.h): rank 0 makes the clique's unique id, the communicator
//               broadcasts it (over MPI under mpirun), every rank joins with ncclCommInitRank;
//               a bucket is one group of ncclAllReduce calls on the device's stream, out of place,
//               each rank's values multiplied by its scale as NCCL reads them (ncclRedOpCreate-
//               PreMulSum), or a plain ncclSum where the scale is 1.
//   "cuda-sim"  the same call on the simulated device: when the stream reaches it, the bucket's
//               device buffers (checked against their allocations) are packed into one message,
//               summed over the ranks by the communicator itself (an in-process group in tests,
//               MPI under mpirun) and unpacked into the outputs (runtime/distributed/
//               all_reduce_message.h: 16-bit values are summed in f32, where NCCL sums them in
//               their own dtype).
// Contract: every rank issues the same all-reduces in the same order with the same counts. A plan
// whose collectives are on the device is not captured as a CUDA graph (each run's scale, the
// rank's share of its batch, is read when the call is issued).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/status.h"
#include "runtime/cuda/device.h"
#include "runtime/executable.h"

namespace kiln::cuda {

// One tensor of a bucket: `count` values read at `send`, their reduction written at `recv`.
struct ReduceBuffers {
  DevicePtr send = 0;
  DevicePtr recv = 0;
  int64_t count = 0;
};

class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;
  // Issues on the device's stream: each recv becomes Σ_r scale_r · send_r over the ranks (scale:
  // this rank's), element-wise, for values of `dtype` (f32, f64, bf16 or f16).
  virtual Status AllReduce(const std::vector<ReduceBuffers>& buffers, DType dtype,
                           double scale) = 0;
};

// Whether the cuda backends run `step` on the device: an AllReduce of reduction "sum" or "mean"
// whose inputs and outputs pair up in bytes and share one dtype of f32, f64, bf16 or f16.
// ("mean_over_share" scales after the sum, which NCCL cannot: that step runs on the host, through
// the communicator.)
bool IsDeviceCollective(const Step& step, const Executable& exe);

}  // namespace kiln::cuda
