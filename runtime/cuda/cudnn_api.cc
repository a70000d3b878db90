#include "runtime/cuda/cudnn_api.h"

#include <dlfcn.h>

#include "runtime/shared_library.h"

namespace kiln::cuda {
namespace {

#define KILN_STRINGIFY_INNER(x) #x
#define KILN_STRINGIFY(x) KILN_STRINGIFY_INNER(x)
constexpr char kCudnnLibrary[] = "libcudnn.so." KILN_STRINGIFY(CUDNN_MAJOR);

Result<CudnnApi> Load() {
  Result<void*> opened = OpenSharedLibrary(kCudnnLibrary, kCudaToolkitLibraries);
  if (!opened.ok())
    return MakeError(ErrorCode::kFailedPrecondition, "no cuDNN: ", opened.error().message(),
                     ", which runs the plan's convolutions on the GPU (install cuDNN ", CUDNN_MAJOR,
                     ", or put the folder holding it on LD_LIBRARY_PATH)");
  void* handle = *opened;
  CudnnApi api;
#define KILN_CUDNN_RESOLVE(name)                                         \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name)); \
  if (!api.name)                                                         \
    return MakeError(ErrorCode::kFailedPrecondition, kCudnnLibrary, " has no entry point " #name);
  KILN_CUDNN_ENTRY_POINTS(KILN_CUDNN_RESOLVE)
#undef KILN_CUDNN_RESOLVE
  api.version = api.cudnnGetVersion();
  static_assert(CUDNN_MAJOR == kCudnnApiVersion / 10000 && CUDNN_VERSION >= kCudnnApiVersion);
  if (!CudnnVersionUsable(kCudnnApiVersion, api.version))
    return MakeError(ErrorCode::kFailedPrecondition, kCudnnLibrary, " is cuDNN ",
                     CudnnVersionString(api.version), ", and kiln's calls need ",
                     CudnnVersionString(kCudnnApiVersion), " or a newer ", CUDNN_MAJOR, ".x");
  return api;
}

}  // namespace

bool CudnnVersionUsable(size_t built, size_t found) {
  return found / 10000 == built / 10000 && found % 10000 / 100 >= built % 10000 / 100;
}

std::string CudnnVersionString(size_t version) {
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

Result<const CudnnApi*> LoadCudnn() { return LoadOnce<CudnnApi, Load>(); }

Status CheckCudnn(const CudnnApi& api, cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return OkStatus();
  char last[512] = {};
  api.cudnnGetLastErrorString(last, sizeof(last) - 1);
  ErrorCode code = ErrorCode::kInternal;
  if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    code = ErrorCode::kResourceExhausted;
  if (status / 1000 == CUDNN_STATUS_NOT_SUPPORTED / 1000) code = ErrorCode::kUnimplemented;
  return MakeError(code, call, " failed: ", api.cudnnGetErrorString(status),
                   last[0] ? std::string(" (") + last + ")" : std::string());
}

}  // namespace kiln::cuda
