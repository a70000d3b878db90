// Op family "state": Variable reads, Assign/AssignAdd/AssignSub semantics, Identity, StopGradient.
#include <catch2/catch.hpp>

#include "ir/ops/math.h"
#include "ir/ops/state.h"
#include "runtime/session.h"
#include "tests/testing/differential.h"

using namespace kiln;

TEST_CASE("state: Assign ops update the variable and output the new value", "[state]") {
  GraphBuilder g;
  Value v = Variable(g, "v", i32, {3}, Initializer::Constant(10));
  Value delta = g.Constant(Tensor::FromVector<int32_t>({3}, {1, -2, 3}));
  AssignAdd(v, delta).Named("add");
  AssignSub(v, delta).Named("sub");
  Assign(v, g.Constant(Tensor::FromVector<int32_t>({3}, {7, 8, 9}))).Named("set");
  Session s(*g.Build());
  auto out = s.Run({}, {"add"});
  REQUIRE(out.ok());
  CHECK(out->at(0).ToInts() == std::vector<int64_t>{11, 8, 13});
  CHECK(out->at(0).dtype() == i32);
  CHECK(s.Run({}, {"sub"})->at(0).ToInts() == std::vector<int64_t>{10, 10, 10});
  CHECK(s.Run({}, {"set"})->at(0).ToInts() == std::vector<int64_t>{7, 8, 9});
  CHECK(s.Run({}, {"v"})->at(0).ToInts() == std::vector<int64_t>{7, 8, 9});
}

TEST_CASE("state: a value read earlier in a Run keeps its value after an Assign", "[state]") {
  GraphBuilder g;
  Value v = Variable(g, "v", f32, {}, Initializer::Constant(1));
  Identity(v).Named("before");
  Assign(v, v + 1.0).Named("assign");
  Session s(*g.Build());
  auto out = s.Run({}, {"before", "assign"});
  REQUIRE(out.ok());
  CHECK(out->at(0).GetDouble(0) == 1);
  CHECK(out->at(1).GetDouble(0) == 2);
  CHECK(s.Run({}, {"v"})->at(0).GetDouble(0) == 2);
}

TEST_CASE("state: a variable fetched in the run that assigns it gives the value it had when read",
          "[state]") {
  GraphBuilder g;
  Value v = Variable(g, "v", f32, {}, Initializer::Constant(1));
  Assign(v, v + 1.0).Named("assign");
  Graph graph = *g.Build();
  Session reference(graph, SessionOptions{.backend = "reference"});
  auto expected = reference.Run({}, {"v", "assign"});
  REQUIRE(expected.ok());
  CHECK(expected->at(0).GetDouble(0) == 1);
  CHECK(expected->at(1).GetDouble(0) == 2);
  testing::CheckCompiledMatchesReference(graph, {}, {"v", "assign"}, *expected);
}

TEST_CASE("state: AssignAdd and AssignSub with a scale update by scale * value, every backend",
          "[state]") {
  GraphBuilder g;
  Value w = Variable(g, "w", f32, {4}, Initializer::Constant(1));
  Value d = Variable(g, "d", f64, {2}, Initializer::Constant(2));
  Value grad = g.Constant(Tensor::FromVector<float>({4}, {1, -2, 3, 0.5f}));
  Value lr = g.Placeholder("lr", f32, {});
  AssignSub(w, grad, lr).Named("descend");
  AssignAdd(d, g.Constant(Tensor::FromVector<double>({2}, {1, 3})), g.Scalar(0.25, f64))
      .Named("ascend");
  Graph graph = *g.Build();
  const FeedList feeds = {{"lr", Tensor::Scalar<float>(0.5f)}};
  Session reference(graph, SessionOptions{.backend = "reference"});
  auto expected = reference.Run(feeds, {"descend", "ascend"});
  REQUIRE(expected.ok());
  CHECK(expected->at(0).ToDoubles() == std::vector<double>{0.5, 2, -0.5, 0.75});
  CHECK(expected->at(1).ToDoubles() == std::vector<double>{2.25, 2.75});
  testing::CheckCompiledMatchesReference(graph, feeds, {"descend", "ascend"}, *expected);

  GraphBuilder bad;
  Value i = Variable(bad, "i", i32, {2});
  AssignSub(i, bad.Constant(Tensor::FromVector<int32_t>({2}, {1, 2})), bad.Scalar(2, i32));
  Result<Graph> refused = bad.Build();
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message(), Catch::Contains("a scaled update needs a float variable"));
  GraphBuilder vector_scale;
  Value v = Variable(vector_scale, "v", f32, {2});
  Value two = vector_scale.Constant(Tensor::FromVector<float>({2}, {1, 2}));
  AssignSub(v, two, two);
  refused = vector_scale.Build();
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message(), Catch::Contains("the scale must be a scalar"));
}

TEST_CASE("state: control inputs order a read after an update", "[state]") {
  GraphBuilder g;
  Value v = Variable(g, "v", f32, {}, Initializer::Constant(1));
  Value step = Group({AssignAdd(v, g.Scalar(5))}, "step");
  Value after =
      g.AddOp("Identity", {g.Scalar(0)}, {}, SourceLocation::current(), "after", {step})[0];
  Session s(*g.Build());
  REQUIRE(s.Run({}, {after}).ok());
  CHECK(s.Run({}, {"v"})->at(0).GetDouble(0) == 6);  // the control input ran the update
}

TEST_CASE("state: Identity and StopGradient forward any dtype", "[state]") {
  GraphBuilder g;
  Value b = g.Constant(Tensor::FromVector<bool>({2}, {true, false}));
  Value h = g.Constant(Tensor::FromDoubles(bf16, {1}, {1.5}));
  Value ib = Identity(b).Named("ib");
  Value sh = StopGradient(h).Named("sh");
  Session s(*g.Build());
  auto out = s.Run({}, {ib, sh});
  REQUIRE(out.ok());
  CHECK(out->at(0).ToInts() == std::vector<int64_t>{1, 0});
  CHECK(out->at(1).dtype() == bf16);
  CHECK(out->at(1).GetDouble(0) == 1.5);
}

TEST_CASE("state: build-time errors of state ops", "[state]") {
  GraphBuilder g;
  Value v = Variable(g, "v", f32, {3});
  Assign(v, g.Constant(Tensor::FromVector<float>({2}, {1, 2})));
  Variable(g, "dyn", f32, {-1, 3});
  Variable(g, "odd", f32, {2}, Initializer{.kind = "orthogonal"});
  AssignAdd(g.Constant(Tensor::FromVector<float>({1}, {1})), g.Scalar(1));
  Result<Graph> built = g.Build();
  REQUIRE_FALSE(built.ok());
  const std::string& m = built.error().message();
  CHECK_THAT(m, Catch::Contains("cannot assign a value of shape [2] to a variable of shape [3]"));
  CHECK_THAT(m, Catch::Contains("a Variable needs a fully known shape, got [-1, 3]"));
  CHECK_THAT(m, Catch::Contains("unknown initializer 'orthogonal'"));
  // AssignAdd on a non-Variable is caught by the verifier at Build().
  GraphBuilder g2;
  AssignAdd(g2.Constant(Tensor::FromVector<float>({1}, {1})),
            g2.Constant(Tensor::FromVector<float>({1}, {1})));
  CHECK_THAT(g2.Build().error().message(), Catch::Contains("input 0 must be a Variable"));
}
