#include "runtime/shared_library.h"

#include <dlfcn.h>

namespace kiln {

Result<void*> OpenSharedLibrary(const std::string& name, const std::string& fallback_dir) {
  if (void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  const char* why = dlerror();
  const std::string reason = why ? why : "unknown reason";
  if (!fallback_dir.empty())
    if (void* handle = dlopen((fallback_dir + name).c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  return MakeError(ErrorCode::kFailedPrecondition, "cannot load ", name, " (", reason, ")");
}

}  // namespace kiln
