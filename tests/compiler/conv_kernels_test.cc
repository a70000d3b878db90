// The oneDNN convolution kernels the cpu backend's plans choose, and that those plans compute what
// the reference executor computes:
// - Winograd (ConvRunsWinograd, runtime/cpu/library_steps.h): which conv2d steps take that path
//   (inference with constant and with variable weights; a training plan's convolutions stay
//   direct because it assigns their weights);
// - the fused 1 x 1 + depthwise convolution (compiler/epilogue_fusion.h, post-op kDepthwise):
//   MobileNet's expansion, depthwise and activations in one step, and the forms that stay apart.
#include <catch2/catch.hpp>
#include <cmath>

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
#include "tests/compiler/cpu_executable.h"
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
  const Executable exe = testing::CpuExecutable(net.graph, net.feeds, fetches, targets);
  std::vector<bool> winograd;
  for (const Step& step : exe.steps)
    if (step.callee == "conv2d") winograd.push_back(cpu::ConvRunsWinograd(step, exe));
  return winograd;
}

void CheckMatchesReference(const Graph& graph, const FeedList& feeds) {
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, {"y"});
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(graph, feeds, {"y"}, *expected);
}
void CheckMatchesReference(const ConvNet& net) { CheckMatchesReference(net.graph, net.feeds); }

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

// MobileNet's inverted residual block: x [2, 16, 12, 12] -> 1 x 1 convolution to 48 channels +
// bias + ReLU6 -> depthwise 3 x 3 (`stride`, `pads`) [+ bias] + ReLU6 (or Relu) -> 1 x 1 back to
// 16 channels -> "y". `expand_kernel` 3 makes the first convolution 3 x 3 (padding 1).
struct BlockForm {
  int64_t stride = 1;
  std::vector<int64_t> pads = {1, 1, 1, 1};
  bool depthwise_bias = true;
  bool relu6 = true;
  int64_t expand_kernel = 1;
  bool fetch_expanded = false;  // the expansion's output is fetched too, as "expanded"
};

Graph InvertedResidual(const BlockForm& f) {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 16, 12, 12});
  const int64_t k = f.expand_kernel, pad = k / 2;
  Value e =
      Conv2D(x, g.Constant(ScaledWeights(Shape{48, 16, k, k}, 1)), {.pads = {pad, pad, pad, pad}});
  e = Clip(BiasAdd(e, g.Constant(ScaledWeights(Shape{48}, 2))), 0, 6);
  if (f.fetch_expanded) g.Output("expanded", e);
  Value d = Conv2D(e, g.Constant(ScaledWeights(Shape{48, 1, 3, 3}, 3)),
                   {.strides = {f.stride, f.stride}, .pads = f.pads, .groups = 48});
  if (f.depthwise_bias) d = BiasAdd(d, g.Constant(ScaledWeights(Shape{48}, 4)));
  d = f.relu6 ? Clip(d, 0, 6) : Relu(d);
  g.Output("y", Conv2D(d, g.Constant(ScaledWeights(Shape{16, 48, 1, 1}, 5))));
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  return std::move(*graph);
}

// The post-ops of each conv2d step of the cpu plan of `graph`, in order.
std::vector<std::vector<int64_t>> ConvPostOps(const Graph& graph, const FeedList& feeds,
                                              const std::vector<TensorName>& fetches) {
  const Executable exe = testing::CpuExecutable(graph, feeds, fetches);
  std::vector<std::vector<int64_t>> post_ops;
  for (const Step& step : exe.steps) {
    if (step.callee != "conv2d") continue;
    Result<std::vector<int64_t>> ops = step.attrs.GetInts("post_ops");
    post_ops.push_back(ops.ok() ? *ops : std::vector<int64_t>{});
  }
  return post_ops;
}

TEST_CASE("a 1 x 1 convolution absorbs the depthwise convolution after it", "[cpu]") {
  if (testing::CompiledBackends().empty()) return;
  const FeedList feeds = {{"x", RandomTensor(f32, Shape{2, 16, 12, 12}, 0, 7, 0)}};
  using PostOps = std::vector<std::vector<int64_t>>;
  const int64_t kClip = 4, kRelu = 2, kDepthwise = 5;
  struct Case {
    const char* name;
    BlockForm form;
    PostOps post_ops;
  };
  const std::vector<Case> cases = {
      {"stride 1", {}, PostOps{{kClip, kDepthwise, kClip}, {}}},
      {"stride 2", {.stride = 2}, PostOps{{kClip, kDepthwise, kClip}, {}}},
      {"no depthwise bias, Relu",
       {.depthwise_bias = false, .relu6 = false},
       PostOps{{kClip, kDepthwise, kRelu}, {}}},
      {"padding 0 stays apart", {.pads = {0, 0, 0, 0}}, PostOps{{kClip}, {kClip}, {}}},
      {"a 3 x 3 expansion stays apart", {.expand_kernel = 3}, PostOps{{kClip}, {kClip}, {}}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Graph graph = InvertedResidual(c.form);
    CHECK(ConvPostOps(graph, feeds, {"y"}) == c.post_ops);
    CheckMatchesReference(graph, feeds);
  }
  // A fetched expansion stays a tensor of its own.
  Graph fetched = InvertedResidual({.fetch_expanded = true});
  CHECK(ConvPostOps(fetched, feeds, {"y", "expanded"}) == PostOps{{kClip}, {kClip}, {}});
}

}  // namespace
}  // namespace kiln
