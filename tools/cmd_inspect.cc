// kiln inspect: what a model contains: ops by count, inputs and outputs with their types,
// parameters and their bytes, and a FLOP estimate.
#include <algorithm>
#include <cstdio>

#include "ir/graph_stats.h"
#include "runtime/memory_budget.h"
#include "tools/command.h"
#include "tools/inspect_plan.h"
#include "tools/inspect_precision.h"
#include "tools/lib/distributed_training.h"
#include "tools/lib/model_flags.h"
#include "tools/lib/training_graph.h"

namespace kiln::cli {
namespace {

std::string HumanCount(double n) {
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (n >= 1000 && u < 5) {
    n /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f%s", n, units[u]);
  return buf;
}

}  // namespace

int RunInspect(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Switch("fusion").Switch("memory").Switch("placement").Option("backend").Option("cost");
  flags.Option("memory-limit");
  flags.Repeated("input").Repeated("fetch").Repeated("target");
  flags.Switch("precision").Repeated("precision-op").Repeated("precision-node").Switch("tf32");
  flags.Switch("train").Option("loss").Switch("data-parallel");
  DeclareOptimizerFlags(flags);
  DeclareDataParallelFlags(flags);
  flags.Positional(1, 1);
  DeclareModelFlags(flags);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  if (flags.Has("memory-limit") && !flags.On("memory"))
    return UsageError(cmd,
                      "--memory-limit is the budget --memory prints the plan against: add "
                      "--memory");
  Result<std::optional<optim::Optimizer>> optimizer = OptimizerFromFlags(flags);
  if (!optimizer.ok()) return UsageError(cmd, optimizer.error().message());
  if (flags.On("data-parallel") && !optimizer->has_value())
    return UsageError(cmd, "--data-parallel describes a data-parallel training step: add --train");
  Result<DataParallelFlags> data_parallel = DataParallelFromFlags(flags, flags.On("data-parallel"));
  if (!data_parallel.ok()) return UsageError(cmd, data_parallel.error().message());
  Result<Graph> graph = LoadModelAsFlagsSay(flags, flags.positional()[0]);
  if (!graph.ok()) return Fail(cmd, graph.error());
  if (optimizer->has_value()) {
    if (flags.On("inference"))
      return UsageError(cmd,
                        "--inference and --train: a plan is either a training step or inference");
    if (!flags.On("fusion") && !flags.On("memory") && !flags.On("placement") && !flags.Has("cost"))
      return UsageError(cmd,
                        "--train describes a training step's plan: add --fusion, --memory, "
                        "--placement or --cost");
    if (flags.Has("fetch") || flags.Has("target"))
      return UsageError(cmd, "--train plans the loss and the update; drop --fetch/--target");
    if (flags.On("data-parallel"))
      if (Status s = MakeDataParallel(*data_parallel, *graph, **optimizer); !s.ok())
        return Fail(cmd, s.error());
    Result<TrainingGraph> training =
        AddOptimizer(std::move(*graph), flags.Get("loss"), **optimizer);
    if (!training.ok()) return Fail(cmd, training.error());
    std::printf("training step: the gradient of %s and the %s update\n", training->loss.c_str(),
                flags.Get("optimizer", "sgd").c_str());
    return PrintPlanReport(cmd, training->graph, flags, {training->loss}, {training->update});
  }
  GraphStats stats = ComputeGraphStats(*graph);

  std::printf("model: %s\n", flags.positional()[0].c_str());
  std::printf("nodes: %zu\n\ninputs:\n", graph->nodes().size());
  for (const std::string& in : graph->inputs())
    std::printf("  %-24s %s\n", in.c_str(),
                graph->FindNode(in)->output_types[0].ToString().c_str());
  if (graph->inputs().empty()) std::printf("  (none)\n");
  std::printf("\noutputs:\n");
  for (const GraphOutput& out : graph->outputs())
    std::printf("  %-24s %s  (%s)\n", out.name.c_str(),
                graph->TypeOf(out.tensor)->ToString().c_str(), out.tensor.ToString().c_str());
  if (graph->outputs().empty()) std::printf("  (none)\n");

  std::vector<std::pair<std::string, int>> ops(stats.op_counts.begin(), stats.op_counts.end());
  std::stable_sort(ops.begin(), ops.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::printf("\nops by count:\n");
  for (auto& [op, count] : ops) std::printf("  %-24s %d\n", op.c_str(), count);

  std::printf("\nparameters: %lld (%s)\n", static_cast<long long>(stats.parameter_count),
              FormatBytes(stats.parameter_bytes).c_str());
  std::printf("constants: %s\n", FormatBytes(stats.constant_bytes).c_str());
  std::printf("FLOPs (estimate): %s%s\n", HumanCount(stats.flops).c_str(),
              stats.has_unknown_dims ? " (unknown dims counted as 1, e.g. per example)" : "");
  if (flags.On("precision"))
    if (int code = PrintPrecisionReport(cmd, *graph, flags); code != 0) return code;
  if (flags.On("fusion") || flags.On("memory") || flags.On("placement") || flags.Has("cost"))
    return PrintPlanReport(cmd, *graph, flags, {}, {});
  return 0;
}

}  // namespace kiln::cli
