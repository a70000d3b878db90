// Session: feed checks, pruning to what fetches and targets need, variables across runs.
#include "runtime/session.h"

#include <catch2/catch.hpp>

#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/state.h"
#include "ir/serialize.h"
#include "tests/testing/backends.h"
#include "tests/testing/temp_path.h"

using namespace kiln;

namespace {
struct Model {
  Graph graph;
};
Graph TwoBranchGraph() {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 2});
  Value unused = g.Placeholder("unused", i32, {});
  Value w = Variable(g, "w", f32, {2}, Initializer::Constant(3));
  Value y = (x * w).Named("y");
  // A branch that fails if it ever runs (integer division by zero).
  Value boom = Div(Cast(unused, i32), g.Scalar(0, i32)).Named("boom");
  g.Output("y", y);
  g.Output("boom", boom);
  Group({AssignAdd(w, g.Constant(Tensor::FromVector<float>({2}, {1, 1})))}, "step");
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  return *graph;
}
Tensor X(std::vector<float> v) {
  return Tensor::FromVector<float>({static_cast<int64_t>(v.size() / 2), 2}, v);
}
}  // namespace

TEST_CASE("session: runs only what the fetches need", "[session]") {
  Session s(TwoBranchGraph());
  auto out = s.Run({{"x", X({1, 2})}}, {"y"});
  REQUIRE(out.ok());
  CHECK(out->at(0).ToDoubles() == std::vector<double>{3, 6});
  // Fetching the failing branch needs its placeholder and then fails at run time, naming the node.
  auto missing = s.Run({}, {"boom"});
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message(),
             Catch::Contains("missing feed for placeholder 'unused' (i32[]"));
  CHECK_THAT(missing.error().message(), Catch::Contains("needed to compute 'boom'"));
  auto boom = s.Run({{"unused", Tensor::Scalar<int32_t>(1)}}, {"boom"});
  REQUIRE_FALSE(boom.ok());
  CHECK_THAT(boom.error().message(),
             Catch::Contains("node 'boom' (Div, built at tests/runtime/session_test.cc:"));
}

TEST_CASE("session: feed checks name the feed and what was expected", "[session][bad-input]") {
  Session s(TwoBranchGraph());
  auto unknown = s.Run({{"z", X({1, 2})}}, {"y"});
  CHECK_THAT(unknown.error().message(),
             Catch::Contains("feed 'z': no graph output or node named 'z'"));
  auto dtype = s.Run({{"x", Tensor::FromVector<int32_t>({1, 2}, {1, 2})}}, {"y"});
  CHECK_THAT(dtype.error().message(),
             Catch::Contains("feed 'x' has dtype i32 but placeholder 'x' expects f32"));
  auto shape = s.Run({{"x", Tensor::FromVector<float>({1, 3}, {1, 2, 3})}}, {"y"});
  CHECK_THAT(shape.error().message(),
             Catch::Contains("feed 'x' has shape [1, 3] but placeholder 'x' expects [-1, 2]"));
  auto rank = s.Run({{"x", Tensor::FromVector<float>({2}, {1, 2})}}, {"y"});
  CHECK_THAT(rank.error().message(), Catch::Contains("expects [-1, 2]"));
  auto twice = s.Run({{"x", X({1, 2})}, {"x:0", X({1, 2})}}, {"y"});
  CHECK_THAT(twice.error().message(), Catch::Contains("is fed twice"));
  auto nothing = s.Run({}, {});
  CHECK_THAT(nothing.error().message(), Catch::Contains("nothing to run"));
  auto bad_fetch = s.Run({{"x", X({1, 2})}}, {"y:7"});
  CHECK_THAT(bad_fetch.error().message(), Catch::Contains("fetch 'y:7'"));
}

TEST_CASE("session: variables persist across runs, targets run updates", "[session]") {
  Session s(TwoBranchGraph());
  REQUIRE(s.Run({}, {}, {"step"}).ok());
  REQUIRE(s.Run({}, {}, {"step"}).ok());
  auto out = s.Run({{"x", X({1, 1})}}, {"y", "w"});
  REQUIRE(out.ok());
  CHECK(out->at(0).ToDoubles() == std::vector<double>{5, 5});
  CHECK(out->at(1).ToDoubles() == std::vector<double>{5, 5});
  Session fresh(TwoBranchGraph());
  CHECK(fresh.Run({}, {"w"})->at(0).ToDoubles() == std::vector<double>{3, 3});
}

