// Gradients of op family "array" against float64 central differences (known and unknown dims),
// and the backward ops (TileGrad, SliceGrad, PadGrad, GatherGrad, ConcatGrad) against
// hand-computed values.
#include <catch2/catch.hpp>
#include <cstdint>

#include "ir/op_registry.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "passes/autodiff.h"
#include "runtime/session.h"
#include "tests/testing/gradcheck_op.h"
#include "tools/lib/gradient_check.h"

using namespace kiln;
using Catch::Matchers::Contains;
using kiln::testing::CheckOpGradient;
using kiln::testing::MakeOpFn;
using kiln::testing::RandomTensor;
using Ints = std::vector<int64_t>;
using Doubles = std::vector<double>;

namespace {

constexpr int64_t kEnd = INT64_MAX;
constexpr int64_t kBegin = INT64_MIN;

Tensor Indices(Shape shape, std::vector<int64_t> v) {
  return Tensor::FromVector<int64_t>(shape, v);
}

// As CheckOpGradient, but every float input is a placeholder whose dims are all unknown (-1) at
// build time, so the gradient must follow run-time shapes; `out` is the output's run-time shape.
// The gradient graph must use op `expect_op` (when given), the run-time-shape path.
void CheckUnknownDims(const std::vector<Tensor>& inputs, Shape out, const MakeOpFn& make,
                      const char* expect_op = nullptr) {
  GraphBuilder g;
  std::vector<Value> values, xs;
  std::vector<std::string> wrt;
  FeedList feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!IsFloat(inputs[i].dtype())) {
      values.push_back(g.Constant(inputs[i]));
      continue;
    }
    std::string name = "in" + std::to_string(i);
    values.push_back(g.Placeholder(name, f64, Shape(Ints(inputs[i].rank(), kUnknownDim))));
    xs.push_back(values.back());
    wrt.push_back(name);
    feeds.emplace_back(name, inputs[i]);
  }
  Value y = make(g, values);
  REQUIRE(y.valid());
  Value loss = Sum(y * g.Constant(RandomTensor(out, 99))).Named("loss");
  REQUIRE(Gradients({loss}, xs).ok());
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  if (expect_op) {
    bool found = false;
    for (const Node& n : graph->nodes()) found = found || n.op == expect_op;
    INFO("the gradient should use " << expect_op);
    CHECK(found);
  }
  Result<std::vector<GradCheckResult>> results = CheckGradients(*graph, "loss", wrt, feeds);
  INFO((results.ok() ? "" : results.error().ToString()));
  REQUIRE(results.ok());
  for (const GradCheckResult& r : *results) {
    INFO("gradient with respect to " << r.wrt << "\n  symbolic: " << r.symbolic.Summary(12)
                                     << "\n  numeric:  " << r.numeric.Summary(12));
    CHECK(r.checked > 0);
    CHECK(r.max_rel_error <= 1e-6);
  }
}

// Runs the graph and returns the value of `v`.
Tensor Eval(GraphBuilder& g, Value v, const FeedList& feeds = {}) {
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  Session s(*graph);
  auto out = s.Run(feeds, {v});
  INFO((out.ok() ? "" : out.error().ToString()));
  REQUIRE(out.ok());
  return out->at(0);
}

Value Const(GraphBuilder& g, Shape shape, Doubles v) {
  return g.Constant(Tensor::FromDoubles(f64, std::move(shape), v));
}

}  // namespace

TEST_CASE("array gradients: Reshape, Squeeze, Unsqueeze, Flatten, Transpose", "[grad][array]") {
  Tensor x = RandomTensor({2, 1, 3, 2}, 1);
  auto check = [&](MakeOpFn make) { CheckOpGradient({x}, make); };
  check([](GraphBuilder&, auto& v) { return Reshape(v[0], {3, -1}); });
  check([](GraphBuilder&, auto& v) { return Reshape(v[0], {0, 0, 6}); });
  check([](GraphBuilder&, auto& v) { return Squeeze(v[0]); });
  check([](GraphBuilder&, auto& v) { return Squeeze(v[0], {-3}); });
  check([](GraphBuilder&, auto& v) { return Unsqueeze(v[0], {0, -1}); });
  for (int64_t axis : {0, 2, 4, -1}) {
    INFO("Flatten axis " << axis);
    check([axis](GraphBuilder&, auto& v) { return Flatten(v[0], axis); });
  }
  check([](GraphBuilder&, auto& v) { return Transpose(v[0]); });
  check([](GraphBuilder&, auto& v) { return Transpose(v[0], {2, 0, 3, 1}); });
  check([](GraphBuilder&, auto& v) { return Transpose(v[0], {1, 3, 2, 0}); });
}

