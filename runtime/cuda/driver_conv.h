// cuDNN convolutions on the "cuda" device (driver_device.cc), through cuDNN's backend graph API:
// one cuDNN handle per device, bound to its stream, and per call (conv_call.h) an operation graph
// (the convolution, then one pointwise operation per epilogue step: bias add, residual add, ReLU,
// over f32 virtual tensors), an engine configuration, and a variant pack of the operands' fixed
// addresses, all made once at load; cudnnBackendExecute on the stream per run. The configuration
// is the fastest, timed on the GPU at load (kAutotuneRuns runs between CUDA events, as PyTorch's
// cudnn.benchmark does), of the first kAutotuneCandidates that cuDNN's heuristics rank (mode A,
// or where none of its engines will do, the fallback mode), that compute at the call's precision
// (no engine that converts its inputs down, none that runs f32 data on TF32 tensor cores: PyTorch's
// filter when TF32 is off) and whose execution plans finalize with a workspace that fits
// (KILN_CUDNN_AUTOTUNE=0: the first of them, untimed). A call cuDNN cannot run (no engine for the
// graph, a workspace too large) is an error at load naming the call, and the caller runs the step's
// generated kernel instead. The device's context must be current on the calling thread.
#pragma once

#include <cuda.h>

#include <memory>

#include "runtime/cuda/conv_call.h"
#include "runtime/cuda/cudnn_api.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/driver_api.h"

namespace kiln::cuda {

inline constexpr size_t kAutotuneCandidates = 4;
inline constexpr int kAutotuneRuns = 3;

class DriverConvs {
 public:
  // Loads cuDNN and creates its handle on `stream`; `workspace` is kConvWorkspaceBytes of device
  // memory that outlives this object; `driver` times the autotune's candidates.
  static Result<std::unique_ptr<DriverConvs>> Create(const DriverApi& driver, CUstream stream,
                                                     DevicePtr workspace);
  ~DriverConvs();

  Result<std::shared_ptr<PreparedConv>> Prepare(const ConvCall& call, const ConvOperands& operands);
  Status Run(const PreparedConv& conv);

 private:
  DriverConvs(const CudnnApi& api, const DriverApi& driver, cudnnHandle_t handle, CUstream stream,
              DevicePtr workspace)
      : api_(api), driver_(driver), handle_(handle), stream_(stream), workspace_(workspace) {}
  static bool AutotuneEnabled();
  // Milliseconds of kAutotuneRuns executions of `plan` with `pack`, after one more (a warm-up).
  Result<double> Time(cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack);
  const CudnnApi& api_;
  const DriverApi& driver_;
  cudnnHandle_t handle_;
  CUstream stream_;
  DevicePtr workspace_;
};

}  // namespace kiln::cuda
