// `kiln bench`, run as a user would: exit codes (0 ok, 1 failure, 2 usage), one line on stderr for
// each failure, and the report's lines. Times are printed, never asserted on.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "ir/io/npy.h"
#include "ir/ops/linalg.h"
#include "ir/ops/nn.h"
#include "ir/ops/state.h"
#include "ir/serialize.h"
#include "tests/testing/differential.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

using namespace kiln;

namespace {

using testing::CheckFails;
using testing::CommandResult;

std::string Dir() {
  static std::string dir = [] {
    // Inside the per-process temporary folder, removed when the tests exit.
    const std::string path = testing::TempPath("bench");
    std::filesystem::create_directories(path);
    return path;
  }();
  return dir;
}

CommandResult Bench(std::vector<std::string> args) {
  args.insert(args.begin(), "bench");
  return testing::RunCommand(KILN_BINARY, args);
}

void CheckOk(const CommandResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK_FALSE(r.signaled);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("\nmedian_ms: ") && Catch::Contains("\nmin_ms: ") &&
                        Catch::Contains("\nmax_ms: ") && Catch::Contains("\ncompile_ms: "));
  // On the compiled backend the plan's steps are counted.
  if (r.out.find("backend: cpu") != std::string::npos)
    CHECK_THAT(r.out, Catch::Contains("\nsteps: ") && Catch::Contains("\nkernels: "));
}

// A 3 -> 4 linear classifier: x f32[-1, 3], labels i64[-1]; outputs logits and loss.
std::string TinyClassifier() {
  static std::string path = [] {
    GraphBuilder g;
    Value x = g.Placeholder("x", f32, {-1, 3});
    Value labels = g.Placeholder("labels", i64, {-1});
    Value w = Variable(g, "w", f32, {3, 4}, Initializer::GlorotUniform(1));
    Value logits = MatMul(x, w).Named("logits");
    Value loss = SoftmaxCrossEntropy(logits, labels).Named("loss");
    g.Output("logits", logits);
    g.Output("loss", loss);
    std::string p = Dir() + "/tiny.kgraph";
    REQUIRE(SaveGraph(*g.Build(), p).ok());
    return p;
  }();
  return path;
}

}  // namespace

TEST_CASE("bench: forward runs on random inputs", "[cli][bench]") {
  std::string model = TinyClassifier();
  for (const char* backend : {"reference", "auto"}) {
    DYNAMIC_SECTION(backend) {
      CommandResult r = Bench({model, "--input", "x=5x3", "--input", "labels=5", "--iters", "3",
                               "--warmup", "0", "--backend", backend});
      CheckOk(r);
      CHECK_THAT(r.out, Catch::Contains("input x: f32[5, 3] random normal"));
      // The label range comes from the SoftmaxCrossEntropy's 4 classes.
      CHECK_THAT(r.out, Catch::Contains("input labels: i64[5] random in [0, 4) (the class count "
                                        "of SoftmaxCrossEntropy 'loss')"));
      CHECK_THAT(r.out, Catch::Contains("iters: 3 (after 0 warmup)"));
    }
  }
}

TEST_CASE("bench: training steps, inputs from files, --classes", "[cli][bench]") {
  std::string model = TinyClassifier();
  std::string x = Dir() + "/x.npy";
  REQUIRE(WriteNpy(x, Tensor::FromVector<float>({2, 3}, {1, 2, 3, -1, 0, 1})).ok());
  CommandResult r = Bench({model, "--train", "--loss", "loss", "--lr", "0.1", "--input", "x=" + x,
                           "--input", "labels=2", "--classes", "3", "--iters", "2"});
  CheckOk(r);
  CHECK_THAT(r.out, Catch::Contains("run: one training step (forward, backward, sgd update"));
  CHECK_THAT(r.out, Catch::Contains("input x: f32[2, 3] from " + x));
  CHECK_THAT(r.out, Catch::Contains("input labels: i64[2] random in [0, 3) (--classes)"));
  CHECK_THAT(r.out, Catch::Contains("\nloss: "));
  // A fetch beside the loss; another optimizer.
  CheckOk(
      Bench({model, "--train", "--loss", "loss", "--optimizer", "adam", "--fetch", "logits",
             "--input", "x=2x3", "--input", "labels=2", "--iters", "1", "--backend", "reference"}));
}