TEST_CASE("session: feeding an intermediate tensor overrides it and prunes its inputs",
          "[session]") {
  Session s(TwoBranchGraph());
  // "w" is fed: the variable is not read, and the fed value is used.
  auto out = s.Run({{"x", X({1, 1})}, {"w", Tensor::FromVector<float>({2}, {10, 20})}}, {"y", "w"});
  REQUIRE(out.ok());
  CHECK(out->at(0).ToDoubles() == std::vector<double>{10, 20});
  CHECK(out->at(1).ToDoubles() == std::vector<double>{10, 20});
  CHECK(s.variables().Find("w") == nullptr);  // never initialized: nothing read it
}

TEST_CASE("session: Values from the builder name feeds and fetches", "[session]") {
  GraphBuilder g;
  Value a = g.Placeholder("a", f64, {});
  Value b = Exp(a) + 1.0;
  Session s(*g.Build());
  auto out = s.Run({{a, Tensor::Scalar<double>(0)}}, {b});
  REQUIRE(out.ok());
  CHECK(out->at(0).GetDouble(0) == 2.0);
}

TEST_CASE("session: unknown backends and invalid graphs are reported by Run",
          "[session][bad-input]") {
  Session bad_backend(TwoBranchGraph(), {.backend = "tpu"});
  CHECK_THAT(
      bad_backend.Run({}, {"w"}).error().message(),
      Catch::Contains("unknown backend 'tpu' (available: auto, cpu, cuda, cuda-sim, reference)"));
  Graph broken = TwoBranchGraph();
  broken.mutable_nodes()[1].op = "Nope";
  Session s(broken);
  CHECK_THAT(s.Run({}, {"w"}).error().message(), Catch::Contains("unknown op 'Nope'"));
}

TEST_CASE("session: run-time shape errors from unknown dims name the node",
          "[session][bad-input]") {
  GraphBuilder g;
  Value p = g.Placeholder("p", f32, {-1});
  Value q = g.Placeholder("q", f32, {-1});
  Value sum = (p + q).Named("sum");
  Session s(*g.Build());
  auto out = s.Run({{"p", Tensor::FromVector<float>({2}, {1, 2})},
                    {"q", Tensor::FromVector<float>({3}, {1, 2, 3})}},
                   {sum});
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(out.error().message(), Catch::Contains("node 'sum' (Add, built at"));
  CHECK_THAT(out.error().message(), Catch::Contains("[2] and [3] do not broadcast"));
}

TEST_CASE("session: variable initializers are deterministic and seeded", "[session]") {
  auto init = [](Initializer i, Shape s) {
    GraphBuilder g;
    Variable(g, "v", f32, s, i);
    Session session(*g.Build());
    return session.Run({}, {"v"})->at(0);
  };
  CHECK(init(Initializer::Ones(), {3}).ToDoubles() == std::vector<double>{1, 1, 1});
  CHECK(init(Initializer::Zeros(), {2}).ToDoubles() == std::vector<double>{0, 0});
  Tensor u1 = init(Initializer::Uniform(-1, 1, 5), {1000});
  Tensor u2 = init(Initializer::Uniform(-1, 1, 5), {1000});
  Tensor u3 = init(Initializer::Uniform(-1, 1, 6), {1000});
  CHECK(u1.BitwiseEquals(u2));
  CHECK_FALSE(u1.BitwiseEquals(u3));
  double lo = 1, hi = -1, mean = 0;
  for (double v : u1.ToDoubles()) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    mean += v / 1000;
  }
  CHECK(lo >= -1);
  CHECK(hi < 1);
  CHECK(std::abs(mean) < 0.1);
  // he_normal on [O, I, kh, kw] = [64, 8, 3, 3]: stddev sqrt(2 / (8 * 9)) = 0.1667.
  Tensor he = init(Initializer::HeNormal(1), {64, 8, 3, 3});
  double sq = 0;
  for (double v : he.ToDoubles()) sq += v * v;
  CHECK(std::sqrt(sq / he.num_elements()) == Approx(0.1667).epsilon(0.05));
  // glorot_uniform on [100, 50]: limit sqrt(6 / 150) = 0.2.
  Tensor gl = init(Initializer::GlorotUniform(1), {100, 50});
  double m = 0;
  for (double v : gl.ToDoubles()) m = std::max(m, std::abs(v));
  CHECK(m <= 0.2);
  CHECK(m > 0.19);
  GraphBuilder g;
  Variable(g, "v", i32, {2}, Initializer::Normal(0, 1, 1));
  CHECK_THAT(g.Build().error().message(),
             Catch::Contains("initializer 'normal' needs a float dtype"));
}

