// Gradients of op family "linalg" against float64 central differences, and Conv2D's backward ops
// (Conv2DBackpropInput, Conv2DBackpropFilter) against hand-computed values.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ir/op_registry.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "passes/autodiff.h"
#include "runtime/session.h"
#include "tests/testing/gradcheck_op.h"
#include "tests/testing/run_op.h"

using namespace kiln;
using Catch::Matchers::Contains;
using kiln::testing::CheckOpGradient;
using kiln::testing::RandomTensor;
using kiln::testing::RunOp;
using kiln::testing::TN;

namespace {

void CheckValues(const Tensor& t, const Shape& shape, const std::vector<double>& expected) {
  CHECK(t.shape() == shape);
  std::vector<double> got = t.ToDoubles();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(expected[i]));
  }
}

Tensor F64(Shape shape, std::vector<double> values) { return TN<double>(std::move(shape), values); }

// 0, 1, 2, ... in f64.
Tensor Iota(Shape shape) {
  std::vector<double> v(shape.NumElements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return F64(std::move(shape), v);
}

Tensor BackpropInput(const Tensor& dy, const Tensor& w, Shape x_shape,
                     const Conv2DOptions& o = {}) {
  return RunOp({dy, w, Tensor(f64, std::move(x_shape))},
               [&](GraphBuilder&, auto& v) { return Conv2DBackpropInput(v[0], v[1], v[2], o); });
}

Tensor BackpropFilter(const Tensor& x, const Tensor& dy, Shape w_shape,
                      const Conv2DOptions& o = {}) {
  return RunOp({x, dy, Tensor(f64, std::move(w_shape))},
               [&](GraphBuilder&, auto& v) { return Conv2DBackpropFilter(v[0], v[1], v[2], o); });
}

// The gradients of sum(make(inputs)^2) with respect to every input, fed to placeholders whose
// shapes are the inputs' (known) or all -1 (unknown).
std::vector<Tensor> SquaredSumGradients(const std::vector<Tensor>& inputs,
                                        const testing::MakeOpFn& make, bool known_shapes) {
  GraphBuilder g;
  std::vector<Value> xs;
  FeedList feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    Shape shape = inputs[i].shape();
    if (!known_shapes) shape = Shape(std::vector<int64_t>(shape.rank(), kUnknownDim));
    xs.push_back(g.Placeholder(name, f64, shape));
    feeds.emplace_back(name, inputs[i]);
  }
  Value y = make(g, xs);
  auto grads = Gradients({Sum(y * y)}, xs);
  INFO((grads.ok() ? "" : grads.error().ToString()));
  REQUIRE(grads.ok());
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  Session session(*graph);
  auto out = session.Run(feeds, std::vector<TensorName>(grads->begin(), grads->end()));
  INFO((out.ok() ? "" : out.error().ToString()));
  REQUIRE(out.ok());
  return *out;
}

// Gradients built with unknown (-1) dims must equal those built with the known shapes.
void CheckUnknownDims(const std::vector<Tensor>& inputs, const testing::MakeOpFn& make) {
  std::vector<Tensor> known = SquaredSumGradients(inputs, make, true);
  std::vector<Tensor> unknown = SquaredSumGradients(inputs, make, false);
  REQUIRE(known.size() == unknown.size());
  for (size_t i = 0; i < known.size(); ++i) {
    INFO("input " << i);
    CHECK(known[i].shape() == inputs[i].shape());
    CheckValues(unknown[i], known[i].shape(), known[i].ToDoubles());
  }
}

}  // namespace

