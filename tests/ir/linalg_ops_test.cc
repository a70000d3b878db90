// Tests of op family "linalg" (MatMul, BiasAdd, Conv2D): inference, errors and reference kernels
// against hand-computed values.
#include <catch2/catch.hpp>
#include <limits>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/ops/linalg.h"
#include "ir/serialize.h"
#include "runtime/session.h"

using namespace kiln;

namespace {

Value F32(GraphBuilder& g, Shape shape, std::vector<float> values) {
  return g.Constant(Tensor::FromVector<float>(std::move(shape), values));
}

// 0, 1, 2, ... in f32.
Value Iota(GraphBuilder& g, Shape shape, float start = 0) {
  std::vector<float> v(Shape(shape).NumElements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return F32(g, std::move(shape), v);
}

Value Ones(GraphBuilder& g, Shape shape, float value = 1) {
  return F32(g, shape, std::vector<float>(shape.NumElements(), value));
}

// Builds the graph with `y` as its output and runs it.
Tensor Eval(GraphBuilder& g, Value y, const FeedList& feeds = {}) {
  REQUIRE(y.valid());
  g.Output("y", y);
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? std::string("ok") : graph.error().ToString()));
  REQUIRE(graph.ok());
  Session session(*graph);
  auto out = session.Run(feeds, {"y"});
  INFO((out.ok() ? std::string("ok") : out.error().ToString()));
  REQUIRE(out.ok());
  return out->at(0);
}

void CheckValues(const Tensor& t, const Shape& shape, const std::vector<double>& expected) {
  CHECK(t.shape() == shape);
  std::vector<double> got = t.ToDoubles();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(expected[i]));
  }
}

// The message of the error that Build() reports (empty if it succeeds).
std::string BuildError(const GraphBuilder& g) {
  Result<Graph> graph = g.Build();
  return graph.ok() ? std::string() : graph.error().message();
}

using Catch::Matchers::Contains;

}  // namespace

TEST_CASE("linalg: MatMul of 2-D matrices and transposes", "[linalg]") {
  GraphBuilder g;
  Value a = F32(g, {2, 3}, {1, 2, 3, 4, 5, 6});
  Value at = F32(g, {3, 2}, {1, 4, 2, 5, 3, 6});  // a transposed
  Value b = F32(g, {3, 2}, {7, 8, 9, 10, 11, 12});
  Value bt = F32(g, {2, 3}, {7, 9, 11, 8, 10, 12});   // b transposed
  const std::vector<double> ab = {58, 64, 139, 154};  // [1 2 3; 4 5 6] @ [7 8; 9 10; 11 12]
  SECTION("plain") { CheckValues(Eval(g, MatMul(a, b)), {2, 2}, ab); }
  SECTION("transpose_a") { CheckValues(Eval(g, MatMul(at, b, true)), {2, 2}, ab); }
  SECTION("transpose_b") { CheckValues(Eval(g, MatMul(a, bt, false, true)), {2, 2}, ab); }
  SECTION("both") { CheckValues(Eval(g, MatMul(at, bt, true, true)), {2, 2}, ab); }
  SECTION("a @ a^T") { CheckValues(Eval(g, MatMul(a, a, false, true)), {2, 2}, {14, 32, 32, 77}); }
  SECTION("a^T @ a") {
    CheckValues(Eval(g, MatMul(a, a, true, false)), {3, 3}, {17, 22, 27, 22, 29, 36, 27, 36, 45});
  }
}

TEST_CASE("linalg: MatMul broadcasts batch dims", "[linalg]") {
  GraphBuilder g;
  Value a = F32(g, {2, 1, 2, 3}, {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60});
  // b[0] picks columns 0 and 1, b[1] column 2 twice, b[2] sums the rows.
  Value b = F32(g, {3, 3, 2}, {1, 0, 0, 1, 0, 0, /**/ 0, 0, 0, 0, 1, 1, /**/ 1, 1, 1, 1, 1, 1});
  CheckValues(Eval(g, MatMul(a, b)), {2, 3, 2, 2},
              {1,  2,  4,  5,  3,  3,  6,  6,  6,  6,  15,  15,     // a[0] @ b[0..2]
               10, 20, 40, 50, 30, 30, 60, 60, 60, 60, 150, 150});  // a[1] @ b[0..2]
}

