// kiln run: runs a model on input files and writes or prints the fetched tensors.
#include <cstdio>

#include "ir/file_util.h"
#include "runtime/session.h"
#include "tools/command.h"
#include "tools/lib/model_flags.h"
#include "tools/lib/session_flags.h"
#include "tools/run_module.h"

namespace kiln::cli {

int RunRun(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Repeated("input").Repeated("fetch").Option("out").Positional(1, 1);
  DeclareSessionFlags(flags);
  DeclareModelFlags(flags);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  if (EndsWith(flags.positional()[0], ".kmod")) {
    for (const char* flag : {"precision", "precision-op", "precision-node"})
      if (flags.Has(flag))
        return UsageError(cmd, std::string("--") + flag +
                                   " does not apply to a compiled module (.kmod): its plan and "
                                   "precision were fixed by kiln compile");
    for (const char* flag : {"check-numerics", "tf32", "inference"})
      if (flags.On(flag))
        return UsageError(
            cmd, std::string("--") + flag + " does not apply to a compiled module (.kmod)" +
                     (flag == std::string("tf32")        ? " (kiln compile --tf32 sets it)"
                      : flag == std::string("inference") ? " (kiln compile --inference sets it)"
                                                         : ""));
    return RunModuleFile(cmd, flags, flags.positional()[0]);
  }
  Result<SessionOptions> options = SessionOptionsFromFlags(flags);
  if (!options.ok()) return UsageError(cmd, options.error().message());

  Result<Graph> graph = LoadModelAsFlagsSay(flags, flags.positional()[0]);
  if (!graph.ok()) return Fail(cmd, graph.error());
  Result<std::vector<std::pair<std::string, Tensor>>> inputs = LoadInputs(flags.GetAll("input"));
  if (!inputs.ok()) return Fail(cmd, inputs.error());

  std::vector<std::string> fetch_names = flags.GetAll("fetch");
  if (fetch_names.empty())
    for (const GraphOutput& out : graph->outputs()) fetch_names.push_back(out.name);
  if (fetch_names.empty())
    return Fail(cmd,
                MakeError(ErrorCode::kInvalidArgument,
                          "the model declares no outputs; name what to compute with --fetch NAME"));

  Session session(std::move(*graph), *options);
  FeedList feeds;
  for (auto& [name, tensor] : *inputs) feeds.emplace_back(name, std::move(tensor));
  std::vector<TensorName> fetches(fetch_names.begin(), fetch_names.end());
  Result<std::vector<Tensor>> outputs = session.Run(feeds, fetches);
  if (!outputs.ok()) return Fail(cmd, outputs.error());

  return EmitOutputs(cmd, flags, fetch_names, *outputs);
}

}  // namespace kiln::cli