TEST_CASE("linalg: Conv2DBackpropInput by hand", "[linalg][grad]") {
  Tensor w = F64({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor dy = F64({1, 1, 2, 2}, {1, 10, 100, 1000});
  SECTION("each dy element spreads w over its window") {
    CheckValues(BackpropInput(dy, w, {1, 1, 3, 3}), {1, 1, 3, 3},
                {1, 12, 20, 103, 1234, 2040, 300, 3400, 4000});
  }
  SECTION("asymmetric pads [top 1, left 0, bottom 0, right 1]") {
    // y00 = 3 x00 + 4 x01, y01 = 3 x01, y10 = x00 + 2 x01 + 3 x10 + 4 x11, y11 = x01 + 3 x11.
    CheckValues(BackpropInput(dy, w, {1, 1, 2, 2}, {.pads = {1, 0, 0, 1}}), {1, 1, 2, 2},
                {103, 1234, 300, 3400});
  }
  SECTION("stride 2: positions never read get zero") {
    CheckValues(BackpropInput(F64({1, 1, 2, 2}, {1, 2, 3, 4}), F64({1, 1, 1, 1}, {2}), {1, 1, 3, 3},
                              {.strides = {2, 2}}),
                {1, 1, 3, 3}, {2, 0, 4, 0, 0, 0, 6, 0, 8});
    CheckValues(BackpropInput(F64({1, 1, 1, 1}, {5}), w, {1, 1, 3, 3}, {.strides = {2, 2}}),
                {1, 1, 3, 3}, {5, 10, 0, 15, 20, 0, 0, 0, 0});
  }
  SECTION("dilation 2 along the width") {
    // y = x0 + 2 x2
    CheckValues(BackpropInput(F64({1, 1, 1, 1}, {5}), F64({1, 1, 1, 2}, {1, 2}), {1, 1, 1, 3},
                              {.dilations = {1, 2}}),
                {1, 1, 1, 3}, {5, 0, 10});
  }
  SECTION("channels and batch: dx[n, c] = sum over o of dy[n, o] w[o, c]") {
    CheckValues(BackpropInput(F64({2, 3, 1, 1}, {1, 10, 100, 2, 20, 200}),
                              F64({3, 2, 1, 1}, {1, 2, 3, 4, 5, 6}), {2, 2, 1, 1}),
                {2, 2, 1, 1}, {531, 642, 1062, 1284});
  }
  SECTION("groups: each output channel feeds back only its own group") {
    CheckValues(BackpropInput(F64({1, 2, 1, 1}, {1, 10}), F64({2, 1, 1, 1}, {2, 3}), {1, 2, 1, 1},
                              {.groups = 2}),
                {1, 2, 1, 1}, {2, 30});
  }
}

TEST_CASE("linalg: Conv2DBackpropFilter by hand", "[linalg][grad]") {
  Tensor dy = F64({1, 1, 2, 2}, {1, 10, 100, 1000});
  SECTION("dw[i, j] = sum of dy[oh, ow] x[oh + i, ow + j]") {
    CheckValues(BackpropFilter(Iota({1, 1, 3, 3}), F64({1, 1, 2, 2}, {1, 1, 1, 1}), {1, 1, 2, 2}),
                {1, 1, 2, 2}, {8, 12, 20, 24});
    CheckValues(BackpropFilter(Iota({1, 1, 3, 3}), dy, {1, 1, 2, 2}), {1, 1, 2, 2},
                {4310, 5421, 7643, 8754});
  }
  SECTION("asymmetric pads [top 1, left 0, bottom 0, right 1]") {
    // y00 = w10 x00 + w11 x01, y01 = w10 x01, y10 = w00 x00 + w01 x01 + w10 x10 + w11 x11,
    // y11 = w00 x01 + w10 x11.
    CheckValues(
        BackpropFilter(F64({1, 1, 2, 2}, {1, 2, 3, 4}), dy, {1, 1, 2, 2}, {.pads = {1, 0, 0, 1}}),
        {1, 1, 2, 2}, {2100, 200, 4321, 402});
  }
  SECTION("stride 2") {
    CheckValues(BackpropFilter(Iota({1, 1, 3, 3}), dy, {1, 1, 1, 1}, {.strides = {2, 2}}),
                {1, 1, 1, 1}, {8620});
  }
  SECTION("dilation 2 along the height") {
    // x is a column [0..4]; y[r] = w0 x[r] + w1 x[r + 2] for r = 0, 1, 2.
    CheckValues(BackpropFilter(Iota({1, 1, 5, 1}), F64({1, 1, 3, 1}, {1, 10, 100}), {1, 1, 2, 1},
                               {.dilations = {2, 1}}),
                {1, 1, 2, 1}, {210, 432});
  }
  SECTION("channels and batch: dw[o, c] = sum over n of dy[n, o] x[n, c]") {
    CheckValues(BackpropFilter(F64({2, 2, 1, 1}, {2, 3, 1, 1}),
                               F64({2, 3, 1, 1}, {1, 10, 100, 1, 1, 1}), {3, 2, 1, 1}),
                {3, 2, 1, 1}, {3, 4, 21, 31, 201, 301});
  }
  SECTION("groups") {
    CheckValues(BackpropFilter(F64({1, 2, 1, 1}, {2, 3}), F64({1, 2, 1, 1}, {5, 7}), {2, 1, 1, 1},
                               {.groups = 2}),
                {2, 1, 1, 1}, {10, 21});
  }
}

TEST_CASE("linalg: Conv2D backward ops inference and errors", "[linalg][grad]") {
  SECTION("unknown dims are filled from the other operands where they determine them") {
    GraphBuilder g;
    Value dx = Conv2DBackpropInput(g.Placeholder("dy", f32, {4, 6, -1, -1}),
                                   g.Placeholder("w", f32, {6, 3, 3, 3}),
                                   g.Placeholder("x", f32, {-1, -1, -1, 9}), {.groups = 2});
    Value dw = Conv2DBackpropFilter(g.Placeholder("x2", f32, {4, 6, 8, 8}),
                                    g.Placeholder("dy2", f32, {-1, 4, 6, 6}),
                                    g.Placeholder("w2", f32, {-1, -1, 3, -1}), {.groups = 3});
    REQUIRE(dx.valid());
    REQUIRE(dw.valid());
    CHECK(dx.shape() == Shape{4, 6, -1, 9});
    CHECK(dx.dtype() == f32);
    CHECK(dw.shape() == Shape{4, 2, 3, -1});
  }
  auto input_error = [](Shape dy, Shape w, Shape x, const Conv2DOptions& o = {}) {
    GraphBuilder g;
    Conv2DBackpropInput(g.Placeholder("dy", f32, std::move(dy)),
                        g.Placeholder("w", f32, std::move(w)),
                        g.Placeholder("x", f32, std::move(x)), o);
    Result<Graph> graph = g.Build();
    return graph.ok() ? std::string() : graph.error().message();
  };
  auto filter_error = [](Shape x, Shape dy, Shape w, const Conv2DOptions& o = {}) {
    GraphBuilder g;
    Conv2DBackpropFilter(g.Placeholder("x", f32, std::move(x)),
                         g.Placeholder("dy", f32, std::move(dy)),
                         g.Placeholder("w", f32, std::move(w)), o);
    Result<Graph> graph = g.Build();
    return graph.ok() ? std::string() : graph.error().message();
  };
  CHECK(input_error({1, 2, 3, 3}, {2, 1, 3, 3}, {1, 1, 5, 5}) == "");
  CHECK(filter_error({1, 1, 5, 5}, {1, 2, 3, 3}, {2, 1, 3, 3}) == "");
  CHECK_THAT(
      input_error({1, 2, 4, 3}, {2, 1, 3, 3}, {1, 1, 5, 5}),
      Contains("dy has shape [1, 2, 4, 3] but Conv2D of x_like [1, 1, 5, 5] and w [2, 1, 3, 3] "
               "gives [1, 2, 3, 3]"));
  CHECK_THAT(filter_error({2, 1, 5, 5}, {1, 2, 3, 3}, {2, 1, 3, 3}),
             Contains("dy has shape [1, 2, 3, 3] but Conv2D of x [2, 1, 5, 5] and w_like"));
  CHECK_THAT(filter_error({1, 1, 5, 5}, {1, 2, 3}, {2, 1, 3, 3}),
             Contains("dy has shape [1, 2, 3]"));
  CHECK_THAT(input_error({1, 2, 3, 3}, {2, 1, 3, 3}, {1, 5, 5}),
             Contains("x_like must have rank 4 [N, C, H, W], got shape [1, 5, 5]"));
  CHECK_THAT(filter_error({1, 1, 5, 5}, {1, 2, 3, 3}, {2, 3, 3}),
             Contains("w_like must have rank 4"));
  CHECK_THAT(input_error({1, 2, 3, 3}, {2, 2, 3, 3}, {1, 1, 5, 5}),
             Contains("x_like [1, 1, 5, 5] has 1 channels but w [2, 2, 3, 3]"));
  CHECK_THAT(filter_error({1, 4, 5, 5}, {1, 3, 3, 3}, {3, 2, 3, 3}, {.groups = 2}),
             Contains("output channels 3 (w_like [3, 2, 3, 3]) are not divisible by groups=2"));
  CHECK_THAT(input_error({1, 2, 3, 3}, {2, 1, 3, 3}, {1, 1, 5, 5}, {.strides = {0, 1}}),
             Contains("attribute 'strides' must be >= 1"));
  CHECK_THAT(filter_error({1, 1, 5, 5}, {1, 2, 3, 3}, {2, 1, 3, 3}, {.pads = {0, 0}}),
             Contains("attribute 'pads' must have 4 values, has 2"));
  CHECK_THAT(input_error({1, 2, 1, 1}, {2, 1, 3, 3}, {1, 1, 2, 2}),
             Contains("output height would be < 1"));
}

TEST_CASE("linalg: the backward ops check run-time shapes and are not differentiable",
          "[linalg][grad]") {
  GraphBuilder g;
  Value dy = g.Placeholder("dy", f64, {-1, -1, -1, -1});
  Value dx = Conv2DBackpropInput(dy, g.Constant(Tensor(f64, {1, 1, 2, 2})),
                                 g.Placeholder("x", f64, {-1, -1, -1, -1}));
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  Session session(*graph);
  FeedList feeds = {{"dy", Tensor(f64, {1, 1, 2, 2})}, {"x", Tensor(f64, {1, 1, 4, 4})}};
  auto out = session.Run(feeds, {dx});
  REQUIRE(!out.ok());
  CHECK_THAT(out.error().message(),
             Contains("dy has shape [1, 1, 2, 2] but Conv2D of x_like [1, 1, 4, 4]"));
  feeds[1].second = Tensor(f64, {1, 1, 3, 3});
  CHECK(session.Run(feeds, {dx}).ok());

  for (const char* op : {"Conv2DBackpropInput", "Conv2DBackpropFilter"}) {
    INFO(op);
    CHECK(OpRegistry::Global().Find(op)->not_differentiable);
  }
  for (const char* op : {"MatMul", "BiasAdd", "Conv2D"}) {
    INFO(op);
    CHECK(static_cast<bool>(OpRegistry::Global().Find(op)->grad));
  }
}

TEST_CASE("linalg gradients: MatMul with every transpose combination", "[grad][linalg]") {
  const int64_t m = 2, k = 3, n = 4;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      INFO("transpose_a=" << ta << " transpose_b=" << tb);
      Tensor a = RandomTensor(ta ? Shape{k, m} : Shape{m, k}, 1);
      Tensor b = RandomTensor(tb ? Shape{n, k} : Shape{k, n}, 2);
      CheckOpGradient({a, b}, [=](GraphBuilder&, auto& v) { return MatMul(v[0], v[1], ta, tb); });
      // Batched, with batch dims [2, 1] and [3] broadcasting to [2, 3].
      Tensor a3 = RandomTensor(ta ? Shape{2, 1, k, m} : Shape{2, 1, m, k}, 3);
      Tensor b3 = RandomTensor(tb ? Shape{3, n, k} : Shape{3, k, n}, 4);
      CheckOpGradient({a3, b3}, [=](GraphBuilder&, auto& v) { return MatMul(v[0], v[1], ta, tb); });
      // A matrix against a stack, and the reverse.
      CheckOpGradient({a, b3}, [=](GraphBuilder&, auto& v) { return MatMul(v[0], v[1], ta, tb); });
      CheckOpGradient({a3, b}, [=](GraphBuilder&, auto& v) { return MatMul(v[0], v[1], ta, tb); });
    }
  }
}

