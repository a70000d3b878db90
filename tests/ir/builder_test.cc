#include "ir/builder.h"

#include <catch2/catch.hpp>

#include "ir/ops/math.h"
#include "ir/ops/state.h"
#include "runtime/session.h"

using namespace kiln;

TEST_CASE("builder: a small graph runs on the reference session") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 3});
  Value w = Variable(g, "w", f32, {3}, Initializer::Constant(2.0));
  Value y = Relu(x * w - 1.0).Named("y");
  g.Output("y", y);
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  Session session(*graph);
  auto out = session.Run({{"x", Tensor::FromVector<float>({2, 3}, {1, 2, 3, -1, 0, 1})}}, {"y"});
  REQUIRE(out.ok());
  CHECK(out->at(0).ToDoubles() == std::vector<double>{1, 3, 5, 0, 0, 1});
  CHECK(graph->FindNode("y")->source.find("tests/ir/builder_test.cc:") == 0);
}
