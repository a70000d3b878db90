// Loading plugins: shared libraries of user-defined ops (writing one: runtime/plugin_api.h).
//
//   kiln::Status s = kiln::LoadPlugin("libmy_ops.so");   // before building or loading graphs
//                                                         // that use its ops
// - The library is opened (dlopen, every symbol resolved now), its API version checked, its
//   registration run, and its ops checked and added to the op and kernel registries, all or none.
// - Loading the same file again does nothing; another file with a plugin name already loaded,
//   an op name already taken, a library that is not a plugin or fails to load: an error naming
//   the file and the reason.
// - Thread-safe. Plugins are never unloaded.
#pragma once

#include <string>
#include <vector>

#include "ir/status.h"

namespace kiln {

Status LoadPlugin(const std::string& path);

struct LoadedPlugin {
  std::string name;
  std::string path;  // as resolved (realpath)
  std::vector<std::string> ops;
};
std::vector<LoadedPlugin> LoadedPlugins();

}  // namespace kiln