TEST_CASE("linalg gradients: MatMul with 1-D operands", "[grad][linalg]") {
  struct Case {
    Shape a, b;
    bool ta = false, tb = false;
  };
  for (const Case& c : std::vector<Case>{{{3}, {3}},
                                         {{3}, {3, 4}},
                                         {{2, 3}, {3}},
                                         {{3}, {2, 3, 4}},
                                         {{2, 1, 4, 3}, {3}},
                                         {{3}, {4, 3}, false, true},
                                         {{3, 2}, {3}, true, false},
                                         {{3}, {2, 4, 3}, true, true},
                                         {{2, 3, 4}, {3}, true, true}}) {
    INFO(c.a.ToString() << " @ " << c.b.ToString() << " ta=" << c.ta << " tb=" << c.tb);
    CheckOpGradient({RandomTensor(c.a, 5), RandomTensor(c.b, 6)},
                    [&](GraphBuilder&, auto& v) { return MatMul(v[0], v[1], c.ta, c.tb); });
  }
}

TEST_CASE("linalg gradients: MatMul with unknown dims", "[grad][linalg]") {
  CheckUnknownDims({RandomTensor({2, 1, 3, 4}, 7), RandomTensor({3, 5, 4}, 8)},
                   [](GraphBuilder&, auto& v) { return MatMul(v[0], v[1], false, true); });
  CheckUnknownDims({RandomTensor({3}, 9), RandomTensor({2, 3, 4}, 10)},
                   [](GraphBuilder&, auto& v) { return MatMul(v[0], v[1]); });
  CheckUnknownDims({RandomTensor({2, 3, 4}, 11), RandomTensor({3}, 12)},
                   [](GraphBuilder&, auto& v) { return MatMul(v[0], v[1], true); });
}

