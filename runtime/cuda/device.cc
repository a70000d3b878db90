#include "runtime/cuda/device.h"

namespace kiln::cuda {

Result<std::unique_ptr<Device>> OpenDevice(const std::string& backend, int threads,
                                           int64_t simulated_bytes) {
  if (backend == "cuda-sim")
    return MakeSimulatedDevice(threads,
                               simulated_bytes > 0 ? simulated_bytes : kSimulatedDeviceBytes);
  if (backend == "cuda") return OpenDriverDevice();
  return MakeError(ErrorCode::kNotFound, "unknown CUDA device '", backend, "' (cuda, cuda-sim)");
}

}  // namespace kiln::cuda
