// kiln freeze: variables -> constants from a checkpoint, pruned to what the fetches need.
#include <cstdio>

#include "ir/serialize.h"
#include "passes/freeze.h"
#include "runtime/checkpoint.h"
#include "tools/command.h"

namespace kiln::cli {

int RunFreeze(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Option("checkpoint").Repeated("fetch").Option("out").Alias("-o", "out").Positional(1, 1);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  if (!flags.Has("checkpoint")) return UsageError(cmd, "missing --checkpoint CKPT");
  if (!flags.Has("out")) return UsageError(cmd, "missing -o OUT");
  Result<Graph> graph = LoadModel(flags.positional()[0]);
  if (!graph.ok()) return Fail(cmd, graph.error());
  Result<std::map<std::string, Tensor>> values = ReadCheckpoint(flags.Get("checkpoint"));
  if (!values.ok()) return Fail(cmd, values.error());
  std::vector<std::string> fetches = flags.GetAll("fetch");
  if (fetches.empty())
    for (const GraphOutput& out : graph->outputs()) fetches.push_back(out.name);
  Result<Graph> frozen = Freeze(*graph, *values, fetches);
  if (!frozen.ok()) return Fail(cmd, frozen.error());
  if (Status s = SaveGraph(*frozen, flags.Get("out")); !s.ok()) return Fail(cmd, s.error());
  std::printf("wrote %s (%zu nodes, %zu outputs)\n", flags.Get("out").c_str(),
              frozen->nodes().size(), frozen->outputs().size());
  return 0;
}

}  // namespace kiln::cli
