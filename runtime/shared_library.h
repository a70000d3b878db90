// Shared libraries kiln opens at run time instead of linking (the CUDA driver, cuBLASLt, cuDNN,
// nvJitLink), so that every kiln program starts where they are missing and only the feature that
// needs one fails, with one line naming it.
//
// Contract: OpenSharedLibrary dlopens `name` (RTLD_NOW | RTLD_LOCAL) from the loader's search path,
// else from `fallback_dir` (a folder ending in '/', or ""); on failure it returns
// kFailedPrecondition "cannot load NAME (the loader's reason)". LoadOnce<Api, Load>() calls Load
// once per process, from any thread, and returns its table (or its error) on every call.
#pragma once

#include <mutex>
#include <string>

#include "ir/status.h"

namespace kiln {

// Where the CUDA toolkit puts its libraries when its lib64 is not on the loader's path.
inline constexpr char kCudaToolkitLibraries[] = "/usr/local/cuda/lib64/";

Result<void*> OpenSharedLibrary(const std::string& name, const std::string& fallback_dir);

template <typename Api, Result<Api> (*Load)()>
Result<const Api*> LoadOnce() {
  static std::once_flag once;
  static Result<Api>* loaded = nullptr;
  std::call_once(once, [] { loaded = new Result<Api>(Load()); });  // kept for the process
  if (!loaded->ok()) return loaded->error();
  return &**loaded;
}

}  // namespace kiln
