#include "ir/plugin_uses.h"

#include <sstream>

#include "ir/op_registry.h"

namespace kiln {

PluginUses PluginUsesOf(const std::vector<std::string>& ops) {
  PluginUses uses;
  for (const std::string& op : ops) {
    const OpDef* def = OpRegistry::Global().Find(op);
    if (def && !def->plugin.empty()) uses[def->plugin].insert(op);
  }
  return uses;
}

void WritePluginUses(const PluginUses& uses,
                     google::protobuf::RepeatedPtrField<proto::PluginUse>* out) {
  for (const auto& [plugin, ops] : uses) {
    proto::PluginUse* use = out->Add();
    use->set_name(plugin);
    for (const std::string& op : ops) use->add_ops(op);
  }
}

PluginUses ReadPluginUses(const google::protobuf::RepeatedPtrField<proto::PluginUse>& in) {
  PluginUses uses;
  for (const proto::PluginUse& use : in)
    uses[use.name()].insert(use.ops().begin(), use.ops().end());
  return uses;
}

Status CheckPluginsLoaded(const PluginUses& uses, const std::string& what) {
  for (const auto& [plugin, ops] : uses) {
    std::vector<std::string> missing;
    for (const std::string& op : ops) {
      const OpDef* def = OpRegistry::Global().Find(op);
      if (!def || def->plugin != plugin) missing.push_back(op);
    }
    if (missing.empty()) continue;
    std::ostringstream s;
    s << what << " uses op" << (missing.size() == 1 ? " " : "s ");
    for (size_t i = 0; i < missing.size(); ++i) s << (i ? ", " : "") << "'" << missing[i] << "'";
    s << " of plugin '" << plugin
      << "', which is not loaded (load its shared library first: kiln --plugin PATH, kilnrt "
         "--plugin PATH, SessionOptions::plugins or kiln::LoadPlugin)";
    return MakeError(ErrorCode::kFailedPrecondition, s.str());
  }
  return OkStatus();
}

}  // namespace kiln
