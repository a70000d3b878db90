// Op family "nn": inference and reference kernels against hand-checked values.
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <tuple>

#include "ir/op_registry.h"
#include "ir/ops/nn.h"
#include "tests/testing/run_op.h"

using namespace kiln;
using Catch::Contains;
using kiln::testing::RunOp;
using kiln::testing::RunOpError;
using kiln::testing::T1;
using kiln::testing::TN;

namespace {

void CheckClose(const Tensor& got, const std::vector<double>& want, double eps = 1e-5) {
  std::vector<double> g = got.ToDoubles();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    CHECK(g[i] == Approx(want[i]).margin(eps));
  }
}

// 1, 2, ..., n in the given shape.
Tensor Iota(Shape s) {
  std::vector<float> v(static_cast<size_t>(s.NumElements()));
  std::iota(v.begin(), v.end(), 1.0f);
  return TN<float>(std::move(s), v);
}

Pool2DOptions Pool(std::vector<int64_t> kernel, std::vector<int64_t> strides = {},
                   std::vector<int64_t> pads = {0, 0, 0, 0}, bool ceil_mode = false,
                   bool count_include_pad = false) {
  return {kernel, strides, pads, ceil_mode, count_include_pad};
}
Tensor MaxPool(const Tensor& x, const Pool2DOptions& o) {
  return RunOp({x}, [&o](GraphBuilder&, auto& v) { return MaxPool2D(v[0], o); });
}
Tensor AvgPool(const Tensor& x, const Pool2DOptions& o) {
  return RunOp({x}, [&o](GraphBuilder&, auto& v) { return AvgPool2D(v[0], o); });
}
// The build error of pooling a placeholder of `shape` ("" if it builds).
std::string PoolError(Shape shape, const Pool2DOptions& o, DType dtype = f32) {
  GraphBuilder g;
  MaxPool2D(g.Placeholder("x", dtype, std::move(shape)), o);
  Result<Graph> r = g.Build();
  return r.ok() ? "" : r.error().message();
}

// Builds the graph, runs it once on a fresh session, REQUIREs success.
std::vector<Tensor> RunGraph(const GraphBuilder& g, const std::vector<TensorName>& fetches,
                             const FeedList& feeds = {}) {
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? std::string("ok") : graph.error().ToString()));
  REQUIRE(graph.ok());
  Session session(*graph);
  Result<std::vector<Tensor>> out = session.Run(feeds, fetches);
  INFO((out.ok() ? std::string("ok") : out.error().ToString()));
  REQUIRE(out.ok());
  return *out;
}

}  // namespace

TEST_CASE("nn: max and avg pooling of a 4x4 image", "[nn]") {
  Tensor x = Iota({1, 1, 4, 4});  // rows 1-4, 5-8, 9-12, 13-16
  Tensor m = MaxPool(x, Pool({2, 2}));
  CHECK(m.shape() == Shape{1, 1, 2, 2});
  CheckClose(m, {6, 8, 14, 16});
  CheckClose(AvgPool(x, Pool({2, 2})), {3.5, 5.5, 11.5, 13.5});
  CheckClose(MaxPool(x, Pool({3, 3}, {1, 1})), {11, 12, 15, 16});
  CheckClose(AvgPool(x, Pool({3, 3}, {1, 1})), {6, 7, 10, 11});
  Tensor rect = MaxPool(x, Pool({2, 1}, {2, 1}));
  CHECK(rect.shape() == Shape{1, 1, 2, 4});
  CheckClose(rect, {5, 6, 7, 8, 13, 14, 15, 16});
  // Two planes (N=1, C=2) are pooled independently.
  CheckClose(MaxPool(Iota({1, 2, 2, 2}), Pool({2, 2})), {4, 8});
}

TEST_CASE("nn: pooling with padding", "[nn]") {
  Tensor x = Iota({1, 1, 4, 4});
  // Windows start at -1 and 1 in each dimension.
  Pool2DOptions o = Pool({3, 3}, {2, 2}, {1, 1, 1, 1});
  CheckClose(MaxPool(x, o), {6, 8, 14, 16});
  CheckClose(AvgPool(x, o), {14.0 / 4, 30.0 / 6, 57.0 / 6, 99.0 / 9});
  o.count_include_pad = true;
  CheckClose(AvgPool(x, o), {14.0 / 9, 30.0 / 9, 57.0 / 9, 99.0 / 9});
  // Max pooling ignores padded positions (it does not see zeros).
  std::vector<float> negated;
  for (double v : x.ToDoubles()) negated.push_back(static_cast<float>(-v));
  Tensor neg = TN<float>({1, 1, 4, 4}, negated);
  CheckClose(MaxPool(neg, Pool({3, 3}, {2, 2}, {1, 1, 1, 1})), {-1, -2, -5, -6});
  // Asymmetric pads in ONNX order [top, left, bottom, right].
  CheckClose(MaxPool(x, Pool({2, 2}, {2, 2}, {1, 0, 0, 0})), {2, 4, 10, 12});
  CheckClose(MaxPool(x, Pool({2, 2}, {2, 2}, {0, 1, 0, 0})), {5, 7, 13, 15});
  CHECK(MaxPool(x, Pool({2, 2}, {2, 2}, {0, 1, 0, 1})).shape() == Shape{1, 1, 2, 3});
}