TEST_CASE("array gradients: BroadcastTo and Tile", "[grad][array]") {
  CheckOpGradient({RandomTensor({3, 1}, 2)}, [](GraphBuilder&, auto& v) {
    return BroadcastTo(v[0], {2, 3, 4});
  });
  CheckOpGradient({RandomTensor({4}, 3)}, [](GraphBuilder&, auto& v) {
    return BroadcastTo(v[0], {3, 4});
  });
  CheckOpGradient({RandomTensor({}, 4)}, [](GraphBuilder&, auto& v) {
    return BroadcastTo(v[0], {2, 2});
  });
  Tensor x = RandomTensor({2, 3}, 5);
  for (Ints m : {Ints{1, 1}, Ints{3, 1}, Ints{1, 2}, Ints{2, 3}, Ints{0, 2}}) {
    INFO("Tile multiples " << Shape(m).ToString());
    CheckOpGradient({x}, [m](GraphBuilder&, auto& v) { return Tile(v[0], m); });
  }
  CheckOpGradient({RandomTensor({2, 1, 3}, 6)}, [](GraphBuilder&, auto& v) {
    return Tile(v[0], {2, 4, 1});
  });
}

TEST_CASE("array gradients: Concat and Split", "[grad][array]") {
  Tensor a = RandomTensor({2, 3}, 7), b = RandomTensor({2, 1}, 8), c = RandomTensor({2, 2}, 9);
  CheckOpGradient({a, b, c}, [](GraphBuilder&, auto& v) { return Concat({v[0], v[1], v[2]}, 1); });
  CheckOpGradient({a, b, c}, [](GraphBuilder&, auto& v) { return Concat({v[2], v[0], v[1]}, -1); });
  CheckOpGradient({a, RandomTensor({1, 3}, 10)}, [](GraphBuilder&, auto& v) {
    return Concat({v[0], v[1], v[0]}, 0);
  });
  CheckOpGradient({a}, [](GraphBuilder&, auto& v) { return Concat({v[0]}, 0); });

  Tensor x = RandomTensor({4, 6}, 11);
  for (int k = 0; k < 3; ++k) {  // each output alone: the others get zeros
    INFO("output " << k);
    CheckOpGradient({x}, [k](GraphBuilder&, auto& v) { return Split(v[0], 1, {1, 3, 2})[k]; });
  }
  CheckOpGradient({x}, [](GraphBuilder&, auto& v) {
    std::vector<Value> parts = SplitEven(v[0], -2, 2);
    return parts[0] * parts[1];  // both outputs contribute
  });
  CheckOpGradient({x}, [](GraphBuilder&, auto& v) {
    std::vector<Value> parts = SplitEven(v[0], 1, 3);
    return parts[0] + 2.0 * parts[1] - parts[2];
  });
}

TEST_CASE("array gradients: Slice with steps, negative indices and axes", "[grad][array]") {
  Tensor x = RandomTensor({5, 4}, 12);
  struct Case {
    Ints begins, ends, axes, steps;
  };
  for (const Case& s : std::vector<Case>{{{1}, {4}, {}, {}},
                                         {{0, 1}, {kEnd, 4}, {}, {2, 2}},
                                         {{-1}, {kBegin}, {0}, {-1}},
                                         {{3, -2}, {0, -100}, {-1, 0}, {-2, -2}},
                                         {{-3}, {100}, {-2}, {1}},
                                         {{2}, {2}, {1}, {1}}}) {
    INFO("begins " << Shape(s.begins).ToString() << " ends " << Shape(s.ends).ToString());
    CheckOpGradient({x}, [s](GraphBuilder&, auto& v) {
      return Slice(v[0], s.begins, s.ends, s.axes, s.steps);
    });
  }
}

TEST_CASE("array gradients: Pad in every mode, with crops", "[grad][array]") {
  Tensor x = RandomTensor({3, 4}, 13);
  for (const char* mode : {"constant", "reflect", "edge"}) {
    for (Ints pads : {Ints{1, 2, 0, 1}, Ints{2, 3, 2, 3}, Ints{-1, 1, 1, -2}, Ints{0, 0, 0, 0}}) {
      INFO(mode << " pads " << Shape(pads).ToString());
      CheckOpGradient({x}, [&](GraphBuilder&, auto& v) { return Pad(v[0], pads, mode, 0.5); });
    }
  }
  CheckOpGradient({x}, [](GraphBuilder&, auto& v) { return Pad(v[0], {5, 0, 0, 7}, "edge"); });
  CheckOpGradient({RandomTensor({2}, 14)}, [](GraphBuilder&, auto& v) {
    return Pad(v[0], {1, 1}, "reflect");
  });
}

