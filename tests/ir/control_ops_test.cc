// Control flow (ir/ops/control.h): Cond and WhileLoop built from C++ callables, run on every
// backend, saved and loaded, differentiated (against float64 central differences), and the
// mistakes a user makes refused with clear errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "ir/ops/array.h"
#include "ir/ops/control.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/serialize.h"
#include "passes/autodiff.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/session.h"
#include "tests/testing/backends.h"
#include "tests/testing/differential.h"
#include "tests/testing/eval.h"
#include "tools/lib/gradient_check.h"

using namespace kiln;
using kiln::testing::BuildOrFail;

namespace {

Tensor Vec(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::FromVector<float>(Shape{n}, v);
}

Result<std::vector<Tensor>> RunOn(const Graph& g, const std::string& backend, const FeedList& feeds,
                                  const std::vector<TensorName>& fetches) {
  Session s(g, {.backend = backend});
  return s.Run(feeds, fetches);
}

// y = pred ? x * 2 : x + 1
Graph DoubleOrIncrement() {
  GraphBuilder g;
  Value pred = g.Placeholder("pred", DType::kBool, {});
  Value x = g.Placeholder("x", f32, {3});
  std::vector<Value> y = Cond(
      pred, {x}, [](const std::vector<Value>& a) { return std::vector<Value>{a[0] * 2.0}; },
      [](const std::vector<Value>& a) { return std::vector<Value>{a[0] + 1.0}; });
  REQUIRE(y.size() == 1);
  g.Output("y", y[0]);
  return BuildOrFail(g);
}

// x * 2^n by a loop: (i, acc) -> (i + 1, acc * 2) while i < n.
Graph DoubleNTimes(int64_t max_iterations = -1) {
  GraphBuilder g;
  Value n = g.Placeholder("n", i64, {});
  Value x = g.Placeholder("x", f32, {2});
  std::vector<Value> out = WhileLoop(
      {g.Scalar(0, i64), x, n}, [](const std::vector<Value>& v) { return Less(v[0], v[2]); },
      [](const std::vector<Value>& v) {
        return std::vector<Value>{v[0] + 1.0, v[1] * 2.0, v[2]};
      },
      max_iterations);
  REQUIRE(out.size() == 3);
  g.Output("count", out[0]);
  g.Output("y", out[1]);
  return BuildOrFail(g);
}

// (i, x, w, n) -> (i + 1, x * w + sin(x), w, n) while i < n, stacking x * x of each iteration as
// scan output "rows" (`scan_rows` rows; -1: one per iteration) and loss = sum(rows * c) + sum(x).
Graph ScanLoss(int64_t max_iterations, int64_t scan_rows) {
  GraphBuilder g;
  Value n = g.Placeholder("n", i64, {});
  Value x = g.Placeholder("x", f32, {3});
  Value w = g.Placeholder("w", f32, {3});
  const std::vector<Value> vars = {g.Scalar(0, i64), x, w, n};
  std::vector<TensorType> types;
  for (const Value& v : vars) types.push_back(v.type());
  auto cond = BuildBody(
      types, [](const std::vector<Value>& v) { return std::vector<Value>{Less(v[0], v[3])}; });
  auto body = BuildBody(types, [](const std::vector<Value>& v) {
    return std::vector<Value>{v[0] + 1.0, v[1] * v[2] + Sin(v[1]), v[2], v[3], v[1] * v[1]};
  });
  REQUIRE(cond.ok());
  REQUIRE(body.ok());
  std::vector<Value> out = While(vars, *cond, *body, max_iterations, SourceLocation::current(), "",
                                 {.outputs = 1, .rows = scan_rows});
  REQUIRE(out.size() == 5);
  CHECK(out[4].shape() == Shape{scan_rows, 3});
  g.Output("rows", out[4]);
  Value c = g.Constant(Tensor::FromVector<float>(Shape{3}, {1.5f, -0.5f, 2.0f}));
  g.Output("loss", Sum(out[4] * c) + Sum(out[1]));
  return BuildOrFail(g);
}

// d loss / d x and d w (3 elements each) of `graph` fed `feeds`, against float64 differences.
void CheckXwGradients(const Graph& graph, const FeedList& feeds) {
  Result<std::vector<GradCheckResult>> results = CheckGradients(graph, "loss", {"x", "w"}, feeds);
  INFO((results.ok() ? std::string() : results.error().ToString()));
  REQUIRE(results.ok());
  for (const GradCheckResult& r : *results) {
    INFO(r.wrt);
    CHECK(r.checked == 3);
    CHECK(r.max_rel_error < 1e-6);
  }
}

}  // namespace

