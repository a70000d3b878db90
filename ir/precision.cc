#include "ir/precision.h"

#include "ir/op_registry.h"

namespace kiln {

std::string_view PrecisionListName(PrecisionList list) {
  switch (list) {
    case PrecisionList::kAlways16:
      return "always16";
    case PrecisionList::kFollow:
      return "follow";
    case PrecisionList::kKeep32:
      return "keep32";
    case PrecisionList::kNeutral:
      return "neutral";
  }
  return "?";
}

std::optional<PrecisionList> PrecisionListFromName(std::string_view name) {
  for (PrecisionList list : {PrecisionList::kAlways16, PrecisionList::kFollow,
                             PrecisionList::kKeep32, PrecisionList::kNeutral})
    if (PrecisionListName(list) == name) return list;
  return std::nullopt;
}

std::map<std::string, PrecisionList> DefaultPrecisionLists() {
  std::map<std::string, PrecisionList> lists;
  for (const OpDef* def : OpRegistry::Global().All())
    if (def->precision) lists[def->name] = *def->precision;
  return lists;
}

std::optional<PrecisionList> PrecisionListOf(const PrecisionPolicy& policy, const std::string& op) {
  if (auto it = policy.op_lists.find(op); it != policy.op_lists.end()) return it->second;
  const OpDef* def = OpRegistry::Global().Find(op);
  return def ? def->precision : std::nullopt;
}

Result<DType> ParsePrecision(std::string_view name) {
  if (name == "fp32" || name == "f32") return f32;
  if (name == "bf16") return bf16;
  if (name == "fp16" || name == "f16") return f16;
  return MakeError(ErrorCode::kInvalidArgument, "precision '", name,
                   "': expected fp32, bf16 or fp16");
}

std::string_view PrecisionName(DType compute) {
  return compute == bf16 ? "bf16" : compute == f16 ? "fp16" : "fp32";
}

}  // namespace kiln
