#include "passes/pass_manager.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <system_error>

#include "ir/file_util.h"
#include "ir/serialize.h"
#include "ir/verifier.h"
#include "passes/check_numerics.h"
#include "passes/conv_taps.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/fold_batch_norm.h"
#include "passes/mixed_precision.h"
#include "passes/simplify.h"
#include "passes/sync_batch_norm.h"

namespace kiln {
namespace {

struct PassEntry {
  PassInfo info;
  std::function<std::unique_ptr<Pass>(const PassOptions&)> make;
};

const std::vector<PassEntry>& Registry() {
  static const std::vector<PassEntry> entries = {
      {{"check-numerics", "fail a run at the first node whose float output has an inf or NaN"},
       [](const PassOptions&) { return std::make_unique<CheckNumericsPass>(); }},
      {{"constant-fold", "evaluate small nodes whose inputs are all constants into constants"},
       [](const PassOptions& o) { return std::make_unique<ConstantFolding>(o.evaluate); }},
      {{"conv-taps", "drop convolution kernel taps that read only padding (a 3x3 over 1x1)",
        /*exact=*/false},
       [](const PassOptions&) { return std::make_unique<ConvPaddingTaps>(); }},
      {{"cse", "merge nodes that compute the same thing from the same inputs"},
       [](const PassOptions&) { return std::make_unique<CommonSubexpressionElimination>(); }},
      {{"dce", "remove nodes that no output, target or state update needs"},
       [](const PassOptions&) { return std::make_unique<DeadCodeElimination>(); }},
      {{"fold-batch-norm", "fold an inference BatchNorm into the convolution before it",
        /*exact=*/false},
       [](const PassOptions&) { return std::make_unique<FoldBatchNorm>(); }},
      {{"mixed-precision", "compute float32 math in bf16/f16 where the precision lists allow",
        /*exact=*/false},
       [](const PassOptions& o) { return std::make_unique<MixedPrecision>(o.precision); }},
      {{"simplify", "algebraic identities (x*1, x+0, Identity, Transpose/Reshape/Cast chains)"},
       [](const PassOptions&) { return std::make_unique<AlgebraicSimplifier>(); }},
      {{"sync-batch-norm",
        "training BatchNorm over the global batch of a data-parallel run (kiln train --sync-bn)",
        /*exact=*/false},
       [](const PassOptions&) { return std::make_unique<SyncBatchNorm>(); }},
  };
  return entries;
}

int DebugLevel() {
  const char* level = std::getenv("KILN_DEBUG");
  return level ? std::atoi(level) : 0;
}

// Writes <dir>/<NN>-<stage>.kgraph.txt.
Status Dump(const Graph& graph, const std::string& dir, size_t index, const std::string& stage) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%02zu-", index);
  std::string path = dir + "/" + prefix + stage + ".kgraph.txt";
  Status s = WriteFileAtomically(path, GraphToText(graph));
  if (!s.ok()) return s.error().WithContext("KILN_DUMP_DIR");
  return OkStatus();
}

}  // namespace

const std::vector<PassInfo>& AvailablePasses() {
  static const std::vector<PassInfo> infos = [] {
    std::vector<PassInfo> v;
    for (const PassEntry& e : Registry()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

std::string AvailablePassNames() {
  std::string names;
  for (const PassInfo& p : AvailablePasses()) names += (names.empty() ? "" : ", ") + p.name;
  return names;
}

const std::vector<std::string>& DefaultPipeline() {
  // Fold first so that simplify sees computed constants (a Cast of a 1 is a 1); simplify before
  // cse so that, with Identity nodes gone, equal computations have equal inputs; dce last removes
  // what the others left unused.
  static const std::vector<std::string> pipeline = {"constant-fold", "simplify", "cse", "dce"};
  return pipeline;
}

Result<std::unique_ptr<Pass>> CreatePass(const std::string& name, const PassOptions& options) {
  for (const PassEntry& e : Registry())
    if (e.info.name == name) return e.make(options);
  return MakeError(ErrorCode::kNotFound, "unknown pass '", name,
                   "' (available: ", AvailablePassNames(), ")");
}

Result<std::vector<PassRun>> RunPasses(Graph& graph, const std::vector<std::string>& names,
                                       const PassOptions& options) {
  std::vector<std::unique_ptr<Pass>> passes;
  for (const std::string& name : names) {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<Pass> pass, CreatePass(name, options));
    passes.push_back(std::move(pass));
  }
  return RunPassList(graph, passes, options);
}

Result<std::vector<PassRun>> RunPassList(Graph& graph,
                                         const std::vector<std::unique_ptr<Pass>>& passes,
                                         const PassOptions& options) {
  std::string dump_dir = options.dump_dir;
  if (const char* env = std::getenv("KILN_DUMP_DIR"); dump_dir.empty() && env) dump_dir = env;
  Status valid = Verify(graph);
  if (!valid.ok()) return valid.error().WithContext("before the passes");
  if (!dump_dir.empty()) KILN_RETURN_IF_ERROR(Dump(graph, dump_dir, 0, "input"));
  std::vector<PassRun> runs;
  for (const std::unique_ptr<Pass>& pass : passes) {
    Result<bool> changed = pass->Run(graph);
    if (!changed.ok()) return changed.error().WithContext("pass '" + pass->name() + "'");
    if (Status s = Verify(graph); !s.ok())
      return MakeError(ErrorCode::kInternal, "pass '", pass->name(),
                       "' left an invalid graph: ", s.error().message());
    runs.push_back({pass->name(), *changed, graph.nodes().size()});
    if (!dump_dir.empty()) KILN_RETURN_IF_ERROR(Dump(graph, dump_dir, runs.size(), pass->name()));
    if (DebugLevel() >= 1)
      std::fprintf(stderr, "kiln: pass %s: %s, %zu nodes\n", pass->name().c_str(),
                   *changed ? "changed" : "unchanged", graph.nodes().size());
  }
  return runs;
}

}  // namespace kiln