TEST_CASE("nn: pooling with ceil_mode", "[nn]") {
  Tensor x5 = Iota({1, 1, 5, 5});  // rows 1-5, 6-10, ..., 21-25
  CHECK(MaxPool(x5, Pool({2, 2})).shape() == Shape{1, 1, 2, 2});
  Tensor m = MaxPool(x5, Pool({2, 2}, {}, {0, 0, 0, 0}, true));
  CHECK(m.shape() == Shape{1, 1, 3, 3});
  CheckClose(m, {7, 9, 10, 17, 19, 20, 22, 24, 25});
  std::vector<double> avg = {4, 6, 7.5, 14, 16, 17.5, 21.5, 23.5, 25};
  CheckClose(AvgPool(x5, Pool({2, 2}, {}, {0, 0, 0, 0}, true)), avg);
  // Without padding, count_include_pad changes nothing: the part of a ceil window past the
  // input is not padding (PyTorch).
  CheckClose(AvgPool(x5, Pool({2, 2}, {}, {0, 0, 0, 0}, true, true)), avg);

  // 4x4, kernel 3, stride 2, pads 1: windows start at -1, 1, 3; the last one covers row 3, the
  // bottom pad row 4 and row 5 beyond the padding.
  Tensor x4 = Iota({1, 1, 4, 4});
  Pool2DOptions o = Pool({3, 3}, {2, 2}, {1, 1, 1, 1}, true);
  CheckClose(MaxPool(x4, o), {6, 8, 8, 14, 16, 16, 14, 16, 16});
  CheckClose(AvgPool(x4, o), {3.5, 5, 6, 9.5, 11, 12, 13.5, 15, 16});
  o.count_include_pad = true;  // divisors 9 9 6 / 9 9 6 / 6 6 4
  CheckClose(AvgPool(x4, o), {14.0 / 9, 30.0 / 9, 2, 57.0 / 9, 11, 6, 4.5, 7.5, 4});

  // 5x5, kernel 2, stride 2, pads 1: ceil((5 + 2 - 2) / 2) + 1 = 4, but the 4th window would
  // start at 5, in the bottom/right padding, so it is dropped.
  Tensor d = MaxPool(x5, Pool({2, 2}, {2, 2}, {1, 1, 1, 1}, true));
  CHECK(d.shape() == Shape{1, 1, 3, 3});
  CheckClose(d, {1, 3, 5, 11, 13, 15, 21, 23, 25});
}

TEST_CASE("nn: pooling inference and errors", "[nn]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 3, -1, 8});
  Value y = MaxPool2D(x, Pool({2, 2}));
  CHECK(y.shape() == Shape{-1, 3, -1, 4});
  CHECK(y.dtype() == f32);
  CHECK(AvgPool2D(x, Pool({3, 3}, {1, 2}, {1, 1, 1, 0}, true)).shape() == Shape{-1, 3, -1, 4});
  auto out = RunGraph(g, {y}, {{"x", Iota({2, 3, 4, 8})}});
  CHECK(out[0].shape() == Shape{2, 3, 2, 4});

  const std::vector<std::tuple<Shape, Pool2DOptions, std::string>> cases = {
      {{1, 1, 4, 4}, Pool({}), "attribute 'kernel' must have 2 values [kH, kW], got []"},
      {{1, 1, 4, 4}, Pool({0, 2}), "'kernel' values must be >= 1, got [0, 2]"},
      {{1, 1, 4, 4}, Pool({2, 2}, {1}), "attribute 'strides' must have 2 values"},
      {{1, 1, 4, 4}, Pool({2, 2}, {0, 1}), "'strides' values must be >= 1"},
      {{1, 1, 4, 4}, Pool({2, 2}, {}, {1, 1}), "attribute 'pads' must have 4 values"},
      {{1, 1, 4, 4},
       Pool({2, 2}, {}, {-1, 0, 0, 0}),
       "'pads' [top, left, bottom, right] values must be >= 0"},
      {{1, 1, 4, 4},
       Pool({3, 2}, {}, {0, 2, 0, 0}),
       "= [0, 2, 0, 0] must each be smaller than the kernel [kH, kW] = [3, 2]"},
      {{1, 4, 4}, Pool({2, 2}), "expects a 4-D [N, C, H, W] input, got shape [1, 4, 4]"},
      {{1, 1, 2, 4},
       Pool({3, 3}),
       "input height 2 plus padding 0 is smaller than the kernel height 3"},
      {{1, 1, 4, 0}, Pool({1, 1}), "cannot pool an empty input: its width is 0"},
  };
  for (const auto& [shape, options, want] : cases)
    CHECK_THAT(PoolError(shape, options), Contains(want));
  CHECK_THAT(PoolError({1, 1, 4, 4}, Pool({2, 2}), i32),
             Contains("has dtype i32, expected one of"));

  GraphBuilder g2;
  Value x2 = g2.Placeholder("x", f32, {1, 1, 4, 4});
  g2.AddOp("MaxPool2D", {x2}, {}, SourceLocation::current());
  AttrMap a;
  a.Set("kernel", std::vector<int64_t>{2, 2});
  a.Set("count_include_pad", true);
  g2.AddOp("MaxPool2D", {x2}, a, SourceLocation::current());
  Result<Graph> r = g2.Build();
  REQUIRE(!r.ok());
  CHECK_THAT(r.error().message(), Contains("missing required attribute 'kernel'"));
  CHECK_THAT(r.error().message(), Contains("unknown attribute 'count_include_pad'"));

  // A run-time shape that is too small fails when the session runs.
  GraphBuilder g3;
  Value y3 = MaxPool2D(g3.Placeholder("x", f32, {1, 1, -1, 4}), Pool({3, 3}));
  Session session(*g3.Build());
  auto bad = session.Run({{"x", Iota({1, 1, 2, 4})}}, {y3});
  REQUIRE(!bad.ok());
  CHECK_THAT(bad.error().message(),
             Contains("input height 2 plus padding 0 is smaller than the kernel height 3"));
}

