// The precision and numerics flags as a user types them: kiln run/bench --precision, the list
// changes, kiln inspect --precision, kiln run --check-numerics naming the node (exit 1, one line),
// and usage errors (exit 2).
#include <catch2/catch.hpp>

#include "ir/builder.h"
#include "ir/io/npy.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/serialize.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

namespace kiln {
namespace {

using testing::CheckFails;
using testing::CommandResult;
using testing::TempPath;

CommandResult Kiln(const std::vector<std::string>& args) {
  return testing::RunCommand(KILN_BINARY, args);
}

// logits = log(x @ w) + 1: x = [[1, 2], [0, 0]] gives -inf in row 1.
std::string LogModel() {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 2});
  Value w = g.Constant(Tensor::FromVector<float>({2, 2}, {1, 0, 0, 1}));
  Value logits = Log(MatMul(x, w)).Named("log") + 1.0;
  g.Output("logits", logits);
  std::string path = TempPath("log_model.kgraph");
  REQUIRE(SaveGraph(*g.Build(), path).ok());
  return path;
}

std::string Npy(const std::string& name, std::vector<float> values) {
  std::string path = TempPath(name);
  REQUIRE(WriteNpy(path, Tensor::FromVector<float>({2, 2}, values)).ok());
  return path;
}

TEST_CASE("cli: --precision bf16/fp16 runs, --check-numerics names the node", "[cli][precision]") {
  const std::string model = LogModel();
  const std::string good = "x=" + Npy("good.npy", {1, 2, 3, 4});
  const std::string bad = "x=" + Npy("bad.npy", {1, 2, 0, 0});
  for (const char* precision : {"fp32", "bf16", "fp16"}) {
    CommandResult r = Kiln({"run", model, "--input", good, "--precision", precision});
    INFO(precision << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("logits: f32[2, 2]"));
    CheckFails(Kiln({"run", model, "--input", bad, "--precision", precision, "--check-numerics"}),
               "check-numerics: node 'log' (Log, built at ");
  }
  // Without the check, -inf is a value like any other.
  CHECK(Kiln({"run", model, "--input", bad}).exit_code == 0);

  CommandResult bench = Kiln({"bench", model, "--input", "x=2x2", "--iters", "2", "--precision",
                              "bf16", "--backend", "reference"});
  INFO(bench.err);
  REQUIRE(bench.exit_code == 0);
  CHECK_THAT(bench.out, Catch::Contains("precision: bf16"));
}

TEST_CASE("cli: kiln inspect --precision prints the lists and the decisions", "[cli][precision]") {
  const std::string model = LogModel();
  CommandResult r = Kiln({"inspect", model, "--precision"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("always16: Conv2D Conv2DBackpropFilter Conv2DBackpropInput "
                                    "MatMul") &&
                        Catch::Contains("bf16   MatMul") && Catch::Contains("f32    Log 'log'") &&
                        Catch::Contains("keep32"));
  CommandResult moved = Kiln({"inspect", model, "--precision", "--precision-op", "Log=follow",
                              "--precision-node", "MatMul=keep32"});
  INFO(moved.err);
  REQUIRE(moved.exit_code == 0);
  CHECK_THAT(moved.out, Catch::Contains("Log*") && Catch::Contains("node choice keep32"));
}

TEST_CASE("cli: bad precision flags are usage errors", "[cli][precision][bad-input]") {
  const std::string model = LogModel();
  const std::string good = "x=" + Npy("good2.npy", {1, 2, 3, 4});
  CheckFails(Kiln({"run", model, "--input", good, "--precision", "fp8"}),
             "precision 'fp8': expected fp32, bf16 or fp16", 2);
  CheckFails(Kiln({"run", model, "--input", good, "--precision", "bf16", "--precision-op",
                   "Log=sometimes"}),
             "'sometimes' is not a list (always16, follow, keep32, neutral)", 2);
  CheckFails(Kiln({"run", model, "--input", good, "--precision", "bf16", "--precision-op",
                   "Frobnicate=keep32"}),
             "kiln has no op 'Frobnicate'", 2);
  CheckFails(Kiln({"run", model, "--input", good, "--precision-op", "Log=keep32"}),
             "need --precision bf16 or fp16", 2);
  CheckFails(Kiln({"run", model, "--input", good, "--precision", "bf16", "--precision-node",
                   "nope=keep32"}),
             "precision choice for node 'nope': the graph has no node of that name");
}

}  // namespace
}  // namespace kiln
