#include "tools/lib/session_flags.h"

#include "ir/op_registry.h"
#include "tools/command.h"

namespace kiln::cli {

void DeclarePrecisionFlags(Flags& flags) {
  flags.Option("precision").Repeated("precision-op").Repeated("precision-node").Switch("tf32");
}

void DeclareSessionFlags(Flags& flags) {
  DeclarePrecisionFlags(flags);
  flags.Option("backend").Option("threads").Option("memory-limit").Switch("check-numerics");
}

Result<PrecisionPolicy> PrecisionFromFlags(const Flags& flags) {
  KILN_ASSIGN_OR_RETURN(DType compute, ParsePrecision(flags.Get("precision", "fp32")));
  return PrecisionListsFromFlags(flags, compute);
}

Result<PrecisionPolicy> PrecisionListsFromFlags(const Flags& flags, DType compute) {
  PrecisionPolicy policy;
  policy.compute = compute;
  policy.tf32 = flags.On("tf32");
  auto parse = [&](const char* flag, std::map<std::string, PrecisionList>& into) -> Status {
    for (const std::string& spec : flags.GetAll(flag)) {
      KILN_ASSIGN_OR_RETURN(auto name_list, SplitNameValue(flag, spec));
      std::optional<PrecisionList> list = PrecisionListFromName(name_list.second);
      if (!list)
        return MakeError(ErrorCode::kInvalidArgument, "--", flag, " '", spec, "': '",
                         name_list.second, "' is not a list (always16, follow, keep32, neutral)");
      into[name_list.first] = *list;
    }
    return OkStatus();
  };
  KILN_RETURN_IF_ERROR(parse("precision-op", policy.op_lists));
  KILN_RETURN_IF_ERROR(parse("precision-node", policy.node_lists));
  for (const auto& [op, list] : policy.op_lists)
    if (!OpRegistry::Global().Find(op))
      return MakeError(ErrorCode::kInvalidArgument, "--precision-op: kiln has no op '", op, "'");
  if (!policy.enabled() && (!policy.op_lists.empty() || !policy.node_lists.empty()))
    return MakeError(ErrorCode::kInvalidArgument,
                     "--precision-op and --precision-node need --precision bf16 or fp16");
  return policy;
}

Result<SessionOptions> SessionOptionsFromFlags(const Flags& flags) {
  SessionOptions options;
  options.backend = flags.Get("backend", kDefaultBackend);
  KILN_ASSIGN_OR_RETURN(int64_t threads, ParseCount("threads", flags.Get("threads", "0"), 0));
  options.threads = static_cast<int>(threads);
  KILN_ASSIGN_OR_RETURN(options.precision, PrecisionFromFlags(flags));
  options.check_numerics = flags.On("check-numerics");
  KILN_ASSIGN_OR_RETURN(options.memory_limit, ParseMemoryLimit(flags));
  return options;
}

}  // namespace kiln::cli
