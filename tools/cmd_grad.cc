// kiln grad: writes d(OF)/d(X) for each --wrt X, computed by symbolic differentiation.
#include <cstdio>
#include <sstream>

#include "ir/io/npy.h"
#include "ir/ops/reduce.h"
#include "passes/autodiff.h"
#include "runtime/checkpoint.h"
#include "runtime/session.h"
#include "tools/command.h"

namespace kiln::cli {

// "a,b" "c" -> {a, b, c}
std::vector<std::string> SplitCommaLists(const std::vector<std::string>& lists) {
  std::vector<std::string> names;
  for (const std::string& list : lists) {
    std::stringstream ss(list);
    std::string name;
    while (std::getline(ss, name, ','))
      if (!name.empty()) names.push_back(name);
  }
  return names;
}

int RunGrad(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Option("of")
      .Repeated("wrt")
      .Repeated("input")
      .Option("out")
      .Option("checkpoint")
      .Option("backend")
      .Option("memory-limit")
      .Switch("grad-of-sum")
      .Positional(1, 1);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  Result<int64_t> memory_limit = ParseMemoryLimit(flags);
  if (!memory_limit.ok()) return UsageError(cmd, memory_limit.error().message());
  std::vector<std::string> wrt = SplitCommaLists(flags.GetAll("wrt"));
  if (!flags.Has("of") || wrt.empty() || !flags.Has("out"))
    return UsageError(cmd, "needs --of NAME, --wrt NAME[,NAME]... and --out DIR");
  Result<Graph> graph = LoadModel(flags.positional()[0]);
  if (!graph.ok()) return Fail(cmd, graph.error());
  Result<std::vector<std::pair<std::string, Tensor>>> inputs = LoadInputs(flags.GetAll("input"));
  if (!inputs.ok()) return Fail(cmd, inputs.error());

  Result<std::unique_ptr<GraphBuilder>> g = GraphBuilder::FromGraph(std::move(*graph));
  if (!g.ok()) return Fail(cmd, g.error());
  Result<Value> of = (*g)->Find(flags.Get("of"));
  if (!of.ok()) return Fail(cmd, of.error().WithContext("--of"));
  Value y = *of;
  if (y.rank() != 0) {
    if (!flags.On("grad-of-sum"))
      return Fail(cmd, MakeError(ErrorCode::kInvalidArgument, "--of '", flags.Get("of"),
                                 "' has shape ", y.shape().ToString(),
                                 ", not a scalar; pass --grad-of-sum to differentiate its sum"));
    y = Sum(y);
  }
  std::vector<Value> xs;
  for (const std::string& name : wrt) {
    Result<Value> x = (*g)->Find(name);
    if (!x.ok()) return Fail(cmd, x.error().WithContext("--wrt"));
    xs.push_back(*x);
  }
  Result<std::vector<Value>> grads = Gradients({y}, xs);
  if (!grads.ok()) return Fail(cmd, grads.error());
  Result<Graph> built = (*g)->Build();
  if (!built.ok()) return Fail(cmd, built.error());
  Session session(std::move(*built),
                  SessionOptions{.backend = flags.Get("backend", kDefaultBackend),
                                 .memory_limit = *memory_limit});
  if (flags.Has("checkpoint"))
    if (Status s = session.RestoreCheckpoint(flags.Get("checkpoint")); !s.ok())
      return Fail(cmd, s.error());
  FeedList feeds;
  for (auto& [name, t] : *inputs) feeds.emplace_back(name, std::move(t));
  std::vector<TensorName> fetches(grads->begin(), grads->end());
  Result<std::vector<Tensor>> values = session.Run(feeds, fetches);
  if (!values.ok()) return Fail(cmd, values.error());
  std::string dir = flags.Get("out");
  if (Status s = MakeDirectories(dir); !s.ok()) return Fail(cmd, s.error());
  for (size_t i = 0; i < wrt.size(); ++i) {
    std::string path = dir + "/grad_" + SafeFileName(wrt[i]) + ".npy";
    if (Status s = WriteNpy(path, (*values)[i]); !s.ok()) return Fail(cmd, s.error());
    std::printf("wrote %s (%s)\n", path.c_str(), (*values)[i].Summary(0).c_str());
  }
  return 0;
}

}  // namespace kiln::cli