TEST_CASE("nn: GlobalAvgPool", "[nn]") {
  Tensor y = RunOp({TN<float>({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40})},
                   [](GraphBuilder&, auto& v) { return GlobalAvgPool(v[0]); });
  CHECK(y.shape() == Shape{1, 2, 1, 1});
  CheckClose(y, {2.5, 25});
  Tensor y3 = RunOp({TN<double>({2, 1, 3}, {1, 2, 3, 4, 5, 9})},
                    [](GraphBuilder&, auto& v) { return GlobalAvgPool(v[0]); });
  CHECK(y3.shape() == Shape{2, 1, 1});
  CHECK(y3.dtype() == f64);
  CheckClose(y3, {2, 6});

  GraphBuilder g;
  CHECK(GlobalAvgPool(g.Placeholder("x", f32, {-1, 4, -1, -1})).shape() == Shape{-1, 4, 1, 1});
  CHECK_THAT(RunOpError({TN<float>({2, 2}, {1, 2, 3, 4})},
                        [](GraphBuilder&, auto& v) { return GlobalAvgPool(v[0]); }),
             Contains("expects an input of rank >= 3 ([N, C, spatial...]), got shape [2, 2]"));
}

TEST_CASE("nn: BatchNorm in training and inference mode", "[nn]") {
  // x [N=2, C=2]: channel 0 holds {1, 3} (mean 2, biased var 1), channel 1 {10, 30} (20, 100).
  auto run = [](bool training, Tensor x, std::vector<float> mean, std::vector<float> var,
                double eps, std::vector<float> scale, std::vector<float> bias) {
    GraphBuilder g;
    auto outs = BatchNorm(g.Constant(x), g.Constant(T1<float>(scale)), g.Constant(T1<float>(bias)),
                          g.Constant(T1<float>(mean)), g.Constant(T1<float>(var)), eps, training);
    REQUIRE(outs.size() == 3);
    return RunGraph(g, {outs[0], outs[1], outs[2]});
  };
  Tensor x = TN<float>({2, 2}, {1, 10, 3, 30});
  auto train = run(true, x, {0, 0}, {1, 1}, 0.0, {1, 2}, {0, 1});
  CheckClose(train[0], {-1, -1, 1, 3});  // ch0: (x-2)/1; ch1: (x-20)/10 * 2 + 1
  CheckClose(train[1], {2, 20});
  CheckClose(train[2], {1, 100});
  auto infer = run(false, x, {1, 10}, {4, 25}, 0.0, {1, 2}, {0, 1});
  CheckClose(infer[0], {0, 1, 1, 9});  // ch0: (x-1)/2; ch1: (x-10)/5 * 2 + 1
  CheckClose(infer[1], {1, 10});
  CheckClose(infer[2], {4, 25});
  // epsilon is added to the variance: var 3 + eps 1 -> std 2.
  CheckClose(run(false, x, {1, 10}, {3, 0}, 1.0, {1, 1}, {0, 0})[0], {0, 0, 1, 20});

  // Rank 4, one channel over N=2, H=1, W=2: values {1, 2, 3, 6}, mean 3, biased var 14/4 = 3.5;
  // with eps 0.5 the std is 2.
  auto r4 = run(true, TN<float>({2, 1, 1, 2}, {1, 2, 3, 6}), {0}, {1}, 0.5, {1}, {0});
  CHECK(r4[0].shape() == Shape{2, 1, 1, 2});
  CheckClose(r4[0], {-1, -0.5, 0, 1.5});
  CheckClose(r4[1], {3});
  CheckClose(r4[2], {3.5});
}

