// Gradients of a model against PyTorch's autograd on the same weights and inputs. The fixtures
// are made by tests/data/torch/make_fixtures.py (Debian python3-torch, float64); kiln runs the
// model in f32 as a user would, so the comparison allows f32 rounding (rtol 1e-4).
#include <catch2/catch.hpp>

#include "ir/io/npy.h"
#include "ir/layers.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "passes/autodiff.h"
#include "runtime/session.h"

using namespace kiln;

namespace {
Tensor Fixture(const std::string& name) {
  Result<Tensor> t = ReadNpy(std::string(KILN_TEST_DATA_DIR) + "/torch/" + name + ".npy");
  INFO(name << ": " << (t.ok() ? "" : t.error().ToString()));
  REQUIRE(t.ok());
  return *t;
}
}  // namespace

TEST_CASE("torch: CNN gradients match PyTorch autograd", "[grad][torch]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 2, 6, 6});
  Value labels = g.Placeholder("labels", i64, {-1});
  Value h = nn::Conv2D(g.Scope("conv"), x, 4, 3, {.padding = 1});
  h = Relu(nn::BatchNorm(g.Scope("bn"), h, {.training = true}));
  h = MaxPool2D(h, {.kernel = {2, 2}});
  Value logits = nn::Dense(g.Scope("fc"), Flatten(h), 5);
  Value loss = SoftmaxCrossEntropy(logits, labels);
  // kiln variable name -> fixture name
  std::vector<std::pair<std::string, std::string>> params = {
      {"conv/w", "conv_w"},   {"conv/b", "conv_b"}, {"bn/gamma", "bn_gamma"},
      {"bn/beta", "bn_beta"}, {"fc/w", "fc_w"},     {"fc/b", "fc_b"}};
  std::vector<Value> wrt = {x};
  for (auto& [var, fixture] : params) wrt.push_back(*g.Find(var));
  auto grads = Gradients({loss}, wrt);
  REQUIRE(grads.ok());
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  Session session(*graph);
  FeedList feeds = {{"x", Fixture("x").CastTo(f32)}, {"labels", Fixture("labels")}};
  for (auto& [var, fixture] : params) feeds.emplace_back(var, Fixture(fixture).CastTo(f32));
  std::vector<TensorName> fetches = {loss};
  for (const Value& grad : *grads) fetches.emplace_back(grad);
  auto out = session.Run(feeds, fetches);
  INFO((out.ok() ? "" : out.error().ToString()));
  REQUIRE(out.ok());
  CHECK(out->at(0).GetDouble(0) == Approx(Fixture("loss").GetDouble(0)).epsilon(1e-5));
  std::vector<std::string> names = {"x"};
  for (auto& [var, fixture] : params) names.push_back(fixture);
  for (size_t k = 0; k < names.size(); ++k) {
    Tensor expected = Fixture("grad_" + names[k]);
    const Tensor& got = out->at(1 + k);
    INFO("gradient of " << names[k]);
    REQUIRE(got.shape() == expected.shape());
    for (int64_t i = 0; i < got.num_elements(); ++i)
      REQUIRE(got.GetDouble(i) == Approx(expected.GetDouble(i)).epsilon(1e-4).margin(1e-6));
  }
}
