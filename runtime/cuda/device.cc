#include "runtime/cuda/device.h"

namespace kiln::cuda {

Result<std::unique_ptr<Device>> OpenDevice(const std::string& backend, int threads) {
  if (backend == "cuda-sim") return MakeSimulatedDevice(threads);
  if (backend == "cuda") return OpenDriverDevice();
  return MakeError(ErrorCode::kNotFound, "unknown CUDA device '", backend, "' (cuda, cuda-sim)");
}

}  // namespace kiln::cuda
