// Det and DetGrad (ir/ops/determinant.h): determinants of stacks against hand-worked values,
// singular and permuted matrices, gradients against float64 central differences (invertible and
// singular matrices alike), and the shapes Det refuses.
#include <catch2/catch.hpp>

#include "ir/ops/determinant.h"
#include "tests/testing/eval.h"
#include "tests/testing/gradcheck_op.h"

using namespace kiln;

TEST_CASE("determinant: Det of a stack, singular and pivoting matrices", "[linalg]") {
  GraphBuilder g;
  // [[0, 1], [2, 3]] needs a row swap: -2. [[1, 2], [2, 4]] is singular. The 3x3 is 1*(5*9-6*8)
  // - 2*(4*9-6*7) + 3*(4*8-5*7) = -3 + 12 - 9 = 0 with its last entry 9; with 10 it is -3.
  Tensor two = Tensor::FromVector<float>({2, 2, 2}, {0, 1, 2, 3, 1, 2, 2, 4});
  CHECK(testing::Eval(g, Det(g.Constant(two))).ToDoubles() == std::vector<double>{-2, 0});
  GraphBuilder g3;
  Tensor three = Tensor::FromVector<double>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 10});
  Tensor det = testing::Eval(g3, Det(g3.Constant(three)));
  CHECK(det.shape() == Shape{});
  CHECK(det.GetDouble(0) == Approx(-3).margin(1e-12));
  GraphBuilder g1;
  Tensor one = Tensor::FromVector<float>({3, 1, 1}, {2, -1, 0.5f});
  CHECK(testing::Eval(g1, Det(g1.Constant(one))).ToDoubles() == std::vector<double>{2, -1, 0.5});
}

TEST_CASE("determinant: gradients against central differences", "[linalg][grad]") {
  auto det = [](GraphBuilder&, const std::vector<Value>& in) { return Det(in[0]); };
  testing::CheckOpGradient({testing::RandomTensor({2, 3, 3}, 7)}, det);
  testing::CheckOpGradient({testing::RandomTensor({4, 4}, 8)}, det);
  // Singular: rank 2 of 3 (the cofactors are not zero) and rank 1 of 3 (they are).
  testing::CheckOpGradient({Tensor::FromVector<double>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})}, det);
  testing::CheckOpGradient({Tensor::FromVector<double>({3, 3}, {1, 2, 3, 2, 4, 6, 3, 6, 9})}, det);
}

TEST_CASE("determinant: Det refuses what is not a stack of square matrices", "[linalg]") {
  GraphBuilder g;
  Det(g.Placeholder("x", f32, {2, 3}));
  CHECK_THAT(testing::BuildError(g), Catch::Contains("square matrices [..., M, M], got f32[2, 3]"));
  GraphBuilder v;
  Det(v.Placeholder("x", f32, {3}));
  CHECK_THAT(testing::BuildError(v), Catch::Contains("square matrices"));
  GraphBuilder i;
  Det(i.Placeholder("x", i32, {2, 2}));
  CHECK_THAT(testing::BuildError(i), Catch::Contains("Det"));
}
