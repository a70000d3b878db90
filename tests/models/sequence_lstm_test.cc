// The sequence LSTM's two forms (models/sequence_lstm.h): the loop over fed steps computes what the
// unrolled graph computes, for fewer steps than its maximum too, and trains the same on every
// backend (SGD steps on the compiled backends against the reference executor).
#include "models/sequence_lstm.h"

#include <catch2/catch.hpp>
#include <random>

#include "passes/optim.h"
#include "runtime/session.h"
#include "tests/testing/backends.h"
#include "tests/testing/differential.h"

namespace kiln {
namespace {

// A batch of 8: more rows than the few-rows product takes, so the body's matrix products pack the
// weights the loop passes through (once per loop run: RunPlan::feed_versions), and the weights
// change between training steps.
constexpr models::SequenceLstmOptions kSmall = {
    .batch = 8, .steps = 6, .features = 8, .hidden = 16, .classes = 3, .seed = 5};

FeedList Feeds(int64_t steps) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x(f32, Shape{kSmall.batch, steps, kSmall.features});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, uniform(rng));
  return {{"x", x},
          {"labels", Tensor::FromVector<int64_t>(Shape{kSmall.batch}, {0, 2, 1, 2, 1, 0, 2, 1})}};
}

// The model with an SGD step as target "train".
Graph Trainable(const std::string& name, int64_t steps) {
  models::SequenceLstmOptions options = kSmall;
  options.steps = steps;
  Result<Graph> graph = models::BuildSequenceLstm(name, options);
  REQUIRE(graph.ok());
  Result<std::unique_ptr<GraphBuilder>> g = GraphBuilder::FromGraph(std::move(*graph));
  REQUIRE(g.ok());
  Result<Value> loss = (*g)->Find("loss");
  REQUIRE(loss.ok());
  optim::SGD({.lr = 0.5}).Minimize(*loss).Named("train");
  Result<Graph> built = (*g)->Build();
  INFO((built.ok() ? std::string() : built.error().ToString()));
  REQUIRE(built.ok());
  return std::move(*built);
}

TEST_CASE("sequence LSTM: the loop computes and trains as the unrolled graph",
          "[models][control]") {
  for (int64_t steps : {6, 4}) {
    INFO(steps << " steps fed");
    const Graph unrolled = Trainable("sequence-lstm-unrolled", steps);
    const Graph loop = Trainable("sequence-lstm-loop", kSmall.steps);
    const FeedList feeds = Feeds(steps);
    for (const std::string& backend : testing::AvailableBackends()) {
      INFO(backend);
      Session a(unrolled, {.backend = backend});
      Session b(loop, {.backend = backend});
      for (int step = 0; step < 4; ++step) {
        auto la = a.Run(feeds, {"loss"}, {"train"});
        auto lb = b.Run(feeds, {"loss"}, {"train"});
        INFO("step " << step << ": " << (lb.ok() ? std::string() : lb.error().ToString()));
        REQUIRE(la.ok());
        REQUIRE(lb.ok());
        CHECK(lb->at(0).GetDouble(0) == Approx(la->at(0).GetDouble(0)).epsilon(1e-4));
      }
    }
  }
}

}  // namespace
}  // namespace kiln
