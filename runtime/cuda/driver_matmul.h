// cuBLASLt matmuls on the "cuda" device (driver_device.cc): one cuBLASLt handle and one workspace
// per device, descriptors and the heuristic's algorithm made once per call at load, then
// cublasLtMatmul on the device's stream per run. The device's context must be current on the
// calling thread (the driver device makes it so before every call).
#pragma once

#include <cuda.h>

#include <memory>

#include "runtime/cuda/cublaslt_api.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/matmul_call.h"

namespace kiln::cuda {

class DriverMatmuls {
 public:
  // Loads cuBLASLt and creates its handle; `workspace` is kMatmulWorkspaceBytes of device memory
  // that outlives this object.
  static Result<std::unique_ptr<DriverMatmuls>> Create(DevicePtr workspace);
  ~DriverMatmuls();

  // Descriptors for `call`, and the algorithm cuBLASLt's heuristic picks for them and for the
  // operands' alignment; an error names the call when cuBLASLt has none.
  Result<std::shared_ptr<PreparedMatmul>> Prepare(const MatmulCall& call,
                                                  const MatmulOperands& operands);
  Status Run(const PreparedMatmul& matmul, CUstream stream);

 private:
  DriverMatmuls(const CublasLtApi& api, cublasLtHandle_t handle, DevicePtr workspace)
      : api_(api), handle_(handle), workspace_(workspace) {}
  const CublasLtApi& api_;
  cublasLtHandle_t handle_;
  DevicePtr workspace_;
};

}  // namespace kiln::cuda
