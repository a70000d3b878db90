#include "tools/inspect_precision.h"

#include <cstdio>

#include "passes/mixed_precision.h"
#include "tools/lib/session_flags.h"

namespace kiln::cli {

int PrintPrecisionReport(const Command& cmd, const Graph& graph, const Flags& flags) {
  Result<PrecisionPolicy> policy = PrecisionListsFromFlags(flags, bf16);
  if (!policy.ok()) return UsageError(cmd, policy.error().message());

  std::printf("\nprecision lists (an op in none stays float32; * = changed by --precision-op):\n");
  std::map<PrecisionList, std::vector<std::string>> by_list;
  std::map<std::string, PrecisionList> lists = DefaultPrecisionLists();
  for (const auto& [op, list] : policy->op_lists) lists[op] = list;
  for (const auto& [op, list] : lists)
    by_list[list].push_back(op + (policy->op_lists.count(op) ? "*" : ""));
  for (PrecisionList list : {PrecisionList::kAlways16, PrecisionList::kFollow,
                             PrecisionList::kKeep32, PrecisionList::kNeutral}) {
    std::string line = "  " + std::string(PrecisionListName(list)) + ":";
    for (const std::string& op : by_list[list]) {
      if (line.size() + op.size() > 98) {
        std::printf("%s\n", line.c_str());
        line = "           ";
      }
      line += " " + op;
    }
    std::printf("%s\n", line.c_str());
  }

  Result<std::vector<PrecisionDecision>> decisions = DecidePrecision(graph, *policy);
  if (!decisions.ok()) return Fail(cmd, decisions.error());
  std::printf("\nprecision decisions (bf16):\n");
  int in16 = 0;
  for (const PrecisionDecision& d : *decisions) {
    in16 += d.in16;
    std::printf("  %-6s %-28s %s\n", d.in16 ? "bf16" : "f32", (d.op + " '" + d.node + "'").c_str(),
                d.why.c_str());
  }
  Graph rewritten = graph;
  Result<bool> changed = MixedPrecision(*policy).Run(rewritten);
  if (!changed.ok()) return Fail(cmd, changed.error());
  std::printf("bf16: %d nodes, float32: %zu nodes, casts inserted: %zu\n", in16,
              decisions->size() - in16, rewritten.nodes().size() - graph.nodes().size());
  return 0;
}

}  // namespace kiln::cli