TEST_CASE("linalg: MatMul with 1-D operands", "[linalg]") {
  GraphBuilder g;
  Value v = F32(g, {3}, {1, 2, 3});
  Value a = F32(g, {2, 3}, {1, 2, 3, 4, 5, 6});
  Value b = F32(g, {3, 2}, {7, 8, 9, 10, 11, 12});
  SECTION("vector @ matrix") { CheckValues(Eval(g, MatMul(v, b)), {2}, {58, 64}); }
  SECTION("matrix @ vector") { CheckValues(Eval(g, MatMul(a, v)), {2}, {14, 32}); }
  SECTION("vector @ vector") { CheckValues(Eval(g, MatMul(v, v)), Shape{}, {14}); }
  SECTION("transpose_a is ignored for a 1-D a") {
    CheckValues(Eval(g, MatMul(v, b, true, false)), {2}, {58, 64});
  }
  SECTION("transpose_b is ignored for a 1-D b") {
    CheckValues(Eval(g, MatMul(a, v, false, true)), {2}, {14, 32});
  }
  SECTION("vector @ batch of matrices") {
    Value bs = F32(g, {3, 3, 2}, {1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1});
    CheckValues(Eval(g, MatMul(v, bs)), {3, 2}, {1, 2, 3, 3, 6, 6});
  }
  SECTION("batch of matrices @ vector") {
    Value as = F32(g, {2, 1, 3}, {1, 1, 1, 0, 0, 2});
    CheckValues(Eval(g, MatMul(as, v)), {2, 1}, {6, 6});
  }
}

TEST_CASE("linalg: MatMul on integers", "[linalg]") {
  GraphBuilder g;
  SECTION("i32") {
    Value a = g.Constant(Tensor::FromVector<int32_t>({2, 2}, {1, -2, 3, 4}));
    Value b = g.Constant(Tensor::FromVector<int32_t>({2, 2}, {5, 6, 7, -8}));
    Value y = MatMul(a, b);
    CHECK(y.dtype() == i32);
    Tensor t = Eval(g, y);
    CHECK(t.dtype() == i32);
    CHECK(t.ToInts() == std::vector<int64_t>{-9, 22, 43, -14});
  }
  SECTION("i64 keeps values beyond 32 bits") {
    Value a = g.Constant(Tensor::FromVector<int64_t>({1, 2}, {3000000000, 1}));
    Value b = g.Constant(Tensor::FromVector<int64_t>({2, 1}, {3, 5}));
    CHECK(Eval(g, MatMul(a, b)).ToInts() == std::vector<int64_t>{9000000005});
  }
  SECTION("bool is rejected") {
    Value a = g.Constant(Tensor::FromVector<bool>({1, 1}, {true}));
    MatMul(a, a);
    CHECK_FALSE(BuildError(g).empty());
  }
}

TEST_CASE("linalg: MatMul of 16-bit operands writes float32 when out_dtype says so", "[linalg]") {
  // 1 + 2^-8 is not a bf16 value: rounded to bf16 the product would be 1 (or 1 + 2^-7).
  Tensor a = Tensor::FromVector<float>({1, 2}, {1.0f, 0.00390625f}).CastTo(bf16);
  Tensor b = Tensor::FromVector<float>({2, 1}, {1.0f, 1.0f}).CastTo(bf16);
  SECTION("f32 keeps the float32 accumulator") {
    GraphBuilder g;
    Value y = MatMul(g.Constant(a), g.Constant(b), false, false, f32);
    CHECK(y.dtype() == f32);
    Tensor t = Eval(g, y);
    CHECK(t.dtype() == f32);
    CHECK(t.ToDoubles() == std::vector<double>{1.00390625});
  }
  SECTION("unset rounds to the operands' dtype") {
    GraphBuilder g;
    Tensor t = Eval(g, MatMul(g.Constant(a), g.Constant(b)));
    CHECK(t.dtype() == bf16);
    CHECK(t.ToDoubles() != std::vector<double>{1.00390625});
  }
  SECTION("it survives saving and loading") {
    GraphBuilder g;
    g.Output("y", MatMul(g.Constant(a), g.Constant(b), false, false, f32));
    Result<Graph> graph = g.Build();
    REQUIRE(graph.ok());
    Result<Graph> loaded = GraphFromText(GraphToText(*graph));
    REQUIRE(loaded.ok());
    CHECK(GraphToText(*loaded) == GraphToText(*graph));
  }
  SECTION("anything but f32 over 16-bit operands is refused") {
    GraphBuilder g;
    MatMul(g.Placeholder("x", f32, {2, 2}), g.Placeholder("w", f32, {2, 2}), false, false, bf16);
    CHECK_THAT(BuildError(g), Contains("attribute 'out_dtype' bf16 with f32 operands"));
  }
}

