// The pass manager (passes/pass_manager.h): the registry and its errors, passes run in order with
// the graph verified before and after each one, dumps after each pass, and passes run directly on
// graphs they cannot work on (an error, never a crash).
#include "passes/pass_manager.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "ir/file_util.h"
#include "ir/serialize.h"
#include "passes/constant_fold.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/simplify.h"
#include "tests/testing/temp_path.h"
#include "tools/lib/constant_evaluator.h"

using namespace kiln;

namespace {

// x -> Identity -> Relu (output a); x -> Relu (output b); x -> Neg (dead).
constexpr const char* kChain = R"(
format_version: 1
nodes { name: "x" op: "Placeholder" attrs { key: "dtype" value { dtype: DT_F32 } }
        attrs { key: "shape" value { shape { dims: 3 } } } }
nodes { name: "id" op: "Identity" inputs: "x" }
nodes { name: "r1" op: "Relu" inputs: "id" }
nodes { name: "r2" op: "Relu" inputs: "x" }
nodes { name: "dead" op: "Neg" inputs: "x" }
inputs: "x"
outputs { name: "a" tensor: "r1" }
outputs { name: "b" tensor: "r2" }
)";

Graph Parse(const std::string& text) {
  Result<Graph> g = GraphFromText(text);
  INFO((g.ok() ? "" : g.error().ToString()));
  REQUIRE(g.ok());
  return std::move(*g);
}

Node MakeNode(const std::string& name, const std::string& op, std::vector<TensorRef> inputs = {}) {
  Node n;
  n.name = name;
  n.op = op;
  n.inputs = std::move(inputs);
  return n;
}

std::vector<std::string> NodeNames(const Graph& g) {
  std::vector<std::string> names;
  for (const Node& n : g.nodes()) names.push_back(n.name);
  return names;
}

// A pass that deletes the graph's first node (a placeholder here), leaving dangling inputs.
class BreakingPass : public Pass {
 public:
  std::string name() const override { return "break"; }
  Result<bool> Run(Graph& graph) override {
    std::string first = graph.nodes().front().name;
    graph.RemoveNodesIf([&first](const Node& n) { return n.name == first; });
    return true;
  }
};

class FailingPass : public Pass {
 public:
  std::string name() const override { return "fail"; }
  Result<bool> Run(Graph&) override {
    return MakeError(ErrorCode::kUnimplemented, "cannot do that");
  }
};

}  // namespace

TEST_CASE("pass manager: the registry names every pass and refuses unknown ones", "[passes]") {
  CHECK(AvailablePassNames() ==
        "check-numerics, constant-fold, conv-taps, cse, dce, fold-batch-norm, mixed-precision, "
        "simplify, sync-batch-norm");
  for (const PassInfo& p : AvailablePasses()) {
    Result<std::unique_ptr<Pass>> pass = CreatePass(p.name);
    REQUIRE(pass.ok());
    CHECK((*pass)->name() == p.name);
    CHECK_FALSE(p.summary.empty());
  }
  for (const std::string& name : DefaultPipeline()) CHECK(CreatePass(name).ok());
  Result<std::unique_ptr<Pass>> unknown = CreatePass("fold");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code() == ErrorCode::kNotFound);
  CHECK(unknown.error().message() ==
        "unknown pass 'fold' (available: check-numerics, constant-fold, conv-taps, cse, dce, "
        "fold-batch-norm, mixed-precision, simplify, sync-batch-norm)");
}

TEST_CASE("pass manager: passes run in order and say what they changed", "[passes]") {
  Graph g = Parse(kChain);
  Result<std::vector<PassRun>> runs = RunPasses(g, {"simplify", "cse", "dce", "dce"});
  INFO((runs.ok() ? "" : runs.error().ToString()));
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 4);
  CHECK(((*runs)[0].pass == "simplify" && (*runs)[0].changed && (*runs)[0].nodes == 4));
  CHECK(((*runs)[1].pass == "cse" && (*runs)[1].changed && (*runs)[1].nodes == 3));
  CHECK(((*runs)[2].pass == "dce" && (*runs)[2].changed && (*runs)[2].nodes == 2));
  CHECK(((*runs)[3].pass == "dce" && !(*runs)[3].changed));
  CHECK(NodeNames(g) == std::vector<std::string>{"x", "r1"});
  REQUIRE(g.outputs().size() == 2);
  CHECK(g.outputs()[0].tensor.node == "r1");
  CHECK(g.outputs()[1].tensor.node == "r1");
  CHECK(g.outputs()[1].name == "b");
  // Types are filled in again after every pass.
  CHECK(g.FindNode("r1")->output_types.size() == 1);
}

TEST_CASE("pass manager: every name is checked before any pass runs", "[passes]") {
  Graph g = Parse(kChain);
  Result<std::vector<PassRun>> runs = RunPasses(g, {"dce", "nope"});
  REQUIRE_FALSE(runs.ok());
  CHECK(runs.error().message() ==
        "unknown pass 'nope' (available: check-numerics, constant-fold, conv-taps, cse, dce, "
        "fold-batch-norm, mixed-precision, simplify, sync-batch-norm)");
  CHECK(g.FindNode("dead") != nullptr);
  CHECK(RunPasses(g, {}).ok());
}

