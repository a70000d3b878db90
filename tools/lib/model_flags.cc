#include "tools/lib/model_flags.h"

#include "passes/freeze.h"
#include "tools/command.h"

namespace kiln::cli {

void DeclareModelFlags(Flags& flags) { flags.Switch("inference"); }

Result<Graph> LoadModelAsFlagsSay(const Flags& flags, const std::string& path) {
  KILN_ASSIGN_OR_RETURN(Graph graph, LoadModel(path));
  if (!flags.On("inference")) return graph;
  return ForInference(graph);
}

}  // namespace kiln::cli
