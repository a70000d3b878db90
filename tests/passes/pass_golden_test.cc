// Golden tests of the graph passes (the way MLIR and XLA test passes): every
// tests/passes/golden/<pass>/<case>.in.kgraph.txt (a commented text graph) is run through that one
// pass and the text form of the result must equal <case>.out.kgraph.txt exactly. Each case must
// change its graph, and the result must be a fixed point: a second run changes nothing.
// KILN_UPDATE_GOLDEN=1 rewrites the .out files from the current output (review the diff).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ir/file_util.h"
#include "ir/serialize.h"
#include "passes/pass_manager.h"
#include "tools/lib/constant_evaluator.h"

using namespace kiln;

namespace {

constexpr const char* kInSuffix = ".in.kgraph.txt";

std::string GoldenDir() { return std::string(KILN_SOURCE_DIR) + "/tests/passes/golden"; }

// The entries of `dir` (full paths), sorted so that failures come in a stable order.
std::vector<std::string> SortedEntries(const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Runs `pass` alone on `graph` and returns whether it changed it (REQUIREs success).
bool RunOne(Graph& graph, const std::string& pass) {
  Result<std::vector<PassRun>> runs = RunPasses(graph, {pass}, ReferencePassOptions());
  INFO((runs.ok() ? "" : runs.error().ToString()));
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  return runs->front().changed;
}

void CheckCase(const std::string& pass, const std::string& in_path) {
  std::string out_path =
      in_path.substr(0, in_path.size() - std::string(kInSuffix).size()) + ".out.kgraph.txt";
  INFO(in_path);
  Result<Graph> graph = LoadGraph(in_path);
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  CHECK(RunOne(*graph, pass));
  std::string text = GraphToText(*graph);
  if (std::getenv("KILN_UPDATE_GOLDEN")) std::ofstream(out_path, std::ios::binary) << text;
  Result<std::string> expected = ReadFileToString(out_path, kMaxGraphFileBytes);
  INFO("missing " << out_path << "? KILN_UPDATE_GOLDEN=1 writes it");
  REQUIRE(expected.ok());
  INFO("got:\n" << text);
  CHECK(text == *expected);
  CHECK_FALSE(RunOne(*graph, pass));
  CHECK(GraphToText(*graph) == text);
}

}  // namespace

TEST_CASE("passes: golden text graphs, one pass each", "[passes]") {
  int cases = 0;
  std::vector<std::string> passes_seen;
  for (const std::string& dir : SortedEntries(GoldenDir())) {
    std::string pass = std::filesystem::path(dir).filename().string();
    INFO("golden folder " << dir << " must be named after a pass");
    REQUIRE(CreatePass(pass, ReferencePassOptions()).ok());
    passes_seen.push_back(pass);
    for (const std::string& path : SortedEntries(dir)) {
      if (!EndsWith(path, kInSuffix)) continue;
      CheckCase(pass, path);
      ++cases;
    }
  }
  // Every pass has golden cases.
  for (const PassInfo& p : AvailablePasses())
    CHECK(std::count(passes_seen.begin(), passes_seen.end(), p.name) == 1);
  CHECK(cases >= 10);
}
