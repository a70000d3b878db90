// Winograd convolutions on the cpu backend (ConvRunsWinograd, runtime/cpu/library_steps.h): which
// conv2d steps of a compiled plan take that path, and that those plans compute what the reference
// executor computes (inference with constant and with variable weights, and a training plan,
// whose convolutions stay direct because it assigns their weights).
#include <catch2/catch.hpp>
#include <cmath>

#include "compiler/codegen/emit_mlir.h"
#include "compiler/plan_executable.h"
#include "ir/builder.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "ir/random.h"
#include "passes/optim.h"
#include "runtime/cpu/library_steps.h"
#include "runtime/session.h"
#include "tests/testing/differential.h"

namespace kiln {
namespace {

struct ConvNet {
  Graph graph;
  FeedList feeds;
  std::string train;  // the SGD step's node, if any
};

// Standard normal values scaled by 1 / sqrt(fan_in), as initializers scale weights, so that no
// output is a small difference of large sums.
Tensor ScaledWeights(const Shape& shape, uint64_t seed) {
  Tensor t = RandomTensor(f32, shape, 0, seed, 0);
  const double fan_in = shape.rank() == 4 ? double(shape[1] * shape[2] * shape[3]) : 1.0;
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetDouble(i, t.GetDouble(i) / std::sqrt(fan_in));
  return t;
}

// x [2, in, 10, 10] -> 3 x 3 conv (`stride`, pad 1) + bias + ReLU with `out` channels -> 3 x 3 conv
// back to `in` channels -> "y"; weights constant or variables; with `train`, a loss "loss" and an
// SGD step "train".
ConvNet MakeConvNet(int64_t in, int64_t out, int64_t stride, bool variables, bool train) {
  GraphBuilder g;
  uint64_t seed = 0;
  auto weights = [&](const std::string& name, Shape shape) {
    ++seed;
    if (variables) return Variable(g, name, f32, shape, Initializer::GlorotUniform(seed));
    return g.Constant(ScaledWeights(shape, seed));
  };
  Value x = g.Placeholder("x", f32, {2, in, 10, 10});
  Value h = Relu(BiasAdd(Conv2D(x, weights("w1", Shape{out, in, 3, 3}),
                                {.strides = {stride, stride}, .pads = {1, 1, 1, 1}}),
                         weights("b1", Shape{out})));
  Value y = Conv2D(h, weights("w2", Shape{in, out, 3, 3}), {.pads = {1, 1, 1, 1}});
  g.Output("y", y);
  std::string train_node;
  if (train) {
    Value loss = Mean(Mul(y, y));
    g.Output("loss", loss);
    train_node = optim::SGD({.lr = 1e-3}).Minimize(loss).name();
  }
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  return ConvNet{
      std::move(*graph), {{"x", RandomTensor(f32, Shape{2, in, 10, 10}, 0, 99, 0)}}, train_node};
}

// For each conv2d step of the plan that fetches `fetches` (and runs `targets`), in order: whether
// it runs as Winograd.
std::vector<bool> WinogradSteps(const ConvNet& net, const std::vector<TensorName>& fetches,
                                const std::vector<TensorName>& targets = {}) {
  Session session(net.graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = session.Plan(net.feeds, fetches, targets);
  REQUIRE(plan.ok());
  compiler::PlanOptions options;
  options.can_emit = compiler::CanEmit;
  Result<compiler::PlannedExecutable> planned = compiler::PlanExecutable(*plan, options);
  INFO(planned.status().ToString());
  REQUIRE(planned.ok());
  const Executable& exe = planned->lowered.executable;
  std::vector<bool> winograd;
  for (const Step& step : exe.steps)
    if (step.callee == "conv2d") winograd.push_back(cpu::ConvRunsWinograd(step, exe));
  return winograd;
}

void CheckMatchesReference(const ConvNet& net) {
  Session reference(net.graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(net.feeds, {"y"});
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(net.graph, net.feeds, {"y"}, *expected);
}

TEST_CASE("3 x 3 convolutions with fixed weights and 32 channels or more run as Winograd",
          "[cpu]") {
  if (testing::CompiledBackends().empty()) return;
  SECTION("constant weights") {
    ConvNet net = MakeConvNet(32, 48, 1, /*variables=*/false, /*train=*/false);
    CHECK(WinogradSteps(net, {"y"}) == std::vector<bool>{true, true});
    CheckMatchesReference(net);
  }
  SECTION("variables the plan does not assign") {
    ConvNet net = MakeConvNet(32, 64, 1, /*variables=*/true, /*train=*/false);
    CHECK(WinogradSteps(net, {"y"}) == std::vector<bool>{true, true});
    CheckMatchesReference(net);
  }
  SECTION("a stride of 2 stays direct; the next convolution does not") {
    ConvNet net = MakeConvNet(32, 32, 2, /*variables=*/false, /*train=*/false);
    CHECK(WinogradSteps(net, {"y"}) == std::vector<bool>{false, true});
    CheckMatchesReference(net);
  }
  SECTION("fewer than 32 channels stay direct") {
    ConvNet net = MakeConvNet(16, 64, 1, /*variables=*/false, /*train=*/false);
    CHECK(WinogradSteps(net, {"y"}) == std::vector<bool>{false, false});
    CheckMatchesReference(net);
  }
}

TEST_CASE("a training plan's convolutions stay direct: it assigns their weights", "[cpu]") {
  if (testing::CompiledBackends().empty()) return;
  ConvNet net = MakeConvNet(32, 32, 1, /*variables=*/true, /*train=*/true);
  const std::vector<bool> training = WinogradSteps(net, {"loss"}, {net.train});
  CHECK(training == std::vector<bool>(training.size(), false));
  CHECK(WinogradSteps(net, {"y"}) == std::vector<bool>{true, true});  // evaluation: Winograd
  testing::CheckTrainingMatchesReference(net.graph, net.feeds, "loss", net.train, 3);
}

}  // namespace
}  // namespace kiln
