// Embeddings on the CUDA device: a Gather of fed indices (a token batch) and its gradient run as
// generated kernels, the indices range-checked on the host when the run starts (as fed labels
// are, also through a Reshape), so that a training step of an embedding model has no host step
// between device steps and is captured as a CUDA graph; a bad index fails the run naming the node,
// in the reference's words; negative indices count from the end, as there.
#include <catch2/catch.hpp>

#include "ir/builder.h"
#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/nn.h"
#include "ir/ops/state.h"
#include "passes/optim.h"
#include "runtime/cuda/graph_capture.h"
#include "runtime/session.h"
#include "tests/compiler/cuda_sim_testing.h"
#include "tests/testing/differential.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

// tokens [4, 6] -> rows of a 20 x 8 table -> [24, 8] @ w [8, 5] -> cross-entropy against the fed
// labels [4, 6] reshaped to [24]; one SGD step.
struct EmbeddingModel {
  Graph graph;
  std::string loss, train;
  EmbeddingModel() {
    GraphBuilder g;
    Value tokens = g.Placeholder("tokens", i64, {4, 6});
    Value labels = g.Placeholder("labels", i64, {4, 6});
    Value table = Variable(g, "table", f32, {20, 8}, Initializer::Uniform(-1, 1, 3));
    Value w = Variable(g, "w", f32, {8, 5}, Initializer::Uniform(-1, 1, 4));
    Value embedded = Reshape(Gather(table, tokens).Named("embed"), {24, 8});
    Value l = SoftmaxCrossEntropy(MatMul(embedded, w), Reshape(labels, {24})).Named("xent");
    optim::Options sgd;
    sgd.lr = 0.5;
    Value t = optim::SGD(sgd).Minimize(l);
    Result<Graph> built = g.Build();
    INFO(built.status().ToString());
    REQUIRE(built.ok());
    graph = std::move(*built);
    loss = l.name();
    train = t.node_name();
  }
  // Tokens with repeats (their gradients add up) and negative ones (from the table's end).
  static FeedList Batch(int64_t bad_token = 0) {
    std::vector<int64_t> tokens(24), labels(24);
    for (int64_t i = 0; i < 24; ++i) {
      tokens[i] = i % 3 == 0 ? -(i % 7) - 1 : (i * 5) % 20;
      labels[i] = (i * 3) % 5;
    }
    if (bad_token) tokens[9] = bad_token;
    return {{"tokens", Tensor::FromVector(Shape{4, 6}, tokens)},
            {"labels", Tensor::FromVector(Shape{4, 6}, labels)}};
  }
};

TEST_CASE(
    "cuda-sim: an embedding's Gather and its gradient run on the device, indices checked "
    "when the run starts",
    "[cuda]") {
  EmbeddingModel m;
  testing::CheckTrainingMatchesReference(m.graph, EmbeddingModel::Batch(), m.loss, m.train, 4);

  Session planner(m.graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = planner.Plan(EmbeddingModel::Batch(), {m.loss}, {m.train});
  REQUIRE(plan.ok());
  CompiledPlan compiled = testing::CompileSim(*plan);
  const Executable& exe = compiled.executable;
  INFO(exe.ToString());
  std::string host;
  int gathers = 0;
  for (const Step& s : exe.steps) {
    if (s.callee == "to_device" || s.callee == "to_host" || s.callee == "variable_read") continue;
    if (!s.on_device) host += s.callee + " ";
    const Result<std::string> library = s.attrs.GetString("library");
    gathers += s.on_device && library.ok() && (*library == "Gather" || *library == "GatherGrad");
  }
  CHECK(host == "check_indices check_labels ");  // both before any device step
  CHECK(gathers == 2);
  const cuda::GraphCapture capture = cuda::AnalyzeGraphCapture(exe);
  INFO(capture.why_not);
  CHECK(capture.capturable);
}

TEST_CASE("cuda-sim: a token outside the embedding table fails the run as on the reference",
          "[cuda]") {
  EmbeddingModel m;
  const int64_t bad = GENERATE(20, -21);
  for (const std::string backend : {"reference", "cuda-sim"}) {
    INFO(backend);
    Session session(m.graph, SessionOptions{.backend = backend});
    Result<std::vector<Tensor>> out = session.Run(EmbeddingModel::Batch(bad), {m.loss}, {m.train});
    REQUIRE_FALSE(out.ok());
    CHECK_THAT(out.error().message(),
               Catch::Contains("embed") &&
                   Catch::Contains("index " + std::to_string(bad) +
                                   " is out of range for axis 0 of size 20") &&
                   Catch::Contains("indices element 9"));
    // Nothing was updated: the next good batch trains from the initial table.
    Result<std::vector<Tensor>> good = session.Run(EmbeddingModel::Batch(), {m.loss});
    REQUIRE(good.ok());
  }
}

TEST_CASE("placement: a Reshape of a feed runs on the device only when device steps alone read it",
          "[cuda]") {
  // Here a Gather whose indices are a Reshape of the feed (not the feed itself) stays on the
  // host, so the Reshape does too: no copy of the tokens goes up and comes back.
  GraphBuilder g;
  Value tokens = g.Placeholder("tokens", i64, {4, 6});
  Value table = g.Placeholder("table", f32, {20, 8});
  g.Output("rows", Gather(table, Reshape(tokens, {24})));
  Graph graph = *g.Build();
  FeedList feeds = {{"tokens", EmbeddingModel::Batch()[0].second},
                    {"table", testing::RandomTensor(Shape{20, 8}, 5).CastTo(f32)}};
  Session planner(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = planner.Plan(feeds, {"rows"});
  REQUIRE(plan.ok());
  CompiledPlan compiled = testing::CompileSim(*plan);
  const Executable& exe = compiled.executable;
  INFO(exe.ToString());
  for (const Step& s : exe.steps) {
    CHECK_FALSE((s.callee == "copy" && s.on_device));
    CHECK_FALSE((s.callee == "to_device" && exe.buffers[s.inputs[0]].tensor == "tokens:0"));
  }
  Result<std::vector<Tensor>> expected = planner.Run(feeds, {"rows"});
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(graph, feeds, {"rows"}, *expected);
}

}  // namespace
}  // namespace kiln
