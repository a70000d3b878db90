// conv-taps (passes/conv_taps.h): convolutions whose kernels overhang small inputs compute the
// same values and gradients with the padding-only taps dropped, in the compiled plans that run
// the pass (against the reference executor, which runs the graph as written), and the pass leaves
// alone what it cannot shorten.
#include "passes/conv_taps.h"

#include <catch2/catch.hpp>

#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "passes/autodiff.h"
#include "passes/pass_manager.h"
#include "runtime/session.h"
#include "tests/testing/backends.h"
#include "tests/testing/differential.h"
#include "tests/testing/eval.h"
#include "tests/testing/gradcheck_op.h"

using namespace kiln;

namespace {

// loss = sum(relu(conv(relu(conv(x, w1, stride 2, pad 1)), w2, pad 1)) * c): x [2, 3, 2, 2] ->
// [2, 4, 1, 1] (3x3 taps over 2x2, stride 2) -> [2, 5, 1, 1] (3x3 over 1x1), with its gradients.
Graph TwoSmallConvs() {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3, 2, 2});
  Value w1 = g.Placeholder("w1", f32, {4, 3, 3, 3});
  Value w2 = g.Placeholder("w2", f32, {5, 4, 3, 3});
  Value h = Relu(Conv2D(x, w1, {.strides = {2, 2}, .pads = {1, 1, 1, 1}}));
  Value y = Relu(Conv2D(h, w2, {.pads = {1, 1, 1, 1}}));
  Value c = g.Constant(testing::RandomTensor({2, 5, 1, 1}, 9).CastTo(f32));
  Value loss = Sum(y * c);
  g.Output("loss", loss);
  Result<std::vector<Value>> grads = Gradients({loss}, {x, w1, w2});
  REQUIRE(grads.ok());
  g.Output("dx", (*grads)[0]);
  g.Output("dw1", (*grads)[1]);
  g.Output("dw2", (*grads)[2]);
  return testing::BuildOrFail(g);
}

FeedList Feeds() {
  return {{"x", testing::RandomTensor({2, 3, 2, 2}, 1).CastTo(f32)},
          {"w1", testing::RandomTensor({4, 3, 3, 3}, 2).CastTo(f32)},
          {"w2", testing::RandomTensor({5, 4, 3, 3}, 3).CastTo(f32)}};
}

}  // namespace

TEST_CASE("conv-taps: small inputs give the same values and gradients, every backend",
          "[passes][conv]") {
  const Graph graph = TwoSmallConvs();
  const std::vector<TensorName> fetches = {"loss", "dx", "dw1", "dw2"};
  Session reference(graph, {.backend = "reference"});
  auto want = reference.Run(Feeds(), fetches);
  REQUIRE(want.ok());
  // The pass on its own, evaluated on the reference executor.
  Graph trimmed = graph;
  auto runs = RunPasses(trimmed, {"conv-taps"});
  INFO((runs.ok() ? std::string() : runs.error().ToString()));
  REQUIRE(runs.ok());
  CHECK(runs->at(0).changed);
  int pads = 0;
  for (const Node& n : trimmed.nodes()) pads += n.op == "Pad";
  CHECK(pads == 2);  // both filter gradients
  Session alone(trimmed, {.backend = "reference"});
  auto got = alone.Run(Feeds(), fetches);
  REQUIRE(got.ok());
  for (size_t i = 0; i < fetches.size(); ++i) {
    std::string why;
    const bool close = testing::CloseForDType(want->at(i), got->at(i), &why);
    INFO("fetch " << i << ": " << why);
    CHECK(close);
  }
  // The compiled backends run it in their plans.
  for (const std::string& backend : testing::CompiledBackends()) {
    INFO(backend);
    Session s(graph, {.backend = backend});
    auto out = s.Run(Feeds(), fetches);
    INFO((out.ok() ? std::string() : out.error().ToString()));
    REQUIRE(out.ok());
    for (size_t i = 0; i < fetches.size(); ++i) {
      std::string why;
      const bool close = testing::CloseForDType(want->at(i), out->at(i), &why);
      INFO("fetch " << i << ": " << why);
      CHECK(close);
    }
  }
}

TEST_CASE("conv-taps: leaves convolutions whose every tap reads the input, or unknown shapes",
          "[passes][conv]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {1, 2, 5, 5});
  Value any = g.Placeholder("any", f32, {-1, 2, 1, 1});
  Value w = g.Placeholder("w", f32, {3, 2, 3, 3});
  g.Output("y", Conv2D(x, w, {.pads = {1, 1, 1, 1}}));
  g.Output("dilated", Conv2D(x, w, {.pads = {1, 1, 1, 1}, .dilations = {2, 2}}));
  g.Output("unknown", Conv2D(any, w, {.pads = {1, 1, 1, 1}}));
  Graph graph = testing::BuildOrFail(g);
  auto runs = RunPasses(graph, {"conv-taps"});
  REQUIRE(runs.ok());
  CHECK_FALSE(runs->at(0).changed);
}
