// cuBLASLt, loaded at run time like the driver (driver_api.h): `dlopen("libcublasLt.so.13")` (from
// the loader's path, else the CUDA toolkit's /usr/local/cuda/lib64) the first time a plan puts a
// matmul on a GPU, every entry point kiln calls resolved once into one table of typed pointers.
// Nothing links libcublasLt, so kilnrt starts (and runs cpu and cuda-sim plans) where the library
// is not installed; a plan that needs it there is refused at load with one line naming it.
//
// Contract: LoadCublasLt() is called by any thread, any number of times (later calls return the
// first answer); it fails with kFailedPrecondition naming the library and dlopen's reason, or the
// missing symbol. CheckCublas turns a cublasStatus_t into a Status naming the call and cuBLASLt's
// status name and text.
#pragma once

#include <cublasLt.h>

#include "ir/status.h"

namespace kiln::cuda {

// X(name): every cuBLASLt entry point kiln calls.
#define KILN_CUBLASLT_ENTRY_POINTS(X)     \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtGetVersion)                   \
  X(cublasLtGetStatusName)                \
  X(cublasLtGetStatusString)              \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatrixLayoutSetAttribute)     \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic)       \
  X(cublasLtMatmul)

struct CublasLtApi {
#define KILN_CUBLASLT_FIELD(name) decltype(&::name) name = nullptr;
  KILN_CUBLASLT_ENTRY_POINTS(KILN_CUBLASLT_FIELD)
#undef KILN_CUBLASLT_FIELD
};

// The process's cuBLASLt table, loaded on the first call.
Result<const CublasLtApi*> LoadCublasLt();

// OkStatus for CUBLAS_STATUS_SUCCESS; otherwise kInternal (kResourceExhausted for
// CUBLAS_STATUS_ALLOC_FAILED) with "<call> failed: <CUBLAS_STATUS_NAME>: <text>".
Status CheckCublas(const CublasLtApi& api, cublasStatus_t status, const char* call);

}  // namespace kiln::cuda
