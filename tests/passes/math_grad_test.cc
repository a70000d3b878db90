// Gradients of op family "math" against float64 central differences.
#include <catch2/catch.hpp>

#include "ir/ops/math.h"
#include "tests/testing/gradcheck_op.h"

using namespace kiln;
using kiln::testing::CheckOpGradient;
using kiln::testing::RandomTensor;

TEST_CASE("math gradients: unary ops", "[grad][math]") {
  Tensor x = RandomTensor({3, 4}, 1, -2, 2);
  Tensor positive = RandomTensor({3, 4}, 2, 0.2, 3);
  using Fn = Value (*)(At);
  for (auto [name, f] : std::vector<std::pair<const char*, Fn>>{{"Neg", Neg},
                                                                {"Abs", Abs},
                                                                {"Exp", Exp},
                                                                {"Square", Square},
                                                                {"Sigmoid", Sigmoid},
                                                                {"Tanh", Tanh},
                                                                {"Erf", Erf},
                                                                {"Sin", Sin},
                                                                {"Cos", Cos},
                                                                {"Relu", Relu}}) {
    INFO(name);
    CheckOpGradient({x}, [f = f](GraphBuilder&, auto& v) { return f(v[0]); });
  }
  for (auto [name, f] : std::vector<std::pair<const char*, Fn>>{
           {"Log", Log}, {"Sqrt", Sqrt}, {"Rsqrt", Rsqrt}, {"Reciprocal", Reciprocal}}) {
    INFO(name);
    CheckOpGradient({positive}, [f = f](GraphBuilder&, auto& v) { return f(v[0]); });
  }
  CheckOpGradient({x}, [](GraphBuilder&, auto& v) { return LeakyRelu(v[0], 0.2); });
  CheckOpGradient({x}, [](GraphBuilder&, auto& v) { return Elu(v[0], 1.5); });
  CheckOpGradient({x}, [](GraphBuilder&, auto& v) { return Gelu(v[0]); });
  CheckOpGradient({x}, [](GraphBuilder&, auto& v) { return Gelu(v[0], "tanh"); });
  CheckOpGradient({x}, [](GraphBuilder&, auto& v) { return Clip(v[0], -0.7, 0.9); });
  CheckOpGradient(
      {x}, [](GraphBuilder&, auto& v) { return Cast(Cast(v[0], f32), f64); }, 1e-5);
}

TEST_CASE("math gradients: binary ops with broadcasting", "[grad][math]") {
  std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {}}, {{4}, {2, 3, 4}}};
  using Fn = Value (*)(At, Value);
  for (auto [sa, sb] : shapes) {
    Tensor a = RandomTensor(sa, 3, -2, 2), b = RandomTensor(sb, 4, -2, 2);
    Tensor bp = RandomTensor(sb, 5, 0.5, 2), ap = RandomTensor(sa, 6, 0.5, 2);
    INFO(sa.ToString() << " with " << sb.ToString());
    for (auto [name, f] : std::vector<std::pair<const char*, Fn>>{{"Add", Add},
                                                                  {"Sub", Sub},
                                                                  {"Mul", Mul},
                                                                  {"Maximum", Maximum},
                                                                  {"Minimum", Minimum}}) {
      INFO(name);
      CheckOpGradient({a, b}, [f = f](GraphBuilder&, auto& v) { return f(v[0], v[1]); });
    }
    CheckOpGradient({a, bp}, [](GraphBuilder&, auto& v) { return Div(v[0], v[1]); });
    CheckOpGradient(
        {ap, b}, [](GraphBuilder&, auto& v) { return Pow(v[0], v[1]); }, 1e-5);
  }
}

TEST_CASE("math gradients: Select routes the gradient by the condition", "[grad][math]") {
  Tensor c = Tensor::FromVector<bool>({2, 1}, {true, false});
  Tensor x = RandomTensor({2, 3}, 7), y = RandomTensor({3}, 8);
  CheckOpGradient({c, x, y}, [](GraphBuilder&, auto& v) { return Select(v[0], v[1], v[2]); });
}
