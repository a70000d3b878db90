#include "compiler/cubin.h"

#include <dlfcn.h>
#include <nvJitLink.h>

#include <vector>

#include "runtime/shared_library.h"

namespace kiln::compiler {
namespace {

// The library of the versioned symbols below (CUDA 13's nvJitLink.h).
constexpr char kLibrary[] = "libnvJitLink.so.13";

// X(function, symbol): nvJitLink.h's inline functions call versioned symbols; kiln resolves those.
#define KILN_NVJITLINK_ENTRY_POINTS(X)                      \
  X(Create, __nvJitLinkCreate_13_0)                         \
  X(Destroy, __nvJitLinkDestroy_13_0)                       \
  X(AddData, __nvJitLinkAddData_13_0)                       \
  X(Complete, __nvJitLinkComplete_13_0)                     \
  X(GetLinkedCubinSize, __nvJitLinkGetLinkedCubinSize_13_0) \
  X(GetLinkedCubin, __nvJitLinkGetLinkedCubin_13_0)         \
  X(GetErrorLogSize, __nvJitLinkGetErrorLogSize_13_0)       \
  X(GetErrorLog, __nvJitLinkGetErrorLog_13_0)

struct NvJitLinkApi {
#define KILN_NVJITLINK_FIELD(field, symbol) decltype(&::symbol) field = nullptr;
  KILN_NVJITLINK_ENTRY_POINTS(KILN_NVJITLINK_FIELD)
#undef KILN_NVJITLINK_FIELD
};

Result<NvJitLinkApi> Load() {
  Result<void*> opened = OpenSharedLibrary(kLibrary, kCudaToolkitLibraries);
  if (!opened.ok())
    return opened.error().WithContext("the CUDA toolkit's assembler of PTX into cubins");
  void* handle = *opened;
  NvJitLinkApi api;
#define KILN_NVJITLINK_RESOLVE(field, symbol)                                \
  api.field = reinterpret_cast<decltype(api.field)>(dlsym(handle, #symbol)); \
  if (!api.field)                                                            \
    return MakeError(ErrorCode::kFailedPrecondition, kLibrary, " has no entry point " #symbol);
  KILN_NVJITLINK_ENTRY_POINTS(KILN_NVJITLINK_RESOLVE)
#undef KILN_NVJITLINK_RESOLVE
  return api;
}

}  // namespace

Result<std::string> AssembleCubin(const std::string& ptx, int sm) {
  KILN_ASSIGN_OR_RETURN(const NvJitLinkApi* api, (LoadOnce<NvJitLinkApi, Load>()));
  const std::string arch = "-arch=sm_" + std::to_string(sm);
  const char* options[] = {arch.c_str(), "-O3"};
  nvJitLinkHandle handle = nullptr;
  nvJitLinkResult r = api->Create(&handle, 2, options);
  if (r != NVJITLINK_SUCCESS)
    return MakeError(ErrorCode::kInternal, "nvJitLinkCreate(", arch, ") failed with ",
                     static_cast<int>(r));
  r = api->AddData(handle, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), "kiln_kernels.ptx");
  if (r == NVJITLINK_SUCCESS) r = api->Complete(handle);
  std::string cubin;
  if (r == NVJITLINK_SUCCESS) {
    size_t size = 0;
    r = api->GetLinkedCubinSize(handle, &size);
    cubin.resize(size);
    if (r == NVJITLINK_SUCCESS) r = api->GetLinkedCubin(handle, cubin.data());
  }
  if (r != NVJITLINK_SUCCESS) {
    size_t size = 0;
    std::vector<char> log(1, '\0');
    if (api->GetErrorLogSize(handle, &size) == NVJITLINK_SUCCESS && size > 0) {
      log.assign(size + 1, '\0');
      api->GetErrorLog(handle, log.data());
    }
    api->Destroy(&handle);
    return MakeError(ErrorCode::kInternal, "nvJitLink could not assemble the PTX for sm_", sm,
                     " (result ", static_cast<int>(r), "): ", log.data());
  }
  api->Destroy(&handle);
  return cubin;
}

}  // namespace kiln::compiler
