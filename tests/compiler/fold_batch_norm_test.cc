// fold-batch-norm (passes/fold_batch_norm.h): an inference BatchNorm after a convolution becomes
// the convolution's bias, with the same values (against the reference executor running the graph
// as written), in f32 and under bf16 mixed precision; the CUDA backend's plans run it, so that no
// BatchNorm step is left; and the pass leaves alone what it cannot fold.
#include "passes/fold_batch_norm.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "passes/pass_manager.h"
#include "runtime/session.h"
#include "tests/compiler/cuda_sim_testing.h"
#include "tests/testing/differential.h"
#include "tests/testing/eval.h"
#include "tests/testing/gradcheck_op.h"

using namespace kiln;

namespace {

// relu(BatchNorm(conv(x, w) [+ b], scale, shift, mean, var)) over x [2, 3, 8, 8], w [4, 3, 3, 3].
Graph ConvThenNorm(bool conv_bias, bool training = false) {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3, 8, 8});
  Value w = g.Placeholder("w", f32, {4, 3, 3, 3});
  Value scale = g.Placeholder("scale", f32, {4});
  Value shift = g.Placeholder("shift", f32, {4});
  Value mean = g.Placeholder("mean", f32, {4});
  Value var = g.Placeholder("var", f32, {4});
  Value y = Conv2D(x, w, {.pads = {1, 1, 1, 1}});
  if (conv_bias) y = BiasAdd(y, g.Placeholder("b", f32, {4}));
  g.Output("y", Relu(BatchNorm(y, scale, shift, mean, var, 1e-3, training)[0]));
  return testing::BuildOrFail(g);
}

FeedList Feeds(bool conv_bias) {
  Tensor var = testing::RandomTensor({4}, 6).CastTo(f32);
  for (int64_t i = 0; i < 4; ++i) var.SetDouble(i, std::fabs(var.GetDouble(i)) + 0.25);
  FeedList feeds = {{"x", testing::RandomTensor({2, 3, 8, 8}, 1).CastTo(f32)},
                    {"w", testing::RandomTensor({4, 3, 3, 3}, 2).CastTo(f32)},
                    {"scale", testing::RandomTensor({4}, 3).CastTo(f32)},
                    {"shift", testing::RandomTensor({4}, 4).CastTo(f32)},
                    {"mean", testing::RandomTensor({4}, 5).CastTo(f32)},
                    {"var", var}};
  if (conv_bias) feeds.push_back({"b", testing::RandomTensor({4}, 7).CastTo(f32)});
  return feeds;
}

int Count(const Graph& graph, const std::string& op) {
  int n = 0;
  for (const Node& node : graph.nodes()) n += node.op == op;
  return n;
}

// Whether fold-batch-norm changes `graph` (the pass must succeed).
bool Folds(Graph graph) {
  auto runs = RunPasses(graph, {"fold-batch-norm"});
  INFO((runs.ok() ? std::string() : runs.error().ToString()));
  REQUIRE(runs.ok());
  return runs->at(0).changed;
}

}  // namespace

TEST_CASE("fold-batch-norm: the folded graph gives the BatchNorm's values", "[passes][conv]") {
  for (bool conv_bias : {false, true}) {
    INFO("conv bias: " << conv_bias);
    const Graph graph = ConvThenNorm(conv_bias);
    Session reference(graph, {.backend = "reference"});
    auto want = reference.Run(Feeds(conv_bias), {"y"});
    REQUIRE(want.ok());
    Graph folded = graph;
    auto runs = RunPasses(folded, {"fold-batch-norm", "dce"});
    INFO((runs.ok() ? std::string() : runs.error().ToString()));
    REQUIRE(runs.ok());
    CHECK(runs->at(0).changed);
    CHECK(Count(folded, "BatchNorm") == 0);
    CHECK(Count(folded, "BiasAdd") == 1);  // the BatchNorm, become the convolution's bias
    Session alone(folded, {.backend = "reference"});
    auto got = alone.Run(Feeds(conv_bias), {"y"});
    REQUIRE(got.ok());
    std::string why;
    const bool close = testing::CloseForDType(want->at(0), got->at(0), &why);
    INFO(why);
    CHECK(close);
    // A second run finds nothing more to fold.
    auto again = RunPasses(folded, {"fold-batch-norm"});
    REQUIRE(again.ok());
    CHECK_FALSE(again->at(0).changed);
  }
}

