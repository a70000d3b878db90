// The CUDA driver API, loaded at run time: `dlopen("libcuda.so.1")`, then every entry point kiln
// uses resolved once through `cuGetProcAddress` for CUDA_VERSION into one table of typed pointers
// (the PFN_* typedefs of cudaTypedefs.h). Nothing in kiln links libcuda or its stub, so a program
// starts on a machine without a GPU and `--backend cuda` is refused there with one clear line.
//
// Contract: LoadDriver() is called once per process (later calls return the first answer); it
// fails with kFailedPrecondition naming libcuda.so.1 and dlopen's reason when there is no driver,
// and names the symbol when one cannot be resolved. CheckCuda turns a CUresult into a Status naming
// the call and the driver's error name and text.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include "ir/status.h"

namespace kiln::cuda {

// X(name, PFN type): every driver entry point kiln calls.
#define KILN_CUDA_DRIVER_ENTRY_POINTS(X)                                 \
  X(cuInit, PFN_cuInit_v2000)                                            \
  X(cuDriverGetVersion, PFN_cuDriverGetVersion_v2020)                    \
  X(cuDeviceGet, PFN_cuDeviceGet_v2000)                                  \
  X(cuDeviceGetCount, PFN_cuDeviceGetCount_v2000)                        \
  X(cuDeviceGetName, PFN_cuDeviceGetName_v2000)                          \
  X(cuDeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000)                \
  X(cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000)        \
  X(cuDevicePrimaryCtxRelease, PFN_cuDevicePrimaryCtxRelease_v11000)     \
  X(cuCtxSetCurrent, PFN_cuCtxSetCurrent_v4000)                          \
  X(cuStreamCreate, PFN_cuStreamCreate_v2000)                            \
  X(cuStreamDestroy, PFN_cuStreamDestroy_v4000)                          \
  X(cuStreamSynchronize, PFN_cuStreamSynchronize_v2000)                  \
  X(cuEventCreate, PFN_cuEventCreate_v2000)                              \
  X(cuEventRecord, PFN_cuEventRecord_v2000)                              \
  X(cuEventSynchronize, PFN_cuEventSynchronize_v2000)                    \
  X(cuEventElapsedTime, PFN_cuEventElapsedTime_v12080)                   \
  X(cuEventDestroy, PFN_cuEventDestroy_v4000)                            \
  X(cuMemAlloc, PFN_cuMemAlloc_v3020)                                    \
  X(cuMemFree, PFN_cuMemFree_v3020)                                      \
  X(cuMemGetInfo, PFN_cuMemGetInfo_v3020)                                \
  X(cuMemHostAlloc, PFN_cuMemHostAlloc_v2020)                            \
  X(cuMemFreeHost, PFN_cuMemFreeHost_v2000)                              \
  X(cuMemcpyHtoDAsync, PFN_cuMemcpyHtoDAsync_v3020)                      \
  X(cuMemcpyDtoHAsync, PFN_cuMemcpyDtoHAsync_v3020)                      \
  X(cuMemcpyDtoDAsync, PFN_cuMemcpyDtoDAsync_v3020)                      \
  X(cuMemsetD8Async, PFN_cuMemsetD8Async_v3020)                          \
  X(cuModuleLoadDataEx, PFN_cuModuleLoadDataEx_v2010)                    \
  X(cuModuleUnload, PFN_cuModuleUnload_v2000)                            \
  X(cuModuleGetFunction, PFN_cuModuleGetFunction_v2000)                  \
  X(cuLaunchKernel, PFN_cuLaunchKernel_v4000)                            \
  X(cuStreamBeginCapture, PFN_cuStreamBeginCapture_v10010)               \
  X(cuStreamEndCapture, PFN_cuStreamEndCapture_v10000)                   \
  X(cuGraphInstantiateWithFlags, PFN_cuGraphInstantiateWithFlags_v11040) \
  X(cuGraphLaunch, PFN_cuGraphLaunch_v10000)                             \
  X(cuGraphExecDestroy, PFN_cuGraphExecDestroy_v10000)                   \
  X(cuGraphDestroy, PFN_cuGraphDestroy_v10000)                           \
  X(cuGetErrorName, PFN_cuGetErrorName_v6000)                            \
  X(cuGetErrorString, PFN_cuGetErrorString_v6000)

struct DriverApi {
#define KILN_CUDA_DRIVER_FIELD(name, type) type name = nullptr;
  KILN_CUDA_DRIVER_ENTRY_POINTS(KILN_CUDA_DRIVER_FIELD)
#undef KILN_CUDA_DRIVER_FIELD
};

// The process's driver table, loaded on the first call.
Result<const DriverApi*> LoadDriver();

// OkStatus for CUDA_SUCCESS; otherwise kInternal (kResourceExhausted for out-of-memory) with
// "<call> failed: <CUDA_ERROR_NAME>: <text>".
Status CheckCuda(const DriverApi& api, CUresult result, const char* call);

}  // namespace kiln::cuda