TEST_CASE("Cond runs the branch its condition picks, on every backend", "[control]") {
  const Graph g = DoubleOrIncrement();
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    for (bool pred : {true, false, true}) {
      auto out =
          RunOn(g, backend, {{"pred", Tensor::Scalar<bool>(pred)}, {"x", Vec({1, 2, 3})}}, {"y"});
      INFO((out.ok() ? std::string() : out.error().ToString()));
      REQUIRE(out.ok());
      CHECK(out->at(0).ToDoubles() ==
            (pred ? std::vector<double>{2, 4, 6} : std::vector<double>{2, 3, 4}));
    }
  }
}

TEST_CASE("Cond whose branches give different shapes has the dims that differ unknown",
          "[control]") {
  GraphBuilder g;
  Value pred = g.Placeholder("pred", DType::kBool, {});
  Value x = g.Placeholder("x", f32, {4});
  std::vector<Value> y = Cond(
      pred, {x}, [](const std::vector<Value>& a) { return std::vector<Value>{a[0]}; },
      [](const std::vector<Value>& a) { return std::vector<Value>{Slice(a[0], {0}, {2})}; });
  REQUIRE(y[0].valid());
  CHECK(y[0].shape() == Shape{-1});
  g.Output("y", y[0]);
  const Graph graph = BuildOrFail(g);
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    auto out = RunOn(graph, backend,
                     {{"pred", Tensor::Scalar<bool>(false)}, {"x", Vec({1, 2, 3, 4})}}, {"y"});
    REQUIRE(out.ok());
    CHECK(out->at(0).ToDoubles() == std::vector<double>{1, 2});
  }
}

TEST_CASE("WhileLoop runs its body while its condition holds, on every backend", "[control]") {
  const Graph g = DoubleNTimes();
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    for (int64_t n : {3, 0, 5}) {
      auto out = RunOn(g, backend, {{"n", Tensor::Scalar<int64_t>(n)}, {"x", Vec({1, -2})}},
                       {"count", "y"});
      INFO((out.ok() ? std::string() : out.error().ToString()));
      REQUIRE(out.ok());
      CHECK(out->at(0).GetInt(0) == n);
      const double scale = static_cast<double>(int64_t{1} << n);
      CHECK(out->at(1).ToDoubles() == std::vector<double>{scale, -2 * scale});
    }
  }
  // max_iterations stops it first.
  const Graph capped = DoubleNTimes(2);
  auto out = RunOn(capped, "reference", {{"n", Tensor::Scalar<int64_t>(10)}, {"x", Vec({1, 1})}},
                   {"count"});
  REQUIRE(out.ok());
  CHECK(out->at(0).GetInt(0) == 2);
}

TEST_CASE("a loop variable whose shape changes has its dims unknown until run time", "[control]") {
  // v = Concat(v, v) while size(v) < 10: [1] -> [2] -> [4] -> [8] -> [16].
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {1});
  std::vector<Value> out = WhileLoop(
      {x},
      [](const std::vector<Value>& v) {
        return Less(Cast(Prod(ShapeOf(v[0])), f32), v[0].builder()->Scalar(10));
      },
      [](const std::vector<Value>& v) {
        return std::vector<Value>{Concat({v[0], v[0]}, 0)};
      });
  REQUIRE(out[0].valid());
  CHECK(out[0].shape() == Shape{-1});
  g.Output("y", out[0]);
  const Graph graph = BuildOrFail(g);
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    auto r = RunOn(graph, backend, {{"x", Vec({3})}}, {"y"});
    INFO((r.ok() ? std::string() : r.error().ToString()));
    REQUIRE(r.ok());
    CHECK(r->at(0).shape() == Shape{16});
  }
}

TEST_CASE("graphs with Cond and WhileLoop survive a save and load", "[control]") {
  for (const Graph& g : {DoubleOrIncrement(), DoubleNTimes()}) {
    for (bool text : {false, true}) {
      Result<Graph> loaded =
          text ? GraphFromText(GraphToText(g)) : GraphFromBinary(*GraphToBinary(g));
      INFO((loaded.ok() ? std::string() : loaded.error().ToString()));
      REQUIRE(loaded.ok());
      const bool is_cond = loaded->FindNode("pred") != nullptr;
      FeedList feeds = {{"x", is_cond ? Vec({1, 2, 3}) : Vec({1, 2})}};
      if (is_cond)
        feeds.emplace_back("pred", Tensor::Scalar<bool>(true));
      else
        feeds.emplace_back("n", Tensor::Scalar<int64_t>(2));
      auto out = RunOn(*loaded, "reference", feeds, {"y"});
      REQUIRE(out.ok());
      CHECK(out->at(0).ToDoubles() ==
            (is_cond ? std::vector<double>{2, 4, 6} : std::vector<double>{4, 8}));
    }
  }
}