TEST_CASE("fold-batch-norm: CUDA plans run an inference BatchNorm as the convolution's bias",
          "[passes][conv][cuda]") {
  for (const PrecisionPolicy& precision : {PrecisionPolicy{}, PrecisionPolicy{.compute = bf16}}) {
    INFO("precision " << (precision.enabled() ? "bf16" : "f32"));
    const Graph graph = ConvThenNorm(/*conv_bias=*/false);
    Session reference(graph, {.backend = "reference", .precision = precision});
    Session sim(graph, {.backend = "cuda-sim", .precision = precision});
    auto want = reference.Run(Feeds(false), {"y"});
    auto got = sim.Run(Feeds(false), {"y"});
    INFO(want.status().ToString() << " / " << got.status().ToString());
    REQUIRE(want.ok());
    REQUIRE(got.ok());
    if (!precision.enabled()) {
      std::string why;
      const bool close = testing::CloseForDType(want->at(0), got->at(0), &why);
      INFO(why);
      CHECK(close);
    } else {
      // bf16 rounds the folded filter (not the filter, with the product scaled in f32 after):
      // each output carries bf16's error of the convolution's terms, which the BatchNorm's
      // centring can make large beside a small output. Within 2% of the largest output.
      double largest = 0, worst = 0;
      for (int64_t i = 0; i < want->at(0).num_elements(); ++i) {
        largest = std::max(largest, std::fabs(want->at(0).GetDouble(i)));
        worst = std::max(worst, std::fabs(want->at(0).GetDouble(i) - got->at(0).GetDouble(i)));
      }
      INFO("largest error " << worst << " of outputs up to " << largest);
      CHECK(worst <= 2e-2 * largest);
    }
    Result<RunPlan> plan = sim.Plan(Feeds(false), {"y"});
    REQUIRE(plan.ok());
    const CompiledPlan compiled = testing::CompileSim(*plan);
    for (const Step& step : compiled.executable.steps) {
      INFO(step.callee << " " << step.node.name);
      CHECK(step.node.op != "BatchNorm");
    }
  }
}

TEST_CASE("fold-batch-norm: leaves training, a read convolution, read statistics or f16",
          "[passes][conv]") {
  CHECK_FALSE(Folds(ConvThenNorm(false, /*training=*/true)));

  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3, 8, 8});
  Value w = g.Placeholder("w", f32, {4, 3, 3, 3});
  Value c = g.Placeholder("c", f32, {4});
  Value conv = Conv2D(x, w, {});
  g.Output("conv", conv);  // the convolution is read besides the BatchNorm
  g.Output("y", BatchNorm(conv, c, c, c, c, 1e-3, false)[0]);
  Value other = Conv2D(x, w, {.strides = {2, 2}});
  g.Output("mean", BatchNorm(other, c, c, c, c, 1e-3, false)[1]);  // its statistics are read
  CHECK_FALSE(Folds(testing::BuildOrFail(g)));

  // f16: x * w * s may pass 65504 where (conv - mean) * s does not (a channel of tiny variance).
  GraphBuilder h;
  Value x16 = h.Placeholder("x", f16, {1, 1, 1, 1});
  Value w16 = h.Placeholder("w", f16, {1, 1, 1, 1});
  Value c16 = h.Placeholder("c", f16, {1});
  h.Output("y", BatchNorm(Conv2D(x16, w16, {}), c16, c16, c16, c16, 1e-3, false)[0]);
  CHECK_FALSE(Folds(testing::BuildOrFail(h)));
}