TEST_CASE("pass manager: constant-fold needs an evaluator", "[passes]") {
  Graph g = Parse(kChain);
  Result<std::vector<PassRun>> runs = RunPasses(g, {"constant-fold"});
  REQUIRE_FALSE(runs.ok());
  CHECK(runs.error().code() == ErrorCode::kFailedPrecondition);
  CHECK_THAT(runs.error().message(),
             Catch::StartsWith("pass 'constant-fold': ") && Catch::Contains("has no evaluator"));
  CHECK(RunPasses(g, {"constant-fold"}, ReferencePassOptions()).ok());
}

TEST_CASE("pass manager: an invalid input graph is refused before any pass", "[passes]") {
  Graph g;
  REQUIRE(g.AddNode(MakeNode("r", "Relu", {TensorRef{"missing", 0}})).ok());
  Result<std::vector<PassRun>> runs = RunPasses(g, {"dce"});
  REQUIRE_FALSE(runs.ok());
  CHECK_THAT(runs.error().message(), Catch::StartsWith("before the passes: ") &&
                                         Catch::Contains("'missing' does not exist"));
}

TEST_CASE("pass manager: a pass that breaks the graph or fails is named", "[passes]") {
  Graph g = Parse(kChain);
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(std::make_unique<DeadCodeElimination>());
  passes.push_back(std::make_unique<BreakingPass>());
  Result<std::vector<PassRun>> broken = RunPassList(g, passes);
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().code() == ErrorCode::kInternal);
  CHECK_THAT(broken.error().message(), Catch::StartsWith("pass 'break' left an invalid graph: "));

  std::vector<std::unique_ptr<Pass>> failing;
  failing.push_back(std::make_unique<FailingPass>());
  Graph fresh = Parse(kChain);
  Result<std::vector<PassRun>> failed = RunPassList(fresh, failing);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code() == ErrorCode::kUnimplemented);
  CHECK(failed.error().message() == "pass 'fail': cannot do that");
}

TEST_CASE("pass manager: the graph is dumped before and after every pass", "[passes]") {
  std::string dir = testing::TempPath("pass_dumps/nested");
  Graph g = Parse(kChain);
  PassOptions options;
  options.dump_dir = dir;
  REQUIRE(RunPasses(g, {"simplify", "dce"}, options).ok());
  for (const char* file : {"00-input", "01-simplify", "02-dce"}) {
    Result<Graph> dumped = LoadGraph(dir + "/" + file + ".kgraph.txt");
    INFO(file << ": " << (dumped.ok() ? "" : dumped.error().ToString()));
    CHECK(dumped.ok());
  }
  CHECK(*ReadFileToString(dir + "/00-input.kgraph.txt", 1 << 20) == GraphToText(Parse(kChain)));
  CHECK(*ReadFileToString(dir + "/02-dce.kgraph.txt", 1 << 20) == GraphToText(g));

  // $KILN_DUMP_DIR when the options name no directory.
  std::string env_dir = testing::TempPath("pass_dumps_env");
  setenv("KILN_DUMP_DIR", env_dir.c_str(), 1);
  Result<std::vector<PassRun>> runs = RunPasses(g, {"cse"});
  unsetenv("KILN_DUMP_DIR");
  REQUIRE(runs.ok());
  CHECK(LoadGraph(env_dir + "/01-cse.kgraph.txt").ok());

  // A directory that cannot be made: under a regular file.
  std::string file = testing::TempPath("pass_dumps_file");
  std::ofstream(file) << "not a directory";
  options.dump_dir = file + "/sub";
  Result<std::vector<PassRun>> refused = RunPasses(g, {"cse"}, options);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message(), Catch::StartsWith("KILN_DUMP_DIR: "));
}

TEST_CASE("passes: run directly on graphs they cannot work on, they fail cleanly", "[passes]") {
  // Not verified: no output types.
  Graph g;
  REQUIRE(g.AddNode(MakeNode("x", "Placeholder")).ok());
  REQUIRE(g.AddNode(MakeNode("id", "Identity", {TensorRef{"x", 0}})).ok());
  Result<bool> simplified = AlgebraicSimplifier().Run(g);
  REQUIRE_FALSE(simplified.ok());
  CHECK_THAT(simplified.error().message(), Catch::Contains("simplify needs a verified graph"));
  Result<bool> folded = ConstantFolding(ReferenceConstantEvaluator()).Run(g);
  REQUIRE(folded.ok());
  CHECK_FALSE(*folded);
  CHECK(CommonSubexpressionElimination().Run(g).ok());
  // A graph output naming a node that does not exist.
  g.mutable_outputs().push_back({"y", TensorRef{"gone", 0}});
  Result<bool> dce = DeadCodeElimination().Run(g);
  REQUIRE_FALSE(dce.ok());
  CHECK_THAT(dce.error().message(), Catch::Contains("'gone'"));
  // A cycle.
  Graph cyclic;
  REQUIRE(cyclic.AddNode(MakeNode("a", "Relu", {TensorRef{"b", 0}})).ok());
  REQUIRE(cyclic.AddNode(MakeNode("b", "Relu", {TensorRef{"a", 0}})).ok());
  std::vector<std::unique_ptr<Pass>> walkers;
  walkers.push_back(std::make_unique<CommonSubexpressionElimination>());
  walkers.push_back(std::make_unique<AlgebraicSimplifier>());
  walkers.push_back(std::make_unique<ConstantFolding>(ReferenceConstantEvaluator()));
  for (const std::unique_ptr<Pass>& pass : walkers) {
    Result<bool> r = pass->Run(cyclic);
    INFO(pass->name());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message(), Catch::Contains("cycle"));
  }
}