TEST_CASE("array gradients: Gather with repeated and negative indices", "[grad][array]") {
  Tensor data = RandomTensor({4, 3}, 15);
  Tensor repeated = Indices({5}, {0, 2, 0, -1, 2});
  CheckOpGradient({data, repeated}, [](GraphBuilder&, auto& v) { return Gather(v[0], v[1]); });
  CheckOpGradient({data, Indices({2, 2}, {2, -3, 2, 2})},
                  [](GraphBuilder&, auto& v) { return Gather(v[0], v[1], 1); });
  CheckOpGradient({data, Indices({}, {-1})},
                  [](GraphBuilder&, auto& v) { return Gather(v[0], v[1], -2); });
  Tensor i32_indices = Tensor::FromVector<int32_t>({3}, {1, 1, 0});
  CheckOpGradient({RandomTensor({2, 3, 2}, 16), i32_indices},
                  [](GraphBuilder&, auto& v) { return Gather(v[0], v[1], -1); });
}

TEST_CASE("array gradients with unknown dims follow run-time shapes", "[grad][array]") {
  Tensor x = RandomTensor({2, 3, 2}, 17);
  CheckUnknownDims({x}, {3, 4}, [](GraphBuilder&, auto& v) { return Reshape(v[0], {3, -1}); });
  CheckUnknownDims({RandomTensor({2, 1, 3}, 18)}, {2, 3},
                   [](GraphBuilder&, auto& v) { return Squeeze(v[0], {1}); });
  CheckUnknownDims({x}, {2, 1, 3, 2}, [](GraphBuilder&, auto& v) { return Unsqueeze(v[0], {1}); });
  CheckUnknownDims({x}, {6, 2}, [](GraphBuilder&, auto& v) { return Flatten(v[0], 2); });
  CheckUnknownDims({x}, {3, 2, 2}, [](GraphBuilder&, auto& v) {
    return Transpose(v[0], {1, 0, 2});
  });
  CheckUnknownDims({RandomTensor({3, 1}, 19)}, {2, 3, 4}, [](GraphBuilder&, auto& v) {
    return BroadcastTo(v[0], {2, 3, 4});
  });
  CheckUnknownDims(
      {x}, {4, 3, 6},
      [](GraphBuilder&, auto& v) {
        return Tile(v[0], {2, 1, 3});
      },
      "TileGrad");
  CheckUnknownDims(
      {x, RandomTensor({2, 1, 2}, 20)}, {2, 4, 2},
      [](GraphBuilder&, auto& v) {
        return Concat({v[0], v[1]}, 1);
      },
      "ConcatGrad");
  CheckUnknownDims({x}, {2, 1, 2}, [](GraphBuilder&, auto& v) { return SplitEven(v[0], 1, 3)[1]; });
  CheckUnknownDims(
      {x}, {2, 2, 2}, [](GraphBuilder&, auto& v) { return Slice(v[0], {-1}, {kBegin}, {1}, {-2}); },
      "SliceGrad");
  for (const char* mode : {"constant", "reflect", "edge"}) {
    INFO(mode);
    CheckUnknownDims({x}, {2, 5, 1}, [mode](GraphBuilder&, auto& v) {
      return Pad(v[0], {0, 1, -1, 0, 1, 0}, mode);
    });
  }
  CheckUnknownDims(
      {x, Indices({4}, {1, -1, 1, 0})}, {2, 4, 2},
      [](GraphBuilder&, auto& v) { return Gather(v[0], v[1], 1); }, "GatherGrad");
}