TEST_CASE("nn: BatchNorm inference and errors", "[nn]") {
  auto build = [](Shape x, std::vector<Shape> params, double eps = 1e-5, bool training = false) {
    GraphBuilder g;
    std::vector<Value> p;
    for (size_t i = 0; i < params.size(); ++i)
      p.push_back(g.Placeholder("p" + std::to_string(i), f32, params[i]));
    auto outs = BatchNorm(g.Placeholder("x", f32, x), p[0], p[1], p[2], p[3], eps, training);
    Result<Graph> r = g.Build();
    std::vector<Shape> shapes;
    for (const Value& v : outs) shapes.push_back(v.valid() ? v.shape() : Shape{-42});
    return std::make_pair(shapes, r.ok() ? std::string() : r.error().message());
  };
  auto ok = build({-1, 3, -1}, {{3}, {3}, {3}, {3}});
  CHECK(ok.first == std::vector<Shape>{{-1, 3, -1}, {3}, {3}});
  CHECK(ok.second.empty());
  // The channel count comes from the parameters when x's is unknown.
  CHECK(build({-1, -1}, {{-1}, {5}, {-1}, {5}}).first == std::vector<Shape>{{-1, 5}, {5}, {5}});

  CHECK_THAT(build({2, 3}, {{4}, {3}, {3}, {3}}).second,
             Contains("'scale' has length 4 but x.shape[1] is 3 (x shape [2, 3])"));
  CHECK_THAT(build({2, -1}, {{4}, {3}, {3}, {3}}).second,
             Contains("'bias' has length 3 but the length of 'scale' is 4"));
  CHECK_THAT(build({2, 3}, {{3}, {3}, {1, 3}, {3}}).second,
             Contains("'mean' must be 1-D of length C (x.shape[1]), got shape [1, 3]"));
  CHECK_THAT(build({3}, {{3}, {3}, {3}, {3}}).second,
             Contains("x must have rank >= 2 (channels on axis 1), got shape [3]"));
  CHECK_THAT(build({2, 3}, {{3}, {3}, {3}, {3}}, -1.0).second,
             Contains("'epsilon' must be >= 0, got -1"));
  CHECK_THAT(build({0, 3}, {{3}, {3}, {3}, {3}}, 1e-5, true).second,
             Contains("training needs at least one value per channel, x has shape [0, 3]"));
  CHECK(build({0, 3}, {{3}, {3}, {3}, {3}}, 1e-5, false).second.empty());

  // An invalid input gives three invalid Values.
  auto invalid = BatchNorm(Value(), Value(), Value(), Value(), Value());
  REQUIRE(invalid.size() == 3);
  CHECK(!invalid[2].valid());
}

TEST_CASE("nn: BatchNormGrad inference and errors", "[nn]") {
  auto build = [](Shape dy, Shape x, std::vector<Shape> stats) {
    GraphBuilder g;
    std::vector<Value> s;
    for (size_t i = 0; i < stats.size(); ++i)
      s.push_back(g.Placeholder("s" + std::to_string(i), f32, stats[i]));
    auto outs =
        BatchNormGrad(g.Placeholder("dy", f32, dy), g.Placeholder("x", f32, x), s[0], s[1], s[2]);
    Result<Graph> r = g.Build();
    std::vector<Shape> shapes;
    for (const Value& v : outs) shapes.push_back(v.valid() ? v.shape() : Shape{-42});
    return std::make_pair(shapes, r.ok() ? std::string() : r.error().message());
  };
  // dy's known dims fill x's unknown ones; C may come from the statistics.
  auto ok = build({4, -1, 5}, {-1, -1, 5}, {{3}, {-1}, {3}});
  CHECK(ok.second.empty());
  CHECK(ok.first == std::vector<Shape>{{4, 3, 5}, {3}, {3}});
  CHECK_THAT(build({2, 3, 4}, {2, 3, 5}, {{3}, {3}, {3}}).second,
             Contains("dy [2, 3, 4] must have x's shape [2, 3, 5]"));
  CHECK_THAT(build({2, 3}, {2, 3}, {{3}, {4}, {3}}).second,
             Contains("'mean' has length 4 but x.shape[1] is 3"));
  CHECK_THAT(build({0, 3}, {0, 3}, {{3}, {3}, {3}}).second,
             Contains("training needs at least one value per channel"));
}

