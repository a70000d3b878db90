// Op family "math": inference and reference kernels against hand-checked values.
#include <catch2/catch.hpp>
#include <cmath>

#include "ir/ops/math.h"
#include "tests/testing/run_op.h"

using namespace kiln;
using kiln::testing::RunOp;
using kiln::testing::RunOpError;
using kiln::testing::T1;
using kiln::testing::TN;

namespace {
using UnaryFn = Value (*)(At);
std::vector<double> Unary(UnaryFn f, std::vector<float> x) {
  return RunOp({T1<float>(x)}, [f](GraphBuilder&, auto& v) { return f(v[0]); }).ToDoubles();
}
void CheckClose(const std::vector<double>& got, const std::vector<double>& want,
                double eps = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got[i]));
    else
      CHECK(got[i] == Approx(want[i]).margin(eps));
  }
}
}  // namespace

TEST_CASE("math: unary float ops", "[math]") {
  CheckClose(Unary(Exp, {0, 1, -1}), {1, 2.718281828, 0.367879441});
  CheckClose(Unary(Log, {1, 2.718281828f, 0}), {0, 1, -INFINITY});
  CheckClose(Unary(Sqrt, {4, 9, 0}), {2, 3, 0});
  CheckClose(Unary(Rsqrt, {4, 0.25f}), {0.5, 2});
  CheckClose(Unary(Reciprocal, {2, -4}), {0.5, -0.25});
  CheckClose(Unary(Sigmoid, {0, 100, -100}), {0.5, 1, 0});
  CheckClose(Unary(Tanh, {0, 1}), {0, 0.761594156});
  CheckClose(Unary(Erf, {0, 1}), {0, 0.842700793});
  CheckClose(Unary(Sin, {0, 1.5707963f}), {0, 1});
  CheckClose(Unary(Cos, {0, 3.14159265f}), {1, -1});
  CheckClose(Unary(Floor, {1.5f, -1.5f, 2}), {1, -2, 2});
  CheckClose(Unary(Ceil, {1.5f, -1.5f, 2}), {2, -1, 2});
  CheckClose(Unary(Round, {0.5f, 1.5f, 2.5f, -0.5f, 2.4f}), {0, 2, 2, -0.0, 2});
  CheckClose(Unary(Neg, {1, -2}), {-1, 2});
  CheckClose(Unary(Abs, {-3, 2}), {3, 2});
  CheckClose(Unary(Square, {-3, 2}), {9, 4});
  CheckClose(Unary(Sign, {-3, 0, 2}), {-1, 0, 1});
  CheckClose(Unary(Relu, {-3, 0, 2}), {0, 0, 2});
}

TEST_CASE("math: parameterized activations", "[math]") {
  auto x = T1<float>({-2, 0, 3});
  CheckClose(RunOp({x}, [](GraphBuilder&, auto& v) { return LeakyRelu(v[0], 0.1); }).ToDoubles(),
             {-0.2, 0, 3});
  CheckClose(RunOp({x}, [](GraphBuilder&, auto& v) { return Elu(v[0], 2.0); }).ToDoubles(),
             {2 * (std::exp(-2.0) - 1), 0, 3});
  CheckClose(RunOp({x}, [](GraphBuilder&, auto& v) { return Clip(v[0], -1, 1); }).ToDoubles(),
             {-1, 0, 1});
  // gelu(1) = 0.5 * (1 + erf(1/sqrt(2))) = 0.841344746; tanh form = 0.841191990.
  auto one = T1<float>({1});
  CheckClose(RunOp({one}, [](GraphBuilder&, auto& v) { return Gelu(v[0]); }).ToDoubles(),
             {0.841344746});
  CheckClose(RunOp({one}, [](GraphBuilder&, auto& v) { return Gelu(v[0], "tanh"); }).ToDoubles(),
             {0.841191990});
  CHECK_THAT(RunOpError({one}, [](GraphBuilder&, auto& v) { return Gelu(v[0], "fast"); }),
             Catch::Contains("'approximate' must be \"none\" or \"tanh\""));
  CHECK_THAT(RunOpError({one}, [](GraphBuilder&, auto& v) { return Clip(v[0], 2, 1); }),
             Catch::Contains("min (2) must not exceed max (1)"));
}

