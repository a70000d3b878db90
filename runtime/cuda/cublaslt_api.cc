#include "runtime/cuda/cublaslt_api.h"

#include <dlfcn.h>

#include <string>

#include "runtime/shared_library.h"

namespace kiln::cuda {
namespace {

#define KILN_STRINGIFY_INNER(x) #x
#define KILN_STRINGIFY(x) KILN_STRINGIFY_INNER(x)
constexpr char kCublasLtLibrary[] = "libcublasLt.so." KILN_STRINGIFY(CUBLAS_VER_MAJOR);

Result<CublasLtApi> Load() {
  Result<void*> opened = OpenSharedLibrary(kCublasLtLibrary, kCudaToolkitLibraries);
  if (!opened.ok())
    return MakeError(ErrorCode::kFailedPrecondition, "no cuBLASLt: ", opened.error().message(),
                     ", which runs the plan's matrix products on the GPU (install the CUDA ",
                     CUBLAS_VER_MAJOR,
                     " toolkit's cuBLAS, or put the folder holding it on LD_LIBRARY_PATH)");
  void* handle = *opened;
  CublasLtApi api;
#define KILN_CUBLASLT_RESOLVE(name)                                      \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name)); \
  if (!api.name)                                                         \
    return MakeError(ErrorCode::kFailedPrecondition, kCublasLtLibrary,   \
                     " has no entry point " #name);
  KILN_CUBLASLT_ENTRY_POINTS(KILN_CUBLASLT_RESOLVE)
#undef KILN_CUBLASLT_RESOLVE
  return api;
}

}  // namespace

Result<const CublasLtApi*> LoadCublasLt() { return LoadOnce<CublasLtApi, Load>(); }

Status CheckCublas(const CublasLtApi& api, cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return OkStatus();
  return MakeError(
      status == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::kResourceExhausted : ErrorCode::kInternal,
      call, " failed: ", api.cublasLtGetStatusName(status), ": ",
      api.cublasLtGetStatusString(status));
}

}  // namespace kiln::cuda