TEST_CASE("array: TileGrad sums the tiles", "[grad][array]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f64, {-1});
  Value dx = TileGrad(Const(g, {6}, {1, 2, 3, 4, 5, 6}), x, {3});
  CHECK(dx.shape() == Shape{-1});
  CHECK(Eval(g, dx, {{"x", Tensor::FromDoubles(f64, {2}, {0, 0})}}).ToDoubles() == Doubles{9, 12});
  GraphBuilder g2;
  Value dx2 =
      TileGrad(Const(g2, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), Const(g2, {1, 2}, {0, 0}), {2, 2});
  CHECK(Eval(g2, dx2).ToDoubles() == Doubles{16, 20});

  GraphBuilder bad;
  TileGrad(Const(bad, {5}, {1, 2, 3, 4, 5}), Const(bad, {2}, {0, 0}), {3});
  Result<Graph> graph = bad.Build();
  REQUIRE_FALSE(graph.ok());
  CHECK_THAT(graph.error().message(),
             Contains("'dy' has shape [5], but the forward output's shape is [6]"));
  GraphBuilder bad2;
  TileGrad(Const(bad2, {6}, {1, 2, 3, 4, 5, 6}), Const(bad2, {2}, {0, 0}), {3, 1});
  REQUIRE_FALSE(bad2.Build().ok());
  CHECK_THAT(bad2.Build().error().message(), Contains("'multiples' [3, 1] must have one entry"));
}

TEST_CASE("array: SliceGrad scatters into zeros", "[grad][array]") {
  GraphBuilder g;
  Value x = Const(g, {5}, {9, 9, 9, 9, 9});  // only its shape matters
  Value dx = SliceGrad(Const(g, {3}, {1, 2, 3}), x, {4}, {kBegin}, {}, {-2});  // x[4], x[2], x[0]
  CHECK(Eval(g, dx).ToDoubles() == Doubles{3, 0, 2, 0, 1});
  GraphBuilder g2;
  Value x2 = g2.Placeholder("x", f64, {-1, -1});
  Value dx2 = SliceGrad(Const(g2, {2, 2}, {1, 2, 3, 4}), x2, {1}, {3}, {-1});
  CHECK(dx2.shape() == Shape{-1, -1});
  CHECK(Eval(g2, dx2, {{"x", Tensor(f64, {2, 3})}}).ToDoubles() == Doubles{0, 1, 2, 0, 3, 4});

  GraphBuilder bad;
  SliceGrad(Const(bad, {2}, {1, 2}), Const(bad, {5}, {0, 0, 0, 0, 0}), {1}, {4});
  REQUIRE_FALSE(bad.Build().ok());
  CHECK_THAT(bad.Build().error().message(),
             Contains("'dy' has shape [2], but the forward output's shape is [3]"));
}

TEST_CASE("array: PadGrad folds reflect and edge borders back", "[grad][array]") {
  auto pad_grad = [](Ints pads, const char* mode, Doubles dy) {
    GraphBuilder g;
    Value x = g.Placeholder("x", f64, {-1});
    Value d = Const(g, {static_cast<int64_t>(dy.size())}, dy);
    return Eval(g, PadGrad(d, x, pads, mode), {{"x", Tensor(f64, {3})}}).ToDoubles();
  };
  // reflect [x2 x1 | x0 x1 x2 | x1]; edge [x0 x0 | x0 x1 x2 | x2]; constant [v | x0 x1] (x2
  // cropped)
  CHECK(pad_grad({2, 1}, "reflect", {1, 2, 3, 4, 5, 6}) == Doubles{3, 12, 6});
  CHECK(pad_grad({2, 1}, "edge", {1, 2, 3, 4, 5, 6}) == Doubles{6, 4, 11});
  CHECK(pad_grad({1, -1}, "constant", {1, 2, 3}) == Doubles{2, 3, 0});
  CHECK(pad_grad({-1, 1}, "edge", {1, 2, 3}) == Doubles{0, 1, 5});  // [x1 x2 | x2]

  GraphBuilder g;  // 2-D edge: every element of a [1, 1] x receives everything
  Value dx =
      PadGrad(Const(g, {2, 3}, {1, 2, 3, 4, 5, 6}), Const(g, {1, 1}, {0}), {1, 1, 0, 1}, "edge");
  CHECK(Eval(g, dx).ToDoubles() == Doubles{21});

  GraphBuilder bad;
  PadGrad(Const(bad, {4}, {1, 2, 3, 4}), Const(bad, {3}, {0, 0, 0}), {2, 1}, "reflect");
  REQUIRE_FALSE(bad.Build().ok());
  CHECK_THAT(bad.Build().error().message(), Contains("forward output's shape is [6]"));
  GraphBuilder bad2;
  PadGrad(Const(bad2, {6}, {1, 2, 3, 4, 5, 6}), Const(bad2, {3}, {0, 0, 0}), {2, 1}, "wrap");
  REQUIRE_FALSE(bad2.Build().ok());
  CHECK_THAT(bad2.Build().error().message(), Contains("'mode' must be"));
}