TEST_CASE("session: the same tensor may be fetched several times", "[session]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2});
  Value y = Exp(x);
  Value z = y + y;
  Session s(*g.Build());
  auto out = s.Run({{"x", Tensor::FromVector<float>({2}, {0, 0})}}, {y, z, y, "x", "x"});
  REQUIRE(out.ok());
  CHECK(out->at(0).ToDoubles() == std::vector<double>{1, 1});
  CHECK(out->at(1).ToDoubles() == std::vector<double>{2, 2});
  CHECK(out->at(2).ToDoubles() == std::vector<double>{1, 1});
  CHECK(out->at(4).ToDoubles() == std::vector<double>{0, 0});
}

Tensor Filled(Shape shape, double value) {
  return Tensor::FromDoubles(f32, shape, std::vector<double>(shape.NumElements(), value));
}

TEST_CASE("session: kept copies of weights (packed, reordered) follow every change to them",
          "[session]") {
  // y = x @ w (the packed kernel's copy of w) or conv(x, w) (oneDNN's reordered w), both kept
  // across runs while w's version stays: each way w changes must show in the next y. In bf16,
  // w's bf16 copy is an invariant step's result (runtime/invariant_steps.h), kept the same way.
  const bool conv = GENERATE(false, true);
  const DType precision = GENERATE(f32, bf16);
  INFO((conv ? "conv" : "matmul") << " in " << DTypeName(precision));
  const Shape w_shape = conv ? Shape{16, 8, 1, 1} : Shape{40, 40};
  GraphBuilder g;
  const Shape x_shape = conv ? Shape{1, 8, 4, 4} : Shape{1, 40};
  Value x = g.Placeholder("x", f32, x_shape);
  Value w = Variable(g, "w", f32, w_shape, Initializer::Constant(1));
  g.Output("y", (conv ? Conv2D(x, w) : MatMul(x, w)).Named("y"));
  Group({AssignAdd(w, g.Constant(Filled(w_shape, 1.0)))}, "add_one");
  Group({Assign(w, w * 3.0)}, "triple");
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  Session s(*graph, SessionOptions{.precision = {.compute = precision}});
  // Inputs of 5 (conv: 8 channels) or 1 (matmul: 40 columns): y = 40 w everywhere.
  const Tensor ones = Filled(x_shape, conv ? 5.0 : 1.0);
  auto y0 = [&] {
    auto out = s.Run({{"x", ones}}, {"y"});
    REQUIRE(out.ok());
    return out->at(0).ToDoubles()[0];
  };
  CHECK(y0() == 40);
  CHECK(y0() == 40);
  REQUIRE(s.Run({}, {}, {"add_one"}).ok());  // in place: nothing else holds w
  CHECK(y0() == 80);
  REQUIRE(s.Run({}, {}, {"triple"}).ok());
  CHECK(y0() == 240);
  const std::string path = testing::TempPath("packed_weights.ckpt");
  REQUIRE(s.SaveCheckpoint(path).ok());
  REQUIRE(s.Run({}, {}, {"add_one"}).ok());
  CHECK(y0() == 280);
  REQUIRE(s.RestoreCheckpoint(path).ok());
  CHECK(y0() == 240);
  s.variables().Set("w", Filled(w_shape, 0.5));
  CHECK(y0() == 20);
}

TEST_CASE("Session: a graph file that leaves attributes at their defaults runs on every backend",
          "[session]") {
  // MatMul without transpose_a / transpose_b / out_dtype, as a hand-written file may have it.
  Result<Graph> g = GraphFromText(R"(format_version: 1
nodes { name: "x" op: "Placeholder" attrs { key: "dtype" value { dtype: DT_F32 } }
        attrs { key: "shape" value { shape { dims: 2 dims: 3 } } } }
nodes { name: "w" op: "Constant" attrs { key: "value" value { tensor { dtype: DT_F32
        shape { dims: 3 dims: 1 } data: "\000\000\200?\000\000\000@\000\000@@" } } } }
nodes { name: "y" op: "MatMul" inputs: "x" inputs: "w" }
outputs { name: "y" tensor: "y" })");
  INFO((g.ok() ? std::string() : g.error().ToString()));
  REQUIRE(g.ok());
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    Session s(*g, {.backend = backend});
    Result<std::vector<Tensor>> out =
        s.Run({{"x", Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6})}}, {"y"});
    INFO((out.ok() ? std::string() : out.error().ToString()));
    REQUIRE(out.ok());
    CHECK(out->at(0).ToDoubles() == std::vector<double>{14, 32});  // w = [1, 2, 3]
  }
}