TEST_CASE("linalg: MatMul shape inference with unknown dims", "[linalg]") {
  GraphBuilder g;
  CHECK(MatMul(g.Placeholder("a", f32, {-1, 3}), g.Placeholder("b", f32, {3, 5})).shape() ==
        Shape{-1, 5});
  CHECK(MatMul(g.Placeholder("c", f32, {2, -1}), g.Placeholder("d", f32, {4, 5})).shape() ==
        Shape{2, 5});
  CHECK(MatMul(g.Placeholder("e", f32, {-1, 2, 3}), g.Placeholder("f", f32, {4, 3, 5})).shape() ==
        Shape{4, 2, 5});
  CHECK(MatMul(g.Placeholder("h", f32, {3, -1}), g.Placeholder("i", f32, {-1, 7}), true).shape() ==
        Shape{-1, 7});
  CHECK(MatMul(g.Placeholder("j", f64, {-1}), g.Placeholder("k", f64, {5, -1, 2})).shape() ==
        Shape{5, 2});
  CHECK(BuildError(g).empty());
}

TEST_CASE("linalg: MatMul errors show shapes and transpose flags", "[linalg]") {
  GraphBuilder g;
  SECTION("inner dims") {
    MatMul(g.Placeholder("a", f32, {2, 3}), g.Placeholder("b", f32, {4, 2}));
    std::string e = BuildError(g);
    CHECK_THAT(e, Contains("inner dimensions do not match (3 vs 4)"));
    CHECK_THAT(e, Contains("a [2, 3] (transpose_a=false) and b [4, 2] (transpose_b=false)"));
    CHECK_THAT(e, Contains("MatMul"));
  }
  SECTION("inner dims after a transpose") {
    MatMul(g.Placeholder("a", f32, {3, 2}), g.Placeholder("b", f32, {2, 3}), true, false);
    CHECK_THAT(BuildError(g),
               Contains("(3 vs 2): a [3, 2] (transpose_a=true) and b [2, 3] (transpose_b=false)"));
  }
  SECTION("batch dims") {
    MatMul(g.Placeholder("a", f32, {2, 2, 3}), g.Placeholder("b", f32, {3, 3, 2}));
    CHECK_THAT(BuildError(g), Contains("batch dimensions do not broadcast: a [2, 2, 3]"));
  }
  SECTION("scalar operand") {
    MatMul(g.Placeholder("a", f32, {}), g.Placeholder("b", f32, {2, 3}));
    CHECK_THAT(BuildError(g), Contains("rank >= 1"));
  }
  SECTION("mixed dtypes") {
    MatMul(g.Placeholder("a", f32, {2, 3}), g.Placeholder("b", i32, {3, 2}));
    CHECK_FALSE(BuildError(g).empty());
  }
}