TEST_CASE("nn: LayerNorm", "[nn]") {
  // Rows {1, 3} and {10, 30}: both normalize to {-1, 1}; then * scale {2, 3} + bias {1, 0}.
  Tensor y = RunOp({TN<float>({2, 2}, {1, 3, 10, 30}), T1<float>({2, 3}), T1<float>({1, 0})},
                   [](GraphBuilder&, auto& v) { return LayerNorm(v[0], v[1], v[2], -1, 0.0); });
  CheckClose(y, {-1, 3, -1, 3});
  // axis 1 of [2, 2, 2]: {1, 2, 3, 6} has mean 3, var 3.5 (+ eps 0.5 -> std 2); {0, 0, 0, 0} -> 0.
  Tensor y2 = RunOp({TN<float>({2, 2, 2}, {1, 2, 3, 6, 0, 0, 0, 0}),
                     TN<float>({2, 2}, {1, 1, 1, 1}), TN<float>({2, 2}, {0, 0, 0, 1})},
                    [](GraphBuilder&, auto& v) { return LayerNorm(v[0], v[1], v[2], 1, 0.5); });
  CheckClose(y2, {-1, -0.5, 0, 2.5, 0, 0, 0, 1});
  // The default epsilon 1e-5 barely changes a unit variance.
  Tensor y3 = RunOp({TN<double>({1, 2}, {1, 3}), T1<double>({1, 1}), T1<double>({0, 0})},
                    [](GraphBuilder&, auto& v) { return LayerNorm(v[0], v[1], v[2]); });
  CheckClose(y3, {-1 / std::sqrt(1 + 1e-5), 1 / std::sqrt(1 + 1e-5)}, 1e-12);

  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, -1});
  CHECK(LayerNorm(x, g.Placeholder("s", f32, {4}), g.Placeholder("b", f32, {-1})).shape() ==
        Shape{-1, 4});
  auto err = [](Shape x, Shape s, Shape b, int64_t axis = -1, double eps = 1e-5) {
    GraphBuilder g;
    LayerNorm(g.Placeholder("x", f32, x), g.Placeholder("s", f32, s), g.Placeholder("b", f32, b),
              axis, eps);
    Result<Graph> r = g.Build();
    return r.ok() ? std::string() : r.error().message();
  };
  CHECK(err({2, 3, 4}, {3, 4}, {3, 4}, 1).empty());
  CHECK_THAT(err({2, 2}, {3}, {2}), Contains("'scale' must have shape x.shape[1:] = [2], got [3]"));
  CHECK_THAT(err({2, 3, 4}, {3, 4}, {4}, -2),
             Contains("'bias' must have shape x.shape[1:] = [3, 4], got [4]"));
  CHECK_THAT(err({2, 2}, {2}, {2}, 2),
             Contains("attribute 'axis': axis 2 is out of range for rank 2"));
  CHECK_THAT(err({2, 2}, {2}, {2}, -1, -0.5), Contains("'epsilon' must be >= 0, got -0.5"));
  CHECK_THAT(err({}, {}, {}), Contains("x must have rank >= 1, got a scalar"));
}

TEST_CASE("nn: Softmax and LogSoftmax", "[nn]") {
  auto softmax = [](Tensor x, int64_t axis, bool log) {
    return RunOp({x}, [axis, log](GraphBuilder&, auto& v) {
      return log ? LogSoftmax(v[0], axis) : Softmax(v[0], axis);
    });
  };
  // softmax([1, 2, 3]) = e^k / (e + e^2 + e^3).
  CheckClose(softmax(T1<float>({1, 2, 3}), -1, false), {0.0900305732, 0.2447284711, 0.6652409558});
  CheckClose(softmax(T1<float>({1, 2, 3}), 0, true), {-2.4076059645, -1.4076059645, -0.4076059645});
  // Along axis 0 of [2, 3]: pairs (1, 2), (2, 4), (3, 6) -> sigmoid(-1), sigmoid(-2), sigmoid(-3).
  Tensor x = TN<float>({2, 3}, {1, 2, 3, 2, 4, 6});
  CheckClose(softmax(x, 0, false),
             {0.2689414214, 0.1192029220, 0.0474258732, 0.7310585786, 0.8807970780, 0.9525741268});
  CheckClose(softmax(x, -2, true),
             {std::log(0.2689414214), std::log(0.1192029220), std::log(0.0474258732),
              std::log(0.7310585786), std::log(0.8807970780), std::log(0.9525741268)});
  CheckClose(softmax(x, 1, false),
             {0.0900305732, 0.2447284711, 0.6652409558, 0.0158762400, 0.1173104840, 0.8668132760});
  // Large logits do not overflow.
  CheckClose(softmax(T1<float>({1000, 1000}), -1, false), {0.5, 0.5});
  CheckClose(softmax(T1<float>({1000, 0}), -1, true), {0, -1000});
  CheckClose(softmax(TN<double>({1, 2}, {-1000, 0}), 1, false), {0, 1});

  GraphBuilder g;
  CHECK(Softmax(g.Placeholder("x", f32, {-1, 5})).shape() == Shape{-1, 5});
  CHECK_THAT(
      RunOpError({T1<float>({1, 2})}, [](GraphBuilder&, auto& v) { return Softmax(v[0], 1); }),
      Contains("attribute 'axis': axis 1 is out of range for rank 1"));
  CHECK_THAT(RunOpError({Tensor::Scalar<float>(1)},
                        [](GraphBuilder&, auto& v) { return LogSoftmax(v[0]); }),
             Contains("x must have rank >= 1, got a scalar"));
  CHECK_THAT(
      RunOpError({T1<int32_t>({1, 2})}, [](GraphBuilder&, auto& v) { return Softmax(v[0]); }),
      Contains("has dtype i32, expected one of"));
}