TEST_CASE("Cond's gradient matches float64 central differences in both branches", "[control]") {
  // loss = sum(pred ? x * w : sin(x) + w * w)
  GraphBuilder g;
  Value pred = g.Placeholder("pred", DType::kBool, {});
  Value x = g.Placeholder("x", f32, {3});
  Value w = g.Placeholder("w", f32, {3});
  std::vector<Value> y = Cond(
      pred, {x, w}, [](const std::vector<Value>& a) { return std::vector<Value>{a[0] * a[1]}; },
      [](const std::vector<Value>& a) { return std::vector<Value>{Sin(a[0]) + a[1] * a[1]}; });
  g.Output("loss", Sum(y[0]));
  const Graph graph = BuildOrFail(g);
  for (bool p : {true, false}) {
    INFO("pred " << p);
    const FeedList feeds = {{"pred", Tensor::Scalar<bool>(p)},
                            {"x", Vec({0.5f, -1.0f, 2.0f})},
                            {"w", Vec({1.5f, 0.25f, -0.75f})}};
    CheckXwGradients(graph, feeds);
  }
}

// (i, x, w, n) -> (i + 1, x * w + sin(x), w, n) while i < n; loss = sum(x_final * x_final).
Graph LoopLoss(int64_t max_iterations, bool with_gradients) {
  GraphBuilder g;
  Value n = g.Placeholder("n", i64, {});
  Value x = g.Placeholder("x", f32, {3});
  Value w = g.Placeholder("w", f32, {3});
  std::vector<Value> out = WhileLoop(
      {g.Scalar(0, i64), x, w, n}, [](const std::vector<Value>& v) { return Less(v[0], v[3]); },
      [](const std::vector<Value>& v) {
        return std::vector<Value>{v[0] + 1.0, v[1] * v[2] + Sin(v[1]), v[2], v[3]};
      },
      max_iterations);
  Value loss = Sum(out[1] * out[1]);
  g.Output("loss", loss);
  if (with_gradients) {
    Result<std::vector<Value>> grads = Gradients({loss}, {x, w});
    REQUIRE(grads.ok());
    g.Output("dx", (*grads)[0]);
    g.Output("dw", (*grads)[1]);
  }
  return BuildOrFail(g);
}

FeedList LoopFeeds(int64_t iterations) {
  return {{"n", Tensor::Scalar<int64_t>(iterations)},
          {"x", Vec({0.5f, -1.0f, 0.25f})},
          {"w", Vec({0.75f, 0.5f, -1.25f})}};
}

TEST_CASE("WhileLoop's gradient matches float64 central differences", "[control]") {
  for (int64_t max_iterations : {-1, 5}) {
    const Graph graph = LoopLoss(max_iterations, false);
    for (int64_t iterations : {3, 1, 0, 7}) {
      INFO(iterations << " iterations, at most " << max_iterations);
      CheckXwGradients(graph, LoopFeeds(iterations));
    }
  }
}

TEST_CASE("While's scan outputs stack a value of each iteration, on every backend", "[control]") {
  // x runs 0.5 -> 0.5 * 0.75 + sin(0.5) -> ...; row t is x * x entering iteration t.
  const std::vector<float> x0 = {0.5f, -1.0f, 0.25f}, w = {0.75f, 0.5f, -1.25f};
  auto rows_of = [&](int64_t iterations, int64_t rows) {
    std::vector<double> want, x(x0.begin(), x0.end());
    for (int64_t t = 0; t < iterations; ++t)
      for (size_t j = 0; j < 3; ++j) {
        want.push_back(static_cast<double>(static_cast<float>(x[j]) * static_cast<float>(x[j])));
        x[j] = static_cast<float>(static_cast<float>(x[j] * w[j]) +
                                  std::sin(static_cast<float>(x[j])));
      }
    want.resize(static_cast<size_t>(std::max(rows, iterations) * 3), 0.0);
    return want;
  };
  for (const std::string& backend : testing::AvailableBackends())
    for (int64_t scan_rows : {int64_t{-1}, int64_t{5}})
      for (int64_t iterations : {3, 0, 5}) {
        INFO(backend << ": " << iterations << " iterations, scan_rows " << scan_rows);
        auto out = RunOn(ScanLoss(scan_rows, scan_rows), backend, LoopFeeds(iterations), {"rows"});
        INFO((out.ok() ? std::string() : out.error().ToString()));
        REQUIRE(out.ok());
        const int64_t rows = scan_rows >= 0 ? scan_rows : iterations;
        CHECK(out->at(0).shape() == Shape{rows, 3});
        const std::vector<double> want = rows_of(iterations, rows), got = out->at(0).ToDoubles();
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
      }
  // An iteration past the last row fails, naming it.
  auto past = RunOn(ScanLoss(-1, 2), "reference", LoopFeeds(3), {"rows"});
  REQUIRE_FALSE(past.ok());
  CHECK_THAT(past.error().ToString(), Catch::Contains("which has scan_rows 2 rows"));
}

