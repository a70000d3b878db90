// Which plugins' ops a graph or a module uses (runtime/plugins.h loads plugins). Files record it
// (PluginUse in proto/kiln.proto) so that a reader without a plugin refuses the file naming the
// plugin and how to load it, instead of "unknown op".
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/status.h"
#include "proto/kiln.pb.h"

namespace kiln {

// plugin name -> the ops of it used.
using PluginUses = std::map<std::string, std::set<std::string>>;

// The plugins (as the registry knows them now) of the ops in `ops`; kiln's own ops and unknown
// ops are left out.
PluginUses PluginUsesOf(const std::vector<std::string>& ops);
void WritePluginUses(const PluginUses& uses,
                     google::protobuf::RepeatedPtrField<proto::PluginUse>* out);
PluginUses ReadPluginUses(const google::protobuf::RepeatedPtrField<proto::PluginUse>& in);
// OK when every op in `uses` is registered by its plugin; otherwise an error naming `what` (a
// file), the plugin, the ops it lacks and how to load a plugin.
Status CheckPluginsLoaded(const PluginUses& uses, const std::string& what);

}  // namespace kiln