TEST_CASE("linalg: MatMul checks an unknown inner dim at run time", "[linalg]") {
  GraphBuilder g;
  Value a = g.Placeholder("a", f32, {2, -1});
  Value b = F32(g, {3, 2}, {7, 8, 9, 10, 11, 12});
  g.Output("y", MatMul(a, b).Named("mm"));
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  Session session(*graph);
  auto bad =
      session.Run({{"a", Tensor::FromVector<float>({2, 4}, std::vector<float>(8, 1))}}, {"y"});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message(), Contains("node 'mm' (MatMul"));
  CHECK_THAT(bad.error().message(), Contains("inner dimensions do not match (4 vs 3)"));
  auto good = session.Run({{"a", Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6})}}, {"y"});
  REQUIRE(good.ok());
  CheckValues(good->at(0), {2, 2}, {58, 64, 139, 154});
}

TEST_CASE("linalg: BiasAdd", "[linalg]") {
  GraphBuilder g;
  Value x2 = F32(g, {2, 3}, {1, 2, 3, 4, 5, 6});
  Value x4 = Iota(g, {1, 2, 2, 2});
  SECTION("rank 2, default axis 1") {
    CheckValues(Eval(g, BiasAdd(x2, F32(g, {3}, {10, 20, 30}))), {2, 3}, {11, 22, 33, 14, 25, 36});
  }
  SECTION("rank 2, axis -1") {
    CheckValues(Eval(g, BiasAdd(x2, F32(g, {3}, {10, 20, 30}), -1)), {2, 3},
                {11, 22, 33, 14, 25, 36});
  }
  SECTION("rank 2, axis 0") {
    CheckValues(Eval(g, BiasAdd(x2, F32(g, {2}, {100, 200}), 0)), {2, 3},
                {101, 102, 103, 204, 205, 206});
  }
  SECTION("rank 4, channels first") {
    CheckValues(Eval(g, BiasAdd(x4, F32(g, {2}, {1, -1}))), {1, 2, 2, 2}, {1, 2, 3, 4, 3, 4, 5, 6});
  }
  SECTION("rank 4, channels last") {
    CheckValues(Eval(g, BiasAdd(x4, F32(g, {2}, {10, 20}), 3)), {1, 2, 2, 2},
                {10, 21, 12, 23, 14, 25, 16, 27});
  }
}

TEST_CASE("linalg: BiasAdd inference and errors", "[linalg]") {
  GraphBuilder g;
  SECTION("unknown dims take the bias length") {
    Value y = BiasAdd(g.Placeholder("x", f32, {-1, -1}), g.Placeholder("b", f32, {5}));
    CHECK(y.shape() == Shape{-1, 5});
    CHECK(BuildError(g).empty());
  }
  SECTION("length mismatch") {
    BiasAdd(g.Placeholder("x", f32, {2, 3}), g.Placeholder("b", f32, {4}));
    CHECK_THAT(BuildError(g), Contains("bias has 4 elements but x [2, 3] has 3 along axis 1"));
  }
  SECTION("rank 1 x") {
    BiasAdd(g.Placeholder("x", f32, {3}), g.Placeholder("b", f32, {3}), 0);
    CHECK_THAT(BuildError(g), Contains("x must have rank >= 2"));
  }
  SECTION("bias not 1-D") {
    BiasAdd(g.Placeholder("x", f32, {2, 3}), g.Placeholder("b", f32, {1, 3}));
    CHECK_THAT(BuildError(g), Contains("bias must be 1-D"));
  }
  SECTION("axis out of range") {
    BiasAdd(g.Placeholder("x", f32, {2, 3}), g.Placeholder("b", f32, {3}), 2);
    CHECK_THAT(BuildError(g), Contains("attribute 'axis'"));
  }
  SECTION("integers are rejected") {
    BiasAdd(g.Placeholder("x", i32, {2, 3}), g.Placeholder("b", i32, {3}));
    CHECK_FALSE(BuildError(g).empty());
  }
}