TEST_CASE("array: GatherGrad scatter-adds, repeated indices accumulate", "[grad][array]") {
  GraphBuilder g;
  Value data = g.Placeholder("data", f64, {-1, 2});
  Value dy = Const(g, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Value dx = GatherGrad(dy, g.Constant(Indices({4}, {0, 2, 0, -1})), data);
  CHECK(dx.shape() == Shape{-1, 2});
  CHECK(Eval(g, dx, {{"data", Tensor(f64, {3, 2})}}).ToDoubles() == Doubles{6, 8, 0, 0, 10, 12});

  GraphBuilder g2;
  Value idx = g2.Constant(Tensor::FromVector<int32_t>({2}, {2, 2}));
  Value dx2 =
      GatherGrad(Const(g2, {2, 2}, {1, 2, 3, 4}), idx, Const(g2, {2, 3}, {0, 0, 0, 0, 0, 0}), -1);
  CHECK(Eval(g2, dx2).ToDoubles() == Doubles{0, 0, 3, 0, 0, 7});

  GraphBuilder g3;  // an index out of range is a run-time error naming it
  Value data3 = g3.Placeholder("data", f64, {-1});
  Value dx3 = GatherGrad(Const(g3, {1}, {1}), g3.Constant(Indices({1}, {3})), data3);
  Result<Graph> graph = g3.Build();
  REQUIRE(graph.ok());
  Session s(*graph);
  auto out = s.Run({{"data", Tensor(f64, {3})}}, {dx3});
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(out.error().message(), Contains("index 3 is out of range for axis 0 of size 3"));

  GraphBuilder bad;
  GatherGrad(Const(bad, {3, 2}, {1, 2, 3, 4, 5, 6}), bad.Constant(Indices({4}, {0, 0, 0, 0})),
             Const(bad, {3, 2}, {0, 0, 0, 0, 0, 0}));
  REQUIRE_FALSE(bad.Build().ok());
  CHECK_THAT(bad.Build().error().message(), Contains("forward output's shape is [4, 2]"));
}

TEST_CASE("array: ConcatGrad splits by the inputs' run-time sizes", "[grad][array]") {
  GraphBuilder g;
  Value a = g.Placeholder("a", f64, {2, -1}), b = g.Placeholder("b", f64, {-1, -1});
  std::vector<Value> dx = ConcatGrad(Const(g, {2, 3}, {1, 2, 3, 4, 5, 6}), {a, b}, -1);
  REQUIRE(dx.size() == 2);
  CHECK(dx[0].shape() == Shape{2, -1});
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  Session s(*graph);
  auto out = s.Run({{"a", Tensor(f64, {2, 1})}, {"b", Tensor(f64, {2, 2})}}, {dx[0], dx[1]});
  INFO((out.ok() ? "" : out.error().ToString()));
  REQUIRE(out.ok());
  CHECK((*out)[0].ToDoubles() == Doubles{1, 4});
  CHECK((*out)[1].ToDoubles() == Doubles{2, 3, 5, 6});
  CHECK((*out)[1].shape() == Shape{2, 2});

  GraphBuilder bad;
  ConcatGrad(Const(bad, {2, 3}, {1, 2, 3, 4, 5, 6}),
             {Const(bad, {2, 1}, {0, 0}), Const(bad, {2, 1}, {0, 0})}, 1);
  REQUIRE_FALSE(bad.Build().ok());
  CHECK_THAT(bad.Build().error().message(), Contains("forward output's shape is [2, 2]"));
}

TEST_CASE("array: which ops are differentiable", "[grad][array]") {
  const OpRegistry& r = OpRegistry::Global();
  for (const char* op : {"Shape", "OneHot", "Range", "TileGrad", "SliceGrad", "PadGrad",
                         "GatherGrad", "ConcatGrad"}) {
    INFO(op);
    REQUIRE(r.Find(op));
    CHECK(r.Find(op)->not_differentiable);
    CHECK_FALSE(r.Find(op)->grad);
  }
  for (const char* op : {"Reshape", "Transpose", "Concat", "Split", "Slice", "Gather", "Pad",
                         "Tile", "BroadcastTo", "Squeeze", "Unsqueeze", "Flatten"}) {
    INFO(op);
    REQUIRE(r.Find(op));
    CHECK(r.Find(op)->grad);
  }
}