TEST_CASE("nn: SoftmaxCrossEntropy", "[nn]") {
  auto ce = [](Tensor logits, Tensor labels) {
    return RunOp({logits, labels},
                 [](GraphBuilder&, auto& v) { return SoftmaxCrossEntropy(v[0], v[1]); });
  };
  // -log_softmax([1, 2, 3]) = {2.4076, 1.4076, 0.4076}; labels 2 and 0 -> mean 1.4076.
  Tensor logits = TN<float>({2, 3}, {1, 2, 3, 1, 2, 3});
  Tensor loss = ce(logits, T1<int64_t>({2, 0}));
  CHECK(loss.shape() == Shape{});
  CHECK(loss.dtype() == f32);
  CheckClose(loss, {1.4076059645});
  CheckClose(ce(logits, T1<int32_t>({2, 0})), {1.4076059645});
  CheckClose(ce(TN<double>({1, 4}, {0, 0, 0, 0}), T1<int32_t>({3})), {std::log(4.0)});
  CheckClose(ce(TN<float>({1, 2}, {1000, 0}), T1<int64_t>({1})), {1000});  // stable
  CheckClose(ce(TN<float>({1, 2}, {1000, 0}), T1<int64_t>({0})), {0});

  auto err = [](Tensor logits, Tensor labels) {
    return RunOpError({logits, labels},
                      [](GraphBuilder&, auto& v) { return SoftmaxCrossEntropy(v[0], v[1]); });
  };
  CHECK_THAT(err(logits, T1<int64_t>({0, 3})),
             Contains("label 3 at index 1 is out of range [0, 3)"));
  CHECK_THAT(err(logits, T1<int32_t>({-1, 0})),
             Contains("label -1 at index 0 is out of range [0, 3)"));
  CHECK_THAT(err(T1<float>({1, 2}), T1<int64_t>({0})),
             Contains("logits must be 2-D [N, C], got shape [2]"));
  CHECK_THAT(err(logits, TN<int64_t>({2, 1}, {0, 1})),
             Contains("labels must be 1-D [N], got shape [2, 1]"));
  CHECK_THAT(err(logits, T1<int64_t>({0, 1, 2})),
             Contains("logits have 2 rows (shape [2, 3]) but labels have 3 (shape [3])"));
  CHECK_THAT(err(logits, T1<float>({0, 1})), Contains("has dtype f32, expected one of {i32, i64}"));

  // Reduction "none": each row's loss.
  auto rows = [](Tensor logits, Tensor labels) {
    return RunOp({logits, labels},
                 [](GraphBuilder&, auto& v) { return SoftmaxCrossEntropy(v[0], v[1], "none"); });
  };
  Tensor per_row = rows(logits, T1<int64_t>({2, 0}));
  CHECK(per_row.shape() == Shape{2});
  CheckClose(per_row, {0.4076059645, 2.4076059645});
  CHECK_THAT(
      RunOpError({logits, T1<int64_t>({2, 0})},
                 [](GraphBuilder&, auto& v) { return SoftmaxCrossEntropy(v[0], v[1], "sum"); }),
      Contains("attribute 'reduction' must be \"mean\" or \"none\", got \"sum\""));
  // The gradient takes a scalar dloss (the mean's) or one per row.
  Tensor grad = RunOp({logits, T1<int64_t>({2, 0}), T1<float>({2, 0})}, [](GraphBuilder&, auto& v) {
    return SoftmaxCrossEntropyGrad(v[0], v[1], v[2]);
  });
  // Row 0 scaled by 2: 2 (softmax([1, 2, 3]) - onehot(2)); row 1 by 0.
  CheckClose(grad, {2 * 0.0900305732, 2 * 0.2447284711, 2 * (0.6652409558 - 1), 0, 0, 0});
  CHECK_THAT(
      RunOpError({logits, T1<int64_t>({2, 0}), T1<float>({1, 2, 3})},
                 [](GraphBuilder&, auto& v) { return SoftmaxCrossEntropyGrad(v[0], v[1], v[2]); }),
      Contains("dloss must be a scalar or [N] (one per row of [2, 3]), got shape [3]"));

  GraphBuilder g;
  Value l = SoftmaxCrossEntropy(g.Placeholder("logits", f64, {-1, 10}),
                                g.Placeholder("labels", i32, {-1}));
  CHECK(l.shape() == Shape{});
  CHECK(l.dtype() == f64);
}