TEST_CASE("linalg: Conv2D window sums", "[linalg]") {
  GraphBuilder g;
  Value x3 = Iota(g, {1, 1, 3, 3}, 1);  // [[1 2 3] [4 5 6] [7 8 9]]
  Value x4 = Iota(g, {1, 1, 4, 4});     // 0..15
  SECTION("no padding") {
    CheckValues(Eval(g, Conv2D(x3, Ones(g, {1, 1, 2, 2}))), {1, 1, 2, 2}, {12, 16, 24, 28});
  }
  SECTION("padding 1 keeps the size") {
    CheckValues(Eval(g, Conv2D(x3, Ones(g, {1, 1, 3, 3}), {.pads = {1, 1, 1, 1}})), {1, 1, 3, 3},
                {12, 21, 16, 27, 45, 33, 24, 39, 28});
  }
  SECTION("pads are [top, left, bottom, right]") {
    Value x = F32(g, {1, 1, 2, 2}, {1, 2, 3, 4});
    CheckValues(Eval(g, Conv2D(x, Ones(g, {1, 1, 1, 1}), {.pads = {1, 0, 0, 2}})), {1, 1, 3, 4},
                {0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0});
  }
  SECTION("stride 2") {
    CheckValues(Eval(g, Conv2D(x4, Ones(g, {1, 1, 2, 2}), {.strides = {2, 2}})), {1, 1, 2, 2},
                {10, 18, 42, 50});
  }
  SECTION("stride 2 with padding, odd size") {
    // Padded 5x5 input is 3x3 of ones-kernel windows at rows/cols {-1, 1} -> output 2x2.
    CheckValues(
        Eval(g, Conv2D(x3, Ones(g, {1, 1, 3, 3}), {.strides = {2, 2}, .pads = {1, 1, 1, 1}})),
        {1, 1, 2, 2}, {12, 16, 24, 28});
  }
  SECTION("a huge stride leaves one window") {
    const int64_t big = std::numeric_limits<int64_t>::max();
    CheckValues(Eval(g, Conv2D(x4, Ones(g, {1, 1, 2, 2}), {.strides = {big, big}})), {1, 1, 1, 1},
                {10});
  }
  SECTION("dilation 2") {
    CheckValues(Eval(g, Conv2D(x4, Ones(g, {1, 1, 2, 2}), {.dilations = {2, 2}})), {1, 1, 2, 2},
                {20, 24, 36, 40});
  }
  SECTION("cross-correlation: the kernel is not flipped") {
    Value x = F32(g, {1, 1, 2, 2}, {1, 2, 3, 4});
    CheckValues(Eval(g, Conv2D(x, F32(g, {1, 1, 2, 2}, {1, 10, 100, 1000}))), {1, 1, 1, 1}, {4321});
  }
}

