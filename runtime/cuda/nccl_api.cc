#include "runtime/cuda/nccl_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "runtime/shared_library.h"

namespace kiln::cuda {
namespace {

constexpr char kNcclLibrary[] = "libnccl.so.2";
constexpr int kFirstWithPreMulSum = 21100;  // NCCL 2.11

Result<NcclApi> Load() {
  const char* chosen = std::getenv("KILN_NCCL_LIBRARY");
  const std::string library = chosen && *chosen ? chosen : kNcclLibrary;
  Result<void*> opened = OpenSharedLibrary(library, chosen && *chosen ? "" : kCudaToolkitLibraries);
  if (!opened.ok())
    return MakeError(ErrorCode::kFailedPrecondition, "no NCCL: ", opened.error().message(),
                     ", which all-reduces a data-parallel plan's gradients on the GPU (install "
                     "NCCL 2, put the folder holding it on LD_LIBRARY_PATH, or name the library "
                     "in KILN_NCCL_LIBRARY)");
  void* handle = *opened;
  NcclApi api;
#define KILN_NCCL_RESOLVE(name)                                                             \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));                    \
  if (!api.name)                                                                            \
    return MakeError(ErrorCode::kFailedPrecondition, library, " has no entry point " #name, \
                     " (kiln needs NCCL 2.11 or newer)");
  KILN_NCCL_ENTRY_POINTS(KILN_NCCL_RESOLVE)
#undef KILN_NCCL_RESOLVE
  if (api.ncclGetVersion(&api.version) != ncclSuccess || api.version < kFirstWithPreMulSum)
    return MakeError(ErrorCode::kFailedPrecondition, library, " is NCCL ", api.version / 10000, ".",
                     api.version / 100 % 100, "; kiln needs 2.11 or newer");
  return api;
}

}  // namespace

Result<const NcclApi*> LoadNccl() { return LoadOnce<NcclApi, Load>(); }

Status CheckNccl(const NcclApi& api, ncclResult_t result, const char* call) {
  if (result == ncclSuccess) return OkStatus();
  return MakeError(ErrorCode::kInternal, call, " failed: ", api.ncclGetErrorString(result));
}

}  // namespace kiln::cuda
