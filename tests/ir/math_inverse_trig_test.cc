// Asin, Acos and Atan: textbook values, NaN outside the domain, float-only inference, gradients.
#include <catch2/catch.hpp>
#include <cmath>

#include "ir/ops/math.h"
#include "tests/testing/eval.h"
#include "tests/testing/gradcheck_op.h"

using namespace kiln;
using namespace kiln::testing;

TEST_CASE("math: Asin, Acos and Atan values", "[math]") {
  GraphBuilder g;
  Value x = g.Constant(Tensor::FromVector<double>({4}, {-1, 0, 0.5, 1}));
  auto out = EvalAll(g, {Asin(x), Acos(x), Atan(x)});
  const double pi = 3.14159265358979323846;
  // asin(-1) = -pi/2, asin(0) = 0, asin(1/2) = pi/6, asin(1) = pi/2; acos = pi/2 - asin.
  std::vector<double> asin = {-pi / 2, 0, pi / 6, pi / 2};
  for (int i = 0; i < 4; ++i) {
    CHECK(out[0].GetDouble(i) == Approx(asin[i]));
    CHECK(out[1].GetDouble(i) == Approx(pi / 2 - asin[i]));
  }
  // atan(-1) = -pi/4, atan(0) = 0, atan(1) = pi/4.
  CHECK(out[2].GetDouble(0) == Approx(-pi / 4));
  CHECK(out[2].GetDouble(1) == Approx(0.0));
  CHECK(out[2].GetDouble(3) == Approx(pi / 4));
  Value outside = g.Constant(Tensor::FromVector<float>({1}, {2.0f}));
  CHECK(std::isnan(Eval(g, Asin(outside)).GetDouble(0)));
  CHECK(std::isnan(Eval(g, Acos(outside)).GetDouble(0)));
}

TEST_CASE("math: Asin, Acos and Atan inference and gradients", "[math]") {
  {
    GraphBuilder g;
    Value y = Atan(g.Placeholder("x", f32, {-1, 3}));
    CHECK(y.shape() == Shape{-1, 3});
    CHECK(y.dtype() == f32);
  }
  GraphBuilder g;
  Asin(g.Placeholder("i", i32, {2}));
  CHECK_THAT(BuildError(g), Catch::Contains("Asin"));
  Tensor x = RandomTensor({2, 3}, 7, -0.9, 0.9);
  CheckOpGradient({x}, [](GraphBuilder&, const std::vector<Value>& in) { return Asin(in[0]); });
  CheckOpGradient({x}, [](GraphBuilder&, const std::vector<Value>& in) { return Acos(in[0]); });
  CheckOpGradient({RandomTensor({2, 3}, 8, -3, 3)},
                  [](GraphBuilder&, const std::vector<Value>& in) { return Atan(in[0]); });
}