TEST_CASE("nn: Dropout", "[nn]") {
  const int64_t n = 10000;
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 97) - 48.0f;
  Tensor x = T1<float>(values);
  auto build = [&x](GraphBuilder& g, double rate, int64_t seed, bool training) {
    auto outs = Dropout(g.Constant(x), rate, seed, training);
    REQUIRE(outs.size() == 2);
    return outs;
  };
  auto all_true = [](const Tensor& mask) {
    for (int64_t v : mask.ToInts())
      if (v != 1) return false;
    return true;
  };

  for (auto [rate, training] : {std::pair{0.0, true}, std::pair{0.5, false}}) {
    GraphBuilder g;
    auto outs = build(g, rate, 7, training);
    auto out = RunGraph(g, {outs[0], outs[1]});
    CHECK(out[0].ToDoubles() == x.ToDoubles());
    CHECK(out[1].dtype() == boolean);
    CHECK(all_true(out[1]));
  }

  // Training: about (1 - rate) of the elements are kept, kept ones are scaled by 1 / (1 - rate).
  for (double rate : {0.5, 0.2}) {
    GraphBuilder g;
    auto outs = build(g, rate, 3, true);
    auto out = RunGraph(g, {outs[0], outs[1]});
    std::vector<double> y = out[0].ToDoubles();
    std::vector<int64_t> mask = out[1].ToInts();
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      kept += mask[i];
      double want = mask[i] ? (rate == 0.5 ? 2.0 * values[i] : values[i] / 0.8) : 0.0;
      if (rate == 0.5)
        REQUIRE(y[i] == want);  // exact
      else
        REQUIRE(y[i] == Approx(want));
    }
    CHECK(std::abs(static_cast<double>(kept) / n - (1 - rate)) < 0.03);  // ~6 standard deviations
  }

  // Every run draws a new mask; a fresh session replays the same sequence.
  GraphBuilder g;
  auto outs = build(g, 0.5, 11, true);
  Graph graph = *g.Build();
  auto masks = [&graph, &outs]() {
    Session session(graph);
    std::vector<std::vector<int64_t>> m;
    for (int run = 0; run < 2; ++run) {
      auto out = session.Run({}, {outs[1]});
      REQUIRE(out.ok());
      m.push_back(out->at(0).ToInts());
    }
    return m;
  };
  auto first = masks(), second = masks();
  CHECK(first[0] != first[1]);
  CHECK(first == second);
  GraphBuilder g2;
  auto other_seed = build(g2, 0.5, 12, true);
  CHECK(RunGraph(g2, {other_seed[1]})[0].ToInts() != first[0]);

  // Inference and errors.
  GraphBuilder g3;
  auto d = Dropout(g3.Placeholder("x", f16, {-1, 4}), 0.1);
  CHECK(d[0].type() == TensorType{f16, Shape{-1, 4}});
  CHECK(d[1].type() == TensorType{boolean, Shape{-1, 4}});
  CHECK(OpRegistry::Global().Find("Dropout")->stateful);
  for (double bad : {1.0, -0.1, 1.5}) {
    GraphBuilder gb;
    auto o = Dropout(gb.Placeholder("x", f32, {4}), bad);
    REQUIRE(o.size() == 2);
    CHECK(!o[1].valid());
    CHECK_THAT(gb.Build().error().message(), Contains("attribute 'rate' must be in [0, 1), got"));
  }
}

// MaxPool2DGrad(x, dy) / AvgPool2DGrad(dy, x_like): hand-checked backward passes of pooling.
namespace {
Tensor MaxPoolGrad(const Tensor& x, const Tensor& dy, const Pool2DOptions& o) {
  return RunOp({x, dy}, [&o](GraphBuilder&, auto& v) { return MaxPool2DGrad(v[0], v[1], o); });
}
Tensor AvgPoolGrad(const Tensor& dy, const Tensor& x, const Pool2DOptions& o) {
  return RunOp({dy, x}, [&o](GraphBuilder&, auto& v) { return AvgPool2DGrad(v[0], v[1], o); });
}
}  // namespace