TEST_CASE("math: binary ops broadcast the numpy way", "[math]") {
  auto a = TN<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto row = TN<float>({3}, {10, 20, 30});
  auto col = TN<float>({2, 1}, {100, 200});
  Tensor sum = RunOp({a, row}, [](GraphBuilder&, auto& v) { return v[0] + v[1]; });
  CHECK(sum.shape() == Shape{2, 3});
  CHECK(sum.ToDoubles() == std::vector<double>{11, 22, 33, 14, 25, 36});
  Tensor outer = RunOp({row, col}, [](GraphBuilder&, auto& v) { return v[1] - v[0]; });
  CHECK(outer.shape() == Shape{2, 3});
  CHECK(outer.ToDoubles() == std::vector<double>{90, 80, 70, 190, 180, 170});
  Tensor scalar = RunOp({a}, [](GraphBuilder&, auto& v) { return 2.0 * v[0] / 4.0; });
  CHECK(scalar.ToDoubles() == std::vector<double>{0.5, 1, 1.5, 2, 2.5, 3});
  // [2,1,3] with [4,1] -> [2,4,3]
  auto x = TN<float>({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  auto y = TN<float>({4, 1}, {0, 1, 2, 3});
  Tensor m = RunOp({x, y}, [](GraphBuilder&, auto& v) { return Mul(v[0], v[1]); });
  CHECK(m.shape() == Shape{2, 4, 3});
  CHECK(m.GetDouble(3 * 3 + 2) == 9);       // x[0,0,2] * y[3]
  CHECK(m.GetDouble(12 + 1 * 3 + 0) == 4);  // x[1,0,0] * y[1]
  // An empty dimension broadcasts to an empty result.
  Tensor e =
      RunOp({TN<float>({0, 3}, {}), row}, [](GraphBuilder&, auto& v) { return v[0] + v[1]; });
  CHECK(e.shape() == Shape{0, 3});
  CHECK_THAT(
      RunOpError({a, TN<float>({2}, {1, 2})}, [](GraphBuilder&, auto& v) { return v[0] + v[1]; }),
      Catch::Contains("do not broadcast"));
}

TEST_CASE("math: Pow, Maximum, Minimum, Div", "[math]") {
  auto a = T1<float>({2, 9, -1});
  auto b = T1<float>({3, 0.5f, 2});
  CheckClose(RunOp({a, b}, [](GraphBuilder&, auto& v) { return Pow(v[0], v[1]); }).ToDoubles(),
             {8, 3, 1});
  CheckClose(RunOp({a, b}, [](GraphBuilder&, auto& v) { return Maximum(v[0], v[1]); }).ToDoubles(),
             {3, 9, 2});
  CheckClose(RunOp({a, b}, [](GraphBuilder&, auto& v) { return Minimum(v[0], v[1]); }).ToDoubles(),
             {2, 0.5, -1});
  auto nan = T1<float>({NAN});
  CHECK(std::isnan(RunOp({nan, T1<float>({1})}, [](GraphBuilder&, auto& v) {
                     return Maximum(v[0], v[1]);
                   }).GetDouble(0)));
  // Integer division truncates toward zero; division by zero is an error, not a crash.
  auto ia = T1<int32_t>({7, -7, 7});
  auto ib = T1<int32_t>({2, 2, -2});
  CHECK(RunOp({ia, ib}, [](GraphBuilder&, auto& v) { return Div(v[0], v[1]); }).ToInts() ==
        std::vector<int64_t>{3, -3, -3});
  CHECK(RunOp({ia, ib}, [](GraphBuilder&, auto& v) { return Pow(v[0], v[1]); }).ToInts() ==
        std::vector<int64_t>{49, 49, 0});
  CHECK_THAT(RunOpError({ia, T1<int32_t>({1, 0, 1})},
                        [](GraphBuilder&, auto& v) { return Div(v[0], v[1]); }),
             Catch::Contains("integer division by zero"));
  auto imin = T1<int64_t>({INT64_MIN});
  CHECK(RunOp({imin, T1<int64_t>({-1})}, [](GraphBuilder&, auto& v) {
          return Div(v[0], v[1]);
        }).ToInts() == std::vector<int64_t>{INT64_MIN});
}

TEST_CASE("math: integer ops wrap and keep their dtype", "[math]") {
  auto a = T1<int8_t>({100, -100});
  Tensor s = RunOp({a, a}, [](GraphBuilder&, auto& v) { return v[0] + v[1]; });
  CHECK(s.dtype() == i8);
  CHECK(s.ToInts() == std::vector<int64_t>{-56, 56});
  CHECK(RunOp({T1<int32_t>({-5, 5})}, [](GraphBuilder&, auto& v) { return Abs(v[0]); }).ToInts() ==
        std::vector<int64_t>{5, 5});
  CHECK(RunOp({T1<int64_t>({-5, 7})}, [](GraphBuilder&, auto& v) {
          return Clip(v[0], 0, 6);
        }).ToInts() == std::vector<int64_t>{0, 6});
}

TEST_CASE("math: comparisons and logic give bool", "[math]") {
  auto a = T1<float>({1, 2, 3});
  auto b = T1<float>({2, 2, 2});
  auto run = [&](Value (*f)(At, Value)) {
    Tensor t = RunOp({a, b}, [f](GraphBuilder&, auto& v) { return f(v[0], v[1]); });
    CHECK(t.dtype() == boolean);
    return t.ToInts();
  };
  CHECK(run(Equal) == std::vector<int64_t>{0, 1, 0});
  CHECK(run(Less) == std::vector<int64_t>{1, 0, 0});
  CHECK(run(LessEqual) == std::vector<int64_t>{1, 1, 0});
  CHECK(run(Greater) == std::vector<int64_t>{0, 0, 1});
  CHECK(run(GreaterEqual) == std::vector<int64_t>{0, 1, 1});
  auto p = T1<bool>({true, true, false, false});
  auto q = T1<bool>({true, false, true, false});
  CHECK(RunOp({p, q}, [](GraphBuilder&, auto& v) { return And(v[0], v[1]); }).ToInts() ==
        std::vector<int64_t>{1, 0, 0, 0});
  CHECK(RunOp({p, q}, [](GraphBuilder&, auto& v) { return Or(v[0], v[1]); }).ToInts() ==
        std::vector<int64_t>{1, 1, 1, 0});
  CHECK(RunOp({p}, [](GraphBuilder&, auto& v) { return Not(v[0]); }).ToInts() ==
        std::vector<int64_t>{0, 0, 1, 1});
  CHECK_THAT(RunOpError({a, p}, [](GraphBuilder&, auto& v) { return And(v[0], v[1]); }),
             Catch::Contains("expected one of {bool}"));
  CHECK_THAT(RunOpError({a, T1<int32_t>({1, 2, 3})},
                        [](GraphBuilder&, auto& v) { return Less(v[0], v[1]); }),
             Catch::Contains("they must match"));
}

TEST_CASE("math: Select broadcasts condition and branches", "[math]") {
  auto c = TN<bool>({2, 1}, {true, false});
  auto x = T1<float>({1, 2, 3});
  auto y = TN<float>({1}, {-1});
  Tensor t = RunOp({c, x, y}, [](GraphBuilder&, auto& v) { return Select(v[0], v[1], v[2]); });
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.ToDoubles() == std::vector<double>{1, 2, 3, -1, -1, -1});
}

TEST_CASE("math: Cast converts every dtype pair sensibly", "[math]") {
  auto x = T1<float>({-1.7f, 0.0f, 2.5f, 300.0f});
  CHECK(RunOp({x}, [](GraphBuilder&, auto& v) { return Cast(v[0], i32); }).ToInts() ==
        std::vector<int64_t>{-1, 0, 2, 300});
  CHECK(RunOp({x}, [](GraphBuilder&, auto& v) { return Cast(v[0], u8); }).ToInts() ==
        std::vector<int64_t>{0, 0, 2, 255});  // saturates
  CHECK(RunOp({x}, [](GraphBuilder&, auto& v) { return Cast(v[0], boolean); }).ToInts() ==
        std::vector<int64_t>{1, 0, 1, 1});
  Tensor h = RunOp({x}, [](GraphBuilder&, auto& v) { return Cast(v[0], f16); });
  CHECK(h.dtype() == f16);
  CheckClose(h.ToDoubles(), {-1.7001953125, 0, 2.5, 300});
  Tensor b = RunOp({x}, [](GraphBuilder&, auto& v) { return Cast(v[0], bf16); });
  CheckClose(b.ToDoubles(), {-1.703125, 0, 2.5, 300});
  auto big = T1<int64_t>({(int64_t{1} << 40) + 1});
  CHECK(RunOp({big}, [](GraphBuilder&, auto& v) { return Cast(v[0], f64); }).GetDouble(0) ==
        double((int64_t{1} << 40) + 1));
}

TEST_CASE("math: dtype constraints are enforced at build time", "[math]") {
  CHECK_THAT(RunOpError({T1<int32_t>({1})}, [](GraphBuilder&, auto& v) { return Exp(v[0]); }),
             Catch::Contains("has dtype i32, expected one of {f32, f64, f16, bf16}"));
  CHECK_THAT(RunOpError({T1<bool>({true})}, [](GraphBuilder&, auto& v) { return Neg(v[0]); }),
             Catch::Contains("has dtype bool"));
}

TEST_CASE("math: 16-bit float inputs compute and round correctly", "[math]") {
  Tensor h = Tensor::FromDoubles(f16, {2}, {1.5, -2});
  Tensor out = RunOp({h, h}, [](GraphBuilder&, auto& v) { return v[0] * v[1]; });
  CHECK(out.dtype() == f16);
  CHECK(out.ToDoubles() == std::vector<double>{2.25, 4});
}