// MatMul(a, b, out_dtype f32) over bf16 operands is Cast(MatMul(a, b), f32) without the rounding;
// its gradients are those of the cast form: dy rounded to bf16, then the bf16 products.
TEST_CASE("linalg gradients: MatMul with a float32 out_dtype", "[grad][linalg]") {
  Tensor a = RandomTensor({3, 4}, 13).CastTo(bf16), b = RandomTensor({4, 2}, 14).CastTo(bf16);
  Tensor weight = RandomTensor({3, 2}, 15).CastTo(f32);
  std::vector<std::vector<double>> grads[2];
  for (bool out_f32 : {true, false}) {
    GraphBuilder g;
    Value va = g.Placeholder("a", bf16, a.shape()), vb = g.Placeholder("b", bf16, b.shape());
    Value y = out_f32 ? MatMul(va, vb, false, false, f32) : Cast(MatMul(va, vb), f32);
    Value loss = Sum(Mul(y, g.Constant(weight)));
    Result<std::vector<Value>> d = Gradients({loss}, {va, vb});
    REQUIRE(d.ok());
    g.Output("da", (*d)[0]);
    g.Output("db", (*d)[1]);
    Result<Graph> graph = g.Build();
    REQUIRE(graph.ok());
    Session session(*graph);
    Result<std::vector<Tensor>> out = session.Run({{"a", a}, {"b", b}}, {"da", "db"});
    REQUIRE(out.ok());
    for (const Tensor& t : *out) {
      CHECK(t.dtype() == bf16);
      grads[out_f32].push_back(t.ToDoubles());
    }
  }
  CHECK(grads[true] == grads[false]);
}