TEST_CASE("nn: MaxPool2DGrad routes dy to the first maximum of each window", "[nn]") {
  Tensor x = Iota({1, 1, 4, 4});
  Tensor dy4 = TN<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor dx = MaxPoolGrad(x, dy4, Pool({2, 2}));  // maxima 6, 8, 14, 16
  CHECK(dx.shape() == x.shape());
  CheckClose(dx, {0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4});
  CheckClose(MaxPoolGrad(x, dy4, Pool({3, 3}, {1, 1})),  // maxima 11, 12, 15, 16
             {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4});
  // Padding never receives gradient: the maxima of -x are -1, -2, -5, -6 (the padded zeros lose).
  std::vector<float> negated;
  for (double v : x.ToDoubles()) negated.push_back(static_cast<float>(-v));
  CheckClose(MaxPoolGrad(TN<float>({1, 1, 4, 4}, negated), dy4, Pool({3, 3}, {2, 2}, {1, 1, 1, 1})),
             {1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  // Overlapping windows accumulate: windows (1, 3), (3, 2), (2, 0) have maxima at 1, 1, 2.
  Tensor row = TN<float>({1, 1, 1, 4}, {1, 3, 2, 0});
  CheckClose(MaxPoolGrad(row, TN<float>({1, 1, 1, 3}, {1, 10, 100}), Pool({1, 2}, {1, 1})),
             {0, 11, 100, 0});
  // Ties go to the first element; a NaN counts as the maximum.
  Tensor ties = TN<float>({1, 1, 1, 4}, {5, 5, 5, 5});
  CheckClose(MaxPoolGrad(ties, TN<float>({1, 1, 1, 2}, {1, 2}), Pool({1, 2})), {1, 0, 2, 0});
  Tensor nan = TN<float>({1, 1, 1, 4}, {1, NAN, 3, NAN});
  CheckClose(MaxPoolGrad(nan, TN<float>({1, 1, 1, 1}, {7}), Pool({1, 4})), {0, 7, 0, 0});
  // ceil_mode: 5 wide, kernel 2: windows at 0, 2, 4 (the last one holds only element 4).
  Tensor x5 = TN<float>({1, 1, 1, 5}, {1, 2, 4, 3, 0});
  CheckClose(
      MaxPoolGrad(x5, TN<float>({1, 1, 1, 3}, {1, 2, 3}), Pool({1, 2}, {}, {0, 0, 0, 0}, true)),
      {0, 1, 2, 0, 3});
}

TEST_CASE("nn: AvgPool2DGrad spreads dy over each window", "[nn]") {
  Tensor x = Iota({1, 1, 4, 4});  // only its shape matters
  CheckClose(AvgPoolGrad(TN<float>({1, 1, 2, 2}, {1, 2, 3, 4}), x, Pool({2, 2})),
             {.25, .25, .5, .5, .25, .25, .5, .5, .75, .75, 1, 1, .75, .75, 1, 1});
  // Kernel 3, stride 2, pads 1: windows start at -1 and 1; real elements 4, 6, 6, 9, so each
  // window hands on 1, 1, 2, 2 to every real element it covers.
  Pool2DOptions o = Pool({3, 3}, {2, 2}, {1, 1, 1, 1});
  CheckClose(AvgPoolGrad(TN<float>({1, 1, 2, 2}, {4, 6, 12, 18}), x, o),
             {1, 2, 1, 1, 3, 6, 3, 3, 2, 4, 2, 2, 2, 4, 2, 2});
  o.count_include_pad = true;  // every divisor is 9: shares 1, 2, 3, 4
  CheckClose(AvgPoolGrad(TN<float>({1, 1, 2, 2}, {9, 18, 27, 36}), x, o),
             {1, 3, 2, 2, 4, 10, 6, 6, 3, 7, 4, 4, 3, 7, 4, 4});
  // ceil_mode: the last window holds element 4 only (divisor 1, with or without count_include_pad).
  Tensor x5 = Iota({1, 1, 1, 5});
  for (bool include : {false, true})
    CheckClose(AvgPoolGrad(TN<float>({1, 1, 1, 3}, {2, 4, 6}), x5,
                           Pool({1, 2}, {}, {0, 0, 0, 0}, true, include)),
               {1, 1, 2, 2, 6});
}

TEST_CASE("nn: pooling backward ops inference and errors", "[nn]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 3, -1, 8});
  Value dy = g.Placeholder("dy", f32, {2, -1, -1, 4});
  CHECK(MaxPool2DGrad(x, dy, Pool({2, 2})).type() == TensorType{f32, Shape{2, 3, -1, 8}});
  CHECK(AvgPool2DGrad(dy, x, Pool({2, 2})).type() == TensorType{f32, Shape{2, 3, -1, 8}});
  for (const char* op : {"MaxPool2DGrad", "AvgPool2DGrad"})
    CHECK(OpRegistry::Global().Find(op)->not_differentiable);
  CHECK(OpRegistry::Global().Find("AvgPool2DGrad")->FindAttr("count_include_pad") != nullptr);

  auto error = [](Shape xs, Shape dys, const Pool2DOptions& o, bool max) {
    GraphBuilder gb;
    Value xv = gb.Placeholder("x", f32, std::move(xs)),
          dyv = gb.Placeholder("dy", f32, std::move(dys));
    if (max)
      MaxPool2DGrad(xv, dyv, o);
    else
      AvgPool2DGrad(dyv, xv, o);
    Result<Graph> r = gb.Build();
    return r.ok() ? std::string() : r.error().message();
  };
  CHECK_THAT(
      error({1, 1, 4, 4}, {1, 1, 3, 3}, Pool({2, 2}), true),
      Contains("dy has shape [1, 1, 3, 3] but pooling x of shape [1, 1, 4, 4] gives [1, 1, 2, 2]"));
  CHECK_THAT(error({1, 2, 4, 4}, {1, 3, 2, 2}, Pool({2, 2}), false),
             Contains("but pooling x_like of shape [1, 2, 4, 4] gives"));
  CHECK_THAT(error({1, 4, 4}, {1, 1, 2, 2}, Pool({2, 2}), true),
             Contains("expects a 4-D [N, C, H, W] x, got shape [1, 4, 4]"));
  CHECK_THAT(error({1, 1, 4, 4}, {1, 2, 2}, Pool({2, 2}), false),
             Contains("expects a 4-D [N, C, OH, OW] dy, got shape [1, 2, 2]"));
  CHECK_THAT(error({1, 1, 4, 4}, {1, 1, 2, 2}, Pool({2}), true),
             Contains("attribute 'kernel' must have 2 values"));
  CHECK_THAT(error({1, 1, 4, 4}, {1, 1, 2, 2}, Pool({2, 2}, {}, {2, 0, 0, 0}), false),
             Contains("must each be smaller than the kernel"));

  // A dy that does not match the run-time shape of x fails when the session runs.
  GraphBuilder g2;
  Value dx = MaxPool2DGrad(g2.Placeholder("x", f32, {1, 1, -1, 4}),
                           g2.Placeholder("dy", f32, {1, 1, 2, 2}), Pool({2, 2}));
  Session session(*g2.Build());
  auto bad = session.Run({{"x", Iota({1, 1, 6, 4})}, {"dy", Iota({1, 1, 2, 2})}}, {dx});
  REQUIRE(!bad.ok());
  CHECK_THAT(bad.error().message(), Contains("dy has shape [1, 1, 2, 2] but pooling x"));
}
