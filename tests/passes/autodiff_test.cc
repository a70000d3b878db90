// The autodiff pass: summing over consumers, pruning, StopGradient, integer inputs, errors.
#include "passes/autodiff.h"

#include <catch2/catch.hpp>

#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "runtime/session.h"

using namespace kiln;

namespace {
std::vector<double> Eval(GraphBuilder& g, Value v, FeedList feeds = {}) {
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  Session s(*graph);
  auto out = s.Run(feeds, {v});
  INFO((out.ok() ? "" : out.error().ToString()));
  REQUIRE(out.ok());
  return out->at(0).ToDoubles();
}
}  // namespace

TEST_CASE("autodiff: a value with several consumers sums their gradients", "[grad][autodiff]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f64, {2});
  Value y = Sum(x * x + 3.0 * x + Exp(x));  // dy/dx = 2x + 3 + e^x
  auto dx = Gradients({y}, {x});
  REQUIRE(dx.ok());
  auto got = Eval(g, (*dx)[0], {{"x", Tensor::FromVector<double>({2}, {0, 1})}});
  CHECK(got[0] == Approx(4));
  CHECK(got[1] == Approx(5 + std::exp(1.0)));
}

TEST_CASE("autodiff: StopGradient, integers and unrelated xs", "[grad][autodiff]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f64, {});
  Value z = g.Placeholder("z", f64, {});
  Value y = x * StopGradient(x) + Cast(Cast(x, i32), f64);  // only the first factor differentiates
  auto grads = Gradients({y}, {x, z});
  REQUIRE(grads.ok());
  FeedList feeds = {{"x", Tensor::Scalar<double>(3)}, {"z", Tensor::Scalar<double>(1)}};
  CHECK(Eval(g, (*grads)[0], feeds) == std::vector<double>{3});
  CHECK(Eval(g, (*grads)[1], feeds) == std::vector<double>{0});  // y does not depend on z
}

TEST_CASE("autodiff: grad_ys weight the ys, several ys sum", "[grad][autodiff]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f64, {2});
  Value y1 = 2.0 * x, y2 = x * x;
  Value w = g.Constant(Tensor::FromVector<double>({2}, {10, 100}));
  auto dx = Gradients({y1, y2}, {x}, {w, Value()});
  REQUIRE(dx.ok());
  // d/dx (10*2x0 + 100*2x1 + x0^2 + x1^2) = (20 + 2 x0, 200 + 2 x1)
  CHECK(Eval(g, (*dx)[0], {{"x", Tensor::FromVector<double>({2}, {1, 2})}}) ==
        std::vector<double>{22, 204});
}

TEST_CASE("autodiff: variables and gradient node naming", "[grad][autodiff]") {
  GraphBuilder g;
  Value w = Variable(g, "w", f32, {3}, Initializer::Constant(2));
  Value loss = Sum(w * w).Named("loss");
  auto dw = Gradients({loss}, {w});
  REQUIRE(dw.ok());
  CHECK(Eval(g, (*dw)[0]) == std::vector<double>{4, 4, 4});
  CHECK((*dw)[0].node_name().rfind("gradients/", 0) == 0);
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  const Node* grad_node = graph->FindNode((*dw)[0].node_name());
  CHECK_THAT(grad_node->source,
             Catch::Contains("tests/passes/autodiff_test.cc:") && Catch::Contains("(gradient)"));
}

TEST_CASE("autodiff: errors", "[grad][autodiff]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f64, {2});
  Value i = g.Placeholder("i", i32, {2});
  CHECK_THAT(Gradients({i}, {x}).error().message(),
             Catch::Contains("only float tensors can be differentiated"));
  CHECK_THAT(Gradients({}, {x}).error().message(), Catch::Contains("no ys"));
  CHECK_THAT(Gradients({x}, {x}, {x, x}).error().message(), Catch::Contains("1 ys but 2 grad_ys"));
}
