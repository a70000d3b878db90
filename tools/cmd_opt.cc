// kiln opt: runs graph passes (passes/pass_manager.h) on a model and writes the optimized graph.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "ir/file_util.h"
#include "ir/serialize.h"
#include "passes/pass_manager.h"
#include "tools/command.h"
#include "tools/lib/constant_evaluator.h"

namespace kiln::cli {
namespace {

std::string JoinNames(const std::vector<std::string>& names, const char* separator) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : separator) + n;
  return s;
}

// "cse,dce" -> {"cse", "dce"}; each name must be a known pass.
Result<std::vector<std::string>> ParsePassList(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (name.empty())
      return MakeError(ErrorCode::kInvalidArgument, "--passes '", text,
                       "' has an empty pass name (available: ", AvailablePassNames(), ")");
    KILN_RETURN_IF_ERROR(CreatePass(name).status());
    names.push_back(name);
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

}  // namespace

const char* OptUsage() {
  static const std::string usage = [] {
    std::string s =
        "usage: kiln opt MODEL [--passes NAME[,NAME]...] -o OUT\n\n"
        "Runs graph passes on MODEL (.kgraph, .kgraph.txt or .onnx), in the order given, and "
        "writes\n"
        "the result to OUT (.kgraph.txt: text form; .kgraph: binary). The graph is verified "
        "after\n"
        "every pass. Without --passes the default pipeline runs: " +
        JoinNames(DefaultPipeline(), ",") + ".\n\npasses:\n";
    for (const PassInfo& p : AvailablePasses()) {
      std::string name = p.name;
      name.resize(std::max<size_t>(name.size(), 14), ' ');
      s += "  " + name + " " + p.summary + "\n";
    }
    return s +
           "\nWith $KILN_DUMP_DIR set, the graph is also written there before the first pass\n"
           "(00-input.kgraph.txt) and after each pass (01-<pass>.kgraph.txt, ...). Example:\n"
           "  kiln opt model.onnx --passes=simplify,cse,dce -o model.kgraph.txt\n";
  }();
  return usage.c_str();
}

int RunOpt(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Option("passes").Option("out").Alias("-o", "out").Positional(1, 1);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  if (!flags.Has("out")) return UsageError(cmd, "missing -o OUT");
  std::string out = flags.Get("out");
  if (!EndsWith(out, ".kgraph") && !EndsWith(out, ".kgraph.txt"))
    return UsageError(cmd, "OUT '" + out + "' must end in .kgraph or .kgraph.txt");
  std::vector<std::string> passes = DefaultPipeline();
  if (flags.Has("passes")) {
    Result<std::vector<std::string>> names = ParsePassList(flags.Get("passes"));
    if (!names.ok()) return UsageError(cmd, names.error().message());
    passes = *names;
  }
  Result<Graph> graph = LoadModel(flags.positional()[0]);
  if (!graph.ok()) return Fail(cmd, graph.error());
  size_t nodes_before = graph->nodes().size();
  Result<std::vector<PassRun>> runs = RunPasses(*graph, passes, ReferencePassOptions());
  if (!runs.ok()) return Fail(cmd, runs.error());
  if (Status s = SaveGraph(*graph, out); !s.ok()) return Fail(cmd, s.error());
  for (const PassRun& run : *runs)
    std::printf("%s: %s (%zu nodes)\n", run.pass.c_str(), run.changed ? "changed" : "unchanged",
                run.nodes);
  std::printf("wrote %s (%zu -> %zu nodes)\n", out.c_str(), nodes_before, graph->nodes().size());
  return 0;
}

}  // namespace kiln::cli
