// kiln import-onnx: converts an ONNX model to a kiln graph file (see ir/onnx/import.h).
#include <cstdio>

#include "ir/onnx/import.h"
#include "ir/serialize.h"
#include "tools/command.h"

namespace kiln::cli {

int RunImportOnnx(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Option("out").Alias("-o", "out").Switch("constants").Positional(1, 1);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  if (!flags.Has("out")) return UsageError(cmd, "-o OUT is required");
  OnnxImportOptions options;
  options.initializers_as_constants = flags.On("constants");
  Result<Graph> graph = ImportOnnx(flags.positional()[0], options);
  if (!graph.ok()) return Fail(cmd, graph.error());
  const std::string out = flags.Get("out");
  if (Status s = SaveGraph(*graph, out); !s.ok()) return Fail(cmd, s.error());
  int variables = 0;
  for (const Node& n : graph->nodes()) variables += n.op == "Variable";
  std::printf("wrote %s (%zu nodes, %zu inputs, %zu outputs, %d variables)\n", out.c_str(),
              graph->nodes().size(), graph->inputs().size(), graph->outputs().size(), variables);
  return 0;
}

}  // namespace kiln::cli