TEST_CASE("bench: --trace writes a complete event for every step of every run", "[cli][bench]") {
  if (testing::CompiledBackends().empty()) {
    WARN("a runtime-only build: no compiled plan to trace");
    return;
  }
  const std::string model = TinyClassifier(), trace = Dir() + "/trace.json";
  CommandResult r = Bench({model, "--input", "x=5x3", "--input", "labels=5", "--iters", "3",
                           "--backend", "cpu", "--trace", trace});
  CheckOk(r);
  std::ifstream in(trace);
  REQUIRE(in.good());
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(json.rfind("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [", 0) == 0);
  CHECK(json.find("\n]}") != std::string::npos);
  // The benchmarked plan (the one that ran 5 times: compiling, warm-up, 3 timed) has every
  // (step, run) pair once; other plans (the variables' initialization) are rows of their own.
  std::map<int, std::set<std::pair<int, int>>> seen;  // by plan (trace pid)
  std::map<int, int> events, steps;
  std::istringstream lines(json);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"ph\": \"X\"") == std::string::npos) continue;
    const size_t pid = line.find("\"pid\": "), step = line.find("\"step\": "),
                 run = line.find("\"run\": ");
    REQUIRE(pid != std::string::npos);
    REQUIRE(step != std::string::npos);
    REQUIRE(run != std::string::npos);
    CHECK(line.find("\"dur\": ") != std::string::npos);
    const int p = std::stoi(line.substr(pid + 7)), s = std::stoi(line.substr(step + 8)),
              n = std::stoi(line.substr(run + 7));
    seen[p].insert({s, n});
    ++events[p];
    steps[p] = std::max(steps[p], s + 1);
  }
  int benchmarked = 0;
  for (const auto& [p, pairs] : seen) {
    CHECK(static_cast<int>(pairs.size()) == events[p]);  // no pair twice
    if (events[p] == steps[p] * 5 && pairs.count({0, 5})) ++benchmarked;
  }
  CHECK(benchmarked == 1);
}

TEST_CASE("bench: usage errors and failures", "[cli][bench]") {
  std::string model = TinyClassifier();
  CHECK(Bench({"--help"}).exit_code == 0);
  CHECK_THAT(Bench({"--help"}).out, Catch::StartsWith("usage: kiln bench MODEL"));
  CheckFails(Bench({}), "expected 1 argument(s), got 0", 2);
  CheckFails(Bench({model, "--input", "labels=2"}), "input 'x' is f32[-1, 3]: give its shape", 2);
  CheckFails(Bench({model, "--train", "--input", "x=2x3", "--input", "labels=2"}),
             "--train needs --loss NAME", 2);
  CheckFails(Bench({model, "--loss", "loss", "--input", "x=2x3", "--input", "labels=2"}),
             "--loss needs --train", 2);
  CheckFails(Bench({model, "--iters", "0", "--input", "x=2x3", "--input", "labels=2"}),
             "--iters must be a whole number >= 1", 2);
  CheckFails(Bench({model, "--input", "x=2x3", "--input", "x=2x3"}), "--input x is given twice", 2);
  CheckFails(Bench({model, "--train", "--loss", "loss", "--optimizer", "rmsprop", "--input",
                    "x=2x3", "--input", "labels=2"}),
             "rmsprop", 2);
  CheckFails(Bench({Dir() + "/missing.kgraph"}), "missing.kgraph", 1);
  CheckFails(Bench({model, "--input", "x=2x5", "--input", "labels=2"}),
             "--input 'x': shape [2, 5] does not fit f32[-1, 3]", 1);
  CheckFails(Bench({model, "--input", "nope=2x3", "--input", "x=2x3", "--input", "labels=2"}),
             "--input 'nope'", 1);
  CheckFails(Bench({model, "--input", "x=" + Dir() + "/missing.npy", "--input", "labels=2"}),
             "missing.npy", 1);
  CheckFails(Bench({model, "--train", "--loss", "no_such_loss", "--input", "x=2x3", "--input",
                    "labels=2"}),
             "no_such_loss", 1);
  CheckFails(Bench({model, "--backend", "tpu", "--input", "x=2x3", "--input", "labels=2"}), "tpu",
             1);
}