TEST_CASE("linalg gradients: BiasAdd sums dy over every axis but `axis`", "[grad][linalg]") {
  struct Case {
    Shape x;
    int64_t axis;
  };
  for (const Case& c : std::vector<Case>{{{2, 3}, 1},
                                         {{2, 3}, 0},
                                         {{2, 3, 4, 5}, 1},
                                         {{2, 3, 4, 5}, -1},
                                         {{2, 3, 4, 5}, -3},
                                         {{2, 3, 4}, 2}}) {
    INFO(c.x.ToString() << " axis " << c.axis);
    int64_t channels = c.x[c.axis < 0 ? c.axis + c.x.rank() : c.axis];
    Tensor x = RandomTensor(c.x, 13), bias = RandomTensor({channels}, 14);
    CheckOpGradient({x, bias}, [&](GraphBuilder&, auto& v) { return BiasAdd(v[0], v[1], c.axis); });
  }
  // dbias by hand: dy = ones [2, 3] -> 2 per channel.
  GraphBuilder g;
  Value x = g.Placeholder("x", f64, {-1, 3}), bias = g.Placeholder("b", f64, {3});
  auto grads = Gradients({BiasAdd(x, bias)}, {x, bias});
  REQUIRE(grads.ok());
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  auto out = Session(*graph).Run({{"x", RandomTensor({2, 3}, 15)}, {"b", RandomTensor({3}, 16)}},
                                 {(*grads)[0], (*grads)[1]});
  REQUIRE(out.ok());
  CheckValues(out->at(0), {2, 3}, {1, 1, 1, 1, 1, 1});
  CheckValues(out->at(1), {3}, {2, 2, 2});
  CheckUnknownDims({RandomTensor({2, 3, 4}, 17), RandomTensor({3}, 18)},
                   [](GraphBuilder&, auto& v) { return BiasAdd(v[0], v[1], -2); });
}