TEST_CASE("linalg: Conv2D channels, batch and groups", "[linalg]") {
  GraphBuilder g;
  SECTION("channels are summed, batches are independent") {
    Value x = F32(g, {2, 2, 1, 1}, {1, 2, 3, 4});
    Value w = F32(g, {3, 2, 1, 1}, {1, 1, 1, -1, 2, 0});
    CheckValues(Eval(g, Conv2D(x, w)), {2, 3, 1, 1}, {3, -1, 2, 7, -1, 6});
  }
  SECTION("groups=2, depthwise") {
    Value x = F32(g, {1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
    Value w = F32(g, {2, 1, 2, 2}, {1, 1, 1, 1, 2, 2, 2, 2});
    CheckValues(Eval(g, Conv2D(x, w, {.groups = 2})), {1, 2, 1, 1}, {10, 200});
  }
  SECTION("groups=2, two outputs per group") {
    Value x = F32(g, {1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
    Value w = F32(g, {4, 1, 1, 1}, {1, 2, 3, 4});
    CheckValues(Eval(g, Conv2D(x, w, {.groups = 2})), {1, 4, 2, 2},
                {1, 2, 3, 4, 2, 4, 6, 8, 30, 60, 90, 120, 40, 80, 120, 160});
  }
}

TEST_CASE("linalg: Conv2D shape inference with unknown dims", "[linalg]") {
  GraphBuilder g;
  Value w = g.Placeholder("w", f32, {8, 3, 3, 3});
  Value y = Conv2D(g.Placeholder("x", f32, {-1, 3, -1, 32}), w,
                   {.strides = {2, 2}, .pads = {1, 1, 1, 1}});
  CHECK(y.shape() == Shape{-1, 8, -1, 16});
  Value z = Conv2D(g.Placeholder("x2", f32, {1, -1, 7, 7}),
                   g.Placeholder("w2", f32, {-1, 2, 3, -1}), {.groups = 2});
  CHECK(z.shape() == Shape{1, -1, 5, -1});
  CHECK(BuildError(g).empty());
}

TEST_CASE("linalg: Conv2D errors", "[linalg]") {
  auto conv = [](Shape xs, Shape ws, const Conv2DOptions& o = {}) {
    GraphBuilder g;
    Conv2D(g.Placeholder("x", f32, std::move(xs)), g.Placeholder("w", f32, std::move(ws)), o);
    return BuildError(g);
  };
  SECTION("ranks") {
    CHECK_THAT(conv({1, 3, 5}, {2, 3, 3, 3}),
               Contains("x must have rank 4 [N, C, H, W], got shape [1, 3, 5]"));
    CHECK_THAT(conv({1, 3, 5, 5}, {2, 3, 3}), Contains("w must have rank 4"));
  }
  SECTION("C not divisible by groups") {
    CHECK_THAT(conv({1, 4, 5, 5}, {6, 2, 3, 3}, {.groups = 3}),
               Contains("input channels 4 (x [1, 4, 5, 5]) are not divisible by groups=3"));
  }
  SECTION("C does not match w.shape[1] * groups") {
    CHECK_THAT(
        conv({1, 4, 5, 5}, {8, 3, 3, 3}),
        Contains(
            "has 4 channels but w [8, 3, 3, 3] with groups=1 expects w.shape[1] * groups = 3 * 1"));
  }
  SECTION("O not divisible by groups") {
    CHECK_THAT(conv({1, 4, 5, 5}, {3, 2, 3, 3}, {.groups = 2}), Contains("output channels 3"));
  }
  SECTION("groups < 1") {
    CHECK_THAT(conv({1, 4, 5, 5}, {4, 4, 3, 3}, {.groups = 0}), Contains("'groups' must be >= 1"));
  }
  SECTION("bad pads length") {
    CHECK_THAT(conv({1, 1, 5, 5}, {1, 1, 3, 3}, {.pads = {1, 1}}),
               Contains("attribute 'pads' must have 4 values, has 2"));
  }
  SECTION("negative pads") {
    CHECK_THAT(conv({1, 1, 5, 5}, {1, 1, 3, 3}, {.pads = {0, -1, 0, 0}}), Contains("'pads'"));
  }
  SECTION("zero stride") {
    CHECK_THAT(conv({1, 1, 5, 5}, {1, 1, 3, 3}, {.strides = {1, 0}}),
               Contains("attribute 'strides' must be >= 1, got [1, 0]"));
  }
  SECTION("zero dilation") {
    CHECK_THAT(conv({1, 1, 5, 5}, {1, 1, 3, 3}, {.dilations = {0, 1}}),
               Contains("'dilations' must be >= 1"));
  }
  SECTION("kernel larger than the padded input") {
    CHECK_THAT(conv({1, 1, 2, 5}, {1, 1, 3, 3}), Contains("output height would be < 1"));
    CHECK_THAT(conv({1, 1, 5, 5}, {1, 1, 3, 3}, {.dilations = {1, 3}}),
               Contains("output width would be < 1: input width 5 padded by 0+0 is smaller than "
                        "kernel width 3 dilated by 3"));
  }
  SECTION("huge attribute values give errors, not overflow") {
    const int64_t big = std::numeric_limits<int64_t>::max();
    CHECK_THAT(conv({1, 1, 5, 5}, {1, 1, 3, 3}, {.dilations = {big, 1}}),
               Contains("output height would be < 1"));
    CHECK_THAT(conv({1, 1, 5, 5}, {1, 1, 3, 3}, {.pads = {big, 0, big, 0}}),
               Contains("output height is too large"));
  }
  SECTION("integers are rejected") {
    GraphBuilder g;
    Conv2D(g.Placeholder("x", i32, {1, 1, 5, 5}), g.Placeholder("w", i32, {1, 1, 3, 3}));
    CHECK_FALSE(BuildError(g).empty());
  }
}
