// kiln run: runs a model on input files and writes or prints the fetched tensors.
#include <cstdio>

#include "ir/io/npy.h"
#include "runtime/session.h"
#include "tools/command.h"

namespace kiln::cli {

int RunRun(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Repeated("input").Repeated("fetch").Option("out").Option("backend").Positional(1, 1);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;

  Result<Graph> graph = LoadModel(flags.positional()[0]);
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

  Session session(std::move(*graph),
                  SessionOptions{.backend = flags.Get("backend", kDefaultBackend)});
  FeedList feeds;
  for (auto& [name, tensor] : *inputs) feeds.emplace_back(name, std::move(tensor));
  std::vector<TensorName> fetches(fetch_names.begin(), fetch_names.end());
  Result<std::vector<Tensor>> outputs = session.Run(feeds, fetches);
  if (!outputs.ok()) return Fail(cmd, outputs.error());

  if (flags.Has("out")) {
    std::string dir = flags.Get("out");
    if (Status s = MakeDirectories(dir); !s.ok()) return Fail(cmd, s.error());
    for (size_t i = 0; i < fetch_names.size(); ++i) {
      std::string path = dir + "/" + SafeFileName(fetch_names[i]) + ".npy";
      if (Status s = WriteNpy(path, (*outputs)[i]); !s.ok()) return Fail(cmd, s.error());
      std::printf("wrote %s (%s)\n", path.c_str(), (*outputs)[i].Summary(0).c_str());
    }
  } else {
    for (size_t i = 0; i < fetch_names.size(); ++i)
      std::printf("%s: %s\n", fetch_names[i].c_str(), (*outputs)[i].Summary(8).c_str());
  }
  return 0;
}

}  // namespace kiln::cli