TEST_CASE("linalg gradients: Conv2D through its backward ops", "[grad][linalg]") {
  struct Case {
    const char* name;
    Shape x, w;
    Conv2DOptions o;
  };
  std::vector<Case> cases = {
      {"non-square image and kernel", {1, 1, 4, 5}, {1, 1, 2, 3}, {}},
      {"empty attribute lists mean the defaults",
       {1, 2, 4, 3},
       {2, 2, 2, 2},
       {.strides = {}, .pads = {}, .dilations = {}}},
      {"batch 2, channels, stride 2", {2, 3, 7, 6}, {4, 3, 3, 2}, {.strides = {2, 2}}},
      {"strides (1, 2), symmetric pads",
       {2, 2, 5, 6},
       {3, 2, 3, 3},
       {.strides = {1, 2}, .pads = {1, 1, 1, 1}}},
      {"asymmetric pads, stride 2 cuts off the last row",
       {1, 2, 6, 5},
       {2, 2, 3, 2},
       {.strides = {2, 2}, .pads = {2, 0, 0, 1}}},
      {"dilation 2", {1, 2, 7, 8}, {3, 2, 3, 2}, {.pads = {1, 2, 1, 2}, .dilations = {2, 2}}},
      {"dilation (2, 1), stride (2, 1)",
       {2, 1, 9, 5},
       {2, 1, 2, 3},
       {.strides = {2, 1}, .pads = {0, 1, 1, 0}, .dilations = {2, 1}}},
      {"groups 2", {2, 4, 5, 6}, {6, 2, 3, 3}, {.pads = {1, 1, 1, 1}, .groups = 2}},
      {"depthwise",
       {2, 3, 5, 5},
       {3, 1, 3, 3},
       {.strides = {2, 2}, .pads = {1, 1, 1, 1}, .groups = 3}},
      {"depthwise with multiplier 2",
       {1, 2, 6, 5},
       {4, 1, 2, 2},
       {.dilations = {2, 1}, .groups = 2}},
  };
  for (const Case& c : cases) {
    INFO(c.name << ": x " << c.x.ToString() << ", w " << c.w.ToString());
    CheckOpGradient({RandomTensor(c.x, 19), RandomTensor(c.w, 20)},
                    [&](GraphBuilder&, auto& v) { return Conv2D(v[0], v[1], c.o); });
  }
}

TEST_CASE("linalg gradients: Conv2D with unknown dims", "[grad][linalg]") {
  CheckUnknownDims(
      {RandomTensor({2, 4, 6, 5}, 21), RandomTensor({2, 2, 3, 2}, 22)}, [](GraphBuilder&, auto& v) {
        return Conv2D(v[0], v[1], {.strides = {2, 1}, .pads = {1, 0, 0, 2}, .groups = 2});
      });
}