TEST_CASE("While's gradient through its scan outputs matches float64 central differences",
          "[control]") {
  for (int64_t scan_rows : {int64_t{-1}, int64_t{6}}) {
    const Graph graph = ScanLoss(scan_rows >= 0 ? 6 : -1, scan_rows);
    for (int64_t iterations : {4, 1, 0}) {
      INFO(iterations << " iterations, scan_rows " << scan_rows);
      CheckXwGradients(graph, LoopFeeds(iterations));
    }
  }
}

TEST_CASE("a loop with a maximum of iterations trains in a compiled plan", "[control][cpu]") {
  // Its gradient's record has static shapes, so the cpu backend compiles the whole plan (the
  // loops as steps whose bodies are compiled plans of their own) and agrees with the reference.
  const Graph graph = LoopLoss(5, true);
  Session reference(graph, {.backend = "reference"});
  const FeedList feeds = LoopFeeds(3);
  auto want = reference.Run(feeds, {"loss", "dx", "dw"});
  REQUIRE(want.ok());
  if (testing::CompiledBackends().empty()) return;
  Result<RunPlan> plan = reference.Plan(feeds, {"loss", "dx", "dw"});
  REQUIRE(plan.ok());
  cpu::CpuExecutor executor(1);
  VariableStore variables;
  auto got = executor.Execute(*plan, variables);
  INFO((got.ok() ? std::string() : got.error().ToString()));
  REQUIRE(got.ok());
  CHECK(executor.fallback_plans() == 0);
  for (size_t i = 0; i < want->size(); ++i) {
    std::string why;
    const bool close = testing::CloseForDType(want->at(i), got->at(i), &why);
    INFO("fetch " << i << ": " << why);
    CHECK(close);
  }
}

TEST_CASE("control flow refuses what it cannot do with clear errors", "[control]") {
  SECTION("a branch that uses a value of the enclosing graph") {
    GraphBuilder g;
    Value pred = g.Placeholder("pred", DType::kBool, {});
    Value x = g.Placeholder("x", f32, {2});
    Value outer = g.Placeholder("outer", f32, {2});
    Cond(
        pred, {x}, [&](const std::vector<Value>&) { return std::vector<Value>{outer}; },
        [](const std::vector<Value>& a) { return std::vector<Value>{a[0]}; });
    Result<Graph> graph = g.Build();
    REQUIRE_FALSE(graph.ok());
    CHECK_THAT(graph.error().ToString(), Catch::Contains("pass such values in as arguments"));
  }
  SECTION("a condition that is not a bool") {
    GraphBuilder g;
    Value pred = g.Placeholder("pred", f32, {});
    Value x = g.Placeholder("x", f32, {2});
    auto same = [](const std::vector<Value>& a) { return std::vector<Value>{a[0]}; };
    Cond(pred, {x}, same, same);
    Result<Graph> graph = g.Build();
    REQUIRE_FALSE(graph.ok());
    CHECK_THAT(graph.error().ToString(), Catch::Contains("must be a bool of one element"));
  }
  SECTION("a body that changes a loop variable's dtype") {
    GraphBuilder g;
    Value x = g.Placeholder("x", f32, {2});
    WhileLoop(
        {x}, [](const std::vector<Value>& v) { return Less(Sum(v[0]), v[0].builder()->Scalar(1)); },
        [](const std::vector<Value>& v) { return std::vector<Value>{Cast(v[0], i32)}; });
    Result<Graph> graph = g.Build();
    REQUIRE_FALSE(graph.ok());
    CHECK_THAT(graph.error().ToString(), Catch::Contains("its dtype and rank must stay"));
  }
  SECTION("the gradient of a loop whose variables change shape") {
    GraphBuilder g;
    Value x = g.Placeholder("x", f32, {1});
    std::vector<Value> out = WhileLoop(
        {x}, [](const std::vector<Value>& v) { return Less(Sum(v[0]), v[0].builder()->Scalar(9)); },
        [](const std::vector<Value>& v) {
          return std::vector<Value>{Concat({v[0], v[0]}, 0)};
        });
    Result<std::vector<Value>> grads = Gradients({Sum(out[0])}, {x});
    REQUIRE_FALSE(grads.ok());
    CHECK_THAT(grads.error().ToString(), Catch::Contains("a type that the body keeps"));
  }
}
