// cuDNN convolutions on the "cuda" device (driver_device.cc), through cuDNN's backend graph API:
// one cuDNN handle per device, bound to its stream, and per call (conv_call.h) an operation graph
// (the convolution, then one pointwise operation per epilogue step: bias add, residual add, ReLU,
// over f32 virtual tensors), the first engine configuration of cuDNN's heuristics (mode A) whose
// execution plan finalizes and whose workspace fits, and a variant pack of the operands' fixed
// addresses, all made once at load; cudnnBackendExecute on the stream per run. A call cuDNN cannot
// run (no engine for the graph, a workspace too large) is an error at load naming the call, and
// the caller runs the step's generated kernel instead. The device's context must be current on
// the calling thread.
#pragma once

#include <cuda.h>

#include <memory>

#include "runtime/cuda/conv_call.h"
#include "runtime/cuda/cudnn_api.h"
#include "runtime/cuda/device.h"

namespace kiln::cuda {

// The device memory cuDNN's engines may use, shared by every convolution on the stream.
inline constexpr int64_t kConvWorkspaceBytes = int64_t{64} << 20;

class DriverConvs {
 public:
  // Loads cuDNN and creates its handle on `stream`; `workspace` is kConvWorkspaceBytes of device
  // memory that outlives this object.
  static Result<std::unique_ptr<DriverConvs>> Create(CUstream stream, DevicePtr workspace);
  ~DriverConvs();

  Result<std::shared_ptr<PreparedConv>> Prepare(const ConvCall& call, const ConvOperands& operands);
  Status Run(const PreparedConv& conv);

 private:
  DriverConvs(const CudnnApi& api, cudnnHandle_t handle, DevicePtr workspace)
      : api_(api), handle_(handle), workspace_(workspace) {}
  const CudnnApi& api_;
  cudnnHandle_t handle_;
  DevicePtr workspace_;
};

}  // namespace kiln::cuda
