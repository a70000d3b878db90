#include "runtime/plugins.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <exception>
#include <map>
#include <mutex>

#include "runtime/plugin_api.h"

namespace kiln {
namespace {

std::mutex& PluginsMutex() {
  static std::mutex mu;
  return mu;
}

// Loaded plugins by name.
std::map<std::string, LoadedPlugin>& Loaded() {
  static auto* loaded = new std::map<std::string, LoadedPlugin>();
  return *loaded;
}

// Runs the plugin's registration; a C++ exception escaping it becomes an error.
Status RunRegistration(void (*register_fn)(void*), PluginRegistrar& registrar,
                       const std::string& what) {
  try {
    register_fn(&registrar);
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInvalidArgument, what, ": its registration threw: ", e.what());
  } catch (...) {
    return MakeError(ErrorCode::kInvalidArgument, what, ": its registration threw");
  }
  return OkStatus();
}

}  // namespace

Status LoadPlugin(const std::string& path) {
  std::lock_guard lock(PluginsMutex());
  const std::string what = "plugin '" + path + "'";
  char resolved[PATH_MAX];
  if (!realpath(path.c_str(), resolved))
    return MakeError(ErrorCode::kNotFound, what, ": no such file");
  const std::string real = resolved;
  for (const auto& [name, plugin] : Loaded())
    if (plugin.path == real) return OkStatus();

  void* handle = dlopen(real.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return MakeError(ErrorCode::kInvalidArgument, what,
                     ": cannot load it: ", why ? why : "unknown error");
  }
  auto fail = [&](ErrorCode code, const std::string& why) {
    dlclose(handle);
    return MakeError(code, what, ": ", why);
  };
  auto version_fn = reinterpret_cast<int (*)()>(dlsym(handle, "kiln_plugin_api_version"));
  auto name_fn = reinterpret_cast<const char* (*)()>(dlsym(handle, "kiln_plugin_name"));
  auto register_fn = reinterpret_cast<void (*)(void*)>(dlsym(handle, "kiln_plugin_register"));
  if (!version_fn || !name_fn || !register_fn)
    return fail(ErrorCode::kInvalidArgument,
                "not a kiln plugin (it defines no kiln_plugin_register: write it with KILN_PLUGIN "
                "from runtime/plugin_api.h)");
  if (version_fn() != kPluginApiVersion)
    return fail(ErrorCode::kFailedPrecondition,
                "built for plugin API version " + std::to_string(version_fn()) +
                    ", this kiln has version " + std::to_string(kPluginApiVersion) +
                    ": rebuild it against this kiln");
  const std::string name = name_fn() ? name_fn() : "";
  if (name.empty()) return fail(ErrorCode::kInvalidArgument, "the plugin has no name");
  if (auto other = Loaded().find(name); other != Loaded().end())
    return fail(
        ErrorCode::kAlreadyExists,
        "a plugin named '" + name + "' is already loaded from '" + other->second.path + "'");

  // What the registration made holds the library's code (std::function targets): it is
  // destroyed before the library is closed.
  PluginRegistrar registrar(name);
  auto refuse = [&](Error error) {
    registrar.entries().clear();
    dlclose(handle);
    return error;
  };
  if (Status s = RunRegistration(register_fn, registrar, what); !s.ok()) return refuse(s.error());
  if (registrar.entries().empty())
    return refuse(MakeError(ErrorCode::kInvalidArgument, what, ": registers no ops"));
  std::vector<OpDef> defs;
  LoadedPlugin loaded{name, real, {}};
  for (PluginRegistrar::Entry& e : registrar.entries()) {
    if (!e.kernel)
      return refuse(MakeError(ErrorCode::kInvalidArgument, what, ": op '", e.def.name,
                              "' has no CPU kernel"));
    e.def.plugin = name;
    loaded.ops.push_back(e.def.name);
    defs.push_back(e.def);
  }
  if (Status s = OpRegistry::RegisterPluginOps(std::move(defs)); !s.ok())
    return refuse(s.error().WithContext(what));
  // The ops are registered now and their code stays: the library is never closed from here on.
  for (PluginRegistrar::Entry& e : registrar.entries()) {
    Status s = reference::KernelRegistry::RegisterPluginKernel(e.def.name, std::move(e.kernel));
    if (!s.ok()) return s.error().WithContext(what);
  }
  Loaded().emplace(name, std::move(loaded));
  return OkStatus();
}

std::vector<LoadedPlugin> LoadedPlugins() {
  std::lock_guard lock(PluginsMutex());
  std::vector<LoadedPlugin> all;
  for (const auto& [name, plugin] : Loaded()) all.push_back(plugin);
  return all;
}

}  // namespace kiln
