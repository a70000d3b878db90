// cuDNN, loaded at run time like cuBLASLt (cublaslt_api.h): `dlopen("libcudnn.so.9")` (from the
// loader's path, else the CUDA toolkit's /usr/local/cuda/lib64) the first time a plan puts a
// convolution on a GPU, every entry point kiln calls resolved once into one table of typed
// pointers. Nothing links libcudnn, so kilnrt starts where it is not installed; there the device's
// convolutions run as the generated kernels their steps carry.
//
// Contract: LoadCudnn() is called by any thread, any number of times (later calls return the first
// answer); it fails with kFailedPrecondition naming the library and dlopen's reason, a missing
// symbol, or a version this runtime cannot use. cuDNN promises that code built for 9.x runs with
// 9.y for y >= x; kiln's calls are written for the backend graph API as cuDNN 9.0 has it (no
// attribute or operation of a later 9.x: kCudnnApiVersion), so a library of major version 9 and
// at least 9.0 is accepted, not only one as new as the headers kiln compiles against (9.19 here),
// which would refuse the older 9.x that PyTorch's wheels ship. CheckCudnn turns a cudnnStatus_t
// into a Status naming the call, cuDNN's text and its last error message.
#pragma once

#include <cudnn.h>

#include <string>

#include "ir/status.h"

namespace kiln::cuda {

// X(name): every cuDNN entry point kiln calls.
#define KILN_CUDNN_ENTRY_POINTS(X) \
  X(cudnnGetVersion)               \
  X(cudnnGetErrorString)           \
  X(cudnnGetLastErrorString)       \
  X(cudnnCreate)                   \
  X(cudnnDestroy)                  \
  X(cudnnSetStream)                \
  X(cudnnBackendCreateDescriptor)  \
  X(cudnnBackendDestroyDescriptor) \
  X(cudnnBackendFinalize)          \
  X(cudnnBackendSetAttribute)      \
  X(cudnnBackendGetAttribute)      \
  X(cudnnBackendExecute)

struct CudnnApi {
#define KILN_CUDNN_FIELD(name) decltype(&::name) name = nullptr;
  KILN_CUDNN_ENTRY_POINTS(KILN_CUDNN_FIELD)
#undef KILN_CUDNN_FIELD
  size_t version = 0;  // cudnnGetVersion(): major * 10000 + minor * 100 + patch
};

// The cuDNN version whose API kiln's calls use (major * 10000 + minor * 100 + patch).
inline constexpr size_t kCudnnApiVersion = 90000;

// Whether a cuDNN library of `found` version (cudnnGetVersion's number) can run code built for
// version `built`: the same major version, and a minor version at least as new.
bool CudnnVersionUsable(size_t built, size_t found);
// "9.19.0" from 91900.
std::string CudnnVersionString(size_t version);

// The process's cuDNN table, loaded on the first call.
Result<const CudnnApi*> LoadCudnn();

// OkStatus for CUDNN_STATUS_SUCCESS; otherwise kInternal (kResourceExhausted for a failed
// allocation, kUnimplemented for CUDNN_STATUS_NOT_SUPPORTED*) with
// "<call> failed: <text> (<cuDNN's last error message>)".
Status CheckCudnn(const CudnnApi& api, cudnnStatus_t status, const char* call);

}  // namespace kiln::cuda
