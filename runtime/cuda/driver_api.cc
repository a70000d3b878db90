#include "runtime/cuda/driver_api.h"

#include <dlfcn.h>

#include "runtime/shared_library.h"

namespace kiln::cuda {
namespace {

constexpr char kDriverLibrary[] = "libcuda.so.1";

Result<DriverApi> Load() {
  Result<void*> opened = OpenSharedLibrary(kDriverLibrary, "");
  if (!opened.ok())
    return MakeError(ErrorCode::kFailedPrecondition, "no CUDA driver: ", opened.error().message(),
                     "; backend \"cuda\" needs an NVIDIA GPU and its driver (\"cuda-sim\" runs "
                     "the same plan on a simulated device)");
  void* handle = *opened;
  // cuda.h maps cuGetProcAddress to its _v2 symbol (the one with a status argument).
  auto get_proc =
      reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle, "cuGetProcAddress_v2"));
  if (!get_proc)
    return MakeError(ErrorCode::kFailedPrecondition, kDriverLibrary,
                     " has no cuGetProcAddress_v2: the CUDA driver is older than 12.0");
  DriverApi api;
#define KILN_CUDA_DRIVER_RESOLVE(name, type)                                                 \
  {                                                                                          \
    void* fn = nullptr;                                                                      \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;             \
    CUresult r = get_proc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found);    \
    if (r != CUDA_SUCCESS || !fn || found != CU_GET_PROC_ADDRESS_SUCCESS)                    \
      return MakeError(ErrorCode::kFailedPrecondition, "the CUDA driver (", kDriverLibrary,  \
                       ") has no entry point " #name " for CUDA ", CUDA_VERSION / 1000, ".", \
                       CUDA_VERSION % 1000 / 10, " (CUresult ", static_cast<int>(r),         \
                       ", query result ", static_cast<int>(found), ")");                     \
    api.name = reinterpret_cast<type>(fn);                                                   \
  }
  KILN_CUDA_DRIVER_ENTRY_POINTS(KILN_CUDA_DRIVER_RESOLVE)
#undef KILN_CUDA_DRIVER_RESOLVE
  return api;
}

}  // namespace

Result<const DriverApi*> LoadDriver() { return LoadOnce<DriverApi, Load>(); }

Status CheckCuda(const DriverApi& api, CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return OkStatus();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(result, &text);
  return MakeError(
      result == CUDA_ERROR_OUT_OF_MEMORY ? ErrorCode::kResourceExhausted : ErrorCode::kInternal,
      call, " failed: ", name ? name : "CUDA error", " (", static_cast<int>(result),
      "): ", text ? text : "no description");
}

}  // namespace kiln::cuda
