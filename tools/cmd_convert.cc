// kiln convert: rewrites a model between the binary (.kgraph) and text (.kgraph.txt) forms.
#include <cstdio>

#include "ir/serialize.h"
#include "tools/command.h"

namespace kiln::cli {

int RunConvert(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Positional(2, 2);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  Result<Graph> graph = LoadModel(flags.positional()[0]);
  if (!graph.ok()) return Fail(cmd, graph.error());
  const std::string& out = flags.positional()[1];
  if (Status s = SaveGraph(*graph, out); !s.ok()) return Fail(cmd, s.error());
  std::printf("wrote %s (%zu nodes)\n", out.c_str(), graph->nodes().size());
  return 0;
}

}  // namespace kiln::cli
