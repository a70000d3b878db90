// GatherElements and ScatterElements: inference, hand-checked values, errors and gradients.
#include <catch2/catch.hpp>

#include "ir/ops/array_elements.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "tests/testing/eval.h"
#include "tests/testing/gradcheck_op.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;
using Doubles = std::vector<double>;

namespace {

Tensor I64(Shape s, std::vector<int64_t> v) { return Tensor::FromVector<int64_t>(std::move(s), v); }

}  // namespace

TEST_CASE("array: GatherElements along each axis", "[array]") {
  GraphBuilder g;
  Value data = g.Constant(Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}));  // [[1, 2], [3, 4]]
  // axis 1: y[i][j] = data[i][idx[i][j]] -> [[1, 1], [4, 3]].
  Value y1 = GatherElements(data, g.Constant(I64({2, 2}, {0, 0, 1, 0})), 1);
  // axis 0 with a negative index and fewer rows: y[0][j] = data[idx[0][j]][j] -> [[3, 2]].
  Value y0 = GatherElements(data, g.Constant(I64({1, 2}, {-1, 0})), 0);
  CHECK(y0.shape() == Shape{1, 2});
  auto out = EvalAll(g, {y1, y0});
  CHECK(out[0].ToDoubles() == Doubles{1, 1, 4, 3});
  CHECK(out[1].ToDoubles() == Doubles{3, 2});
}

TEST_CASE("array: ScatterElements with each reduction", "[array]") {
  GraphBuilder g;
  Value data = g.Constant(Tensor::FromVector<float>({1, 5}, {1, 2, 3, 4, 5}));
  Value idx = g.Constant(I64({1, 2}, {1, 3}));
  Value upd = g.Constant(Tensor::FromVector<float>({1, 2}, {10, 20}));
  Value set = ScatterElements(data, idx, upd, 1);          // [1, 10, 3, 20, 5]
  Value add = ScatterElements(data, idx, upd, -1, "add");  // [1, 12, 3, 24, 5]
  Value mul = ScatterElements(data, idx, upd, 1, "mul");   // [1, 20, 3, 80, 5]
  Value twice = ScatterElements(data, g.Constant(I64({1, 2}, {1, 1})), upd, 1, "add");  // 2+30
  auto out = EvalAll(g, {set, add, mul, twice});
  CHECK(out[0].ToDoubles() == Doubles{1, 10, 3, 20, 5});
  CHECK(out[1].ToDoubles() == Doubles{1, 12, 3, 24, 5});
  CHECK(out[2].ToDoubles() == Doubles{1, 20, 3, 80, 5});
  CHECK(out[3].ToDoubles() == Doubles{1, 32, 3, 4, 5});
  // Integer data, axis 0: column j of row idx[0][j] is replaced.
  Value ints = ScatterElements(g.Constant(I64({2, 2}, {0, 0, 0, 0})),
                               g.Constant(I64({1, 2}, {1, 0})), g.Constant(I64({1, 2}, {7, 8})));
  CHECK(Eval(g, ints).ToInts() == std::vector<int64_t>{0, 8, 7, 0});
}

TEST_CASE("array: GatherElements and ScatterElements inference and errors", "[array]") {
  {
    GraphBuilder g;
    Value y = GatherElements(g.Placeholder("d", f32, {-1, 4}), g.Placeholder("i", i64, {2, -1}), 1);
    CHECK(y.shape() == Shape{2, -1});
  }
  auto build_error = [](auto make) {
    GraphBuilder g;
    make(g);
    return BuildError(g);
  };
  CHECK_THAT(build_error([](GraphBuilder& g) {
               GatherElements(g.Placeholder("d", f32, {2, 3}), g.Placeholder("i", i64, {2}));
             }),
             Contains("must have data's rank 2"));
  CHECK_THAT(build_error([](GraphBuilder& g) {
               GatherElements(g.Placeholder("d", f32, {2, 3}), g.Placeholder("i", i64, {2, 4}), 0);
             }),
             Contains("is larger than data [2, 3] in dim 1"));
  CHECK_THAT(build_error([](GraphBuilder& g) {
               GatherElements(g.Placeholder("d", f32, {2, 3}), g.Placeholder("i", i64, {2, 3}), 2);
             }),
             Contains("axis 2 is out of range"));
  CHECK_THAT(build_error([](GraphBuilder& g) {
               ScatterElements(g.Placeholder("d", f32, {2, 3}), g.Placeholder("i", i64, {2, 3}),
                               g.Placeholder("u", f32, {2, 2}));
             }),
             Contains("updates [2, 2] must have the shape of indices [2, 3]"));
  CHECK_THAT(build_error([](GraphBuilder& g) {
               ScatterElements(g.Placeholder("d", f32, {2}), g.Placeholder("i", i64, {1}),
                               g.Placeholder("u", f32, {1}), 0, "max");
             }),
             Contains("reduction must be none, add or mul, got 'max'"));
  GraphBuilder g;
  Value data = g.Constant(Tensor::FromVector<float>({3}, {1, 2, 3}));
  Value y = GatherElements(data, g.Constant(I64({1}, {3})));
  CHECK_THAT(RunError(g, y, {}), Contains("index 3 is out of range for axis 0 of size 3"));
  GraphBuilder g2;
  Value s = ScatterElements(g2.Constant(Tensor::FromVector<float>({3}, {1, 2, 3})),
                            g2.Constant(I64({1}, {-4})),
                            g2.Constant(Tensor::FromVector<float>({1}, {9})));
  CHECK_THAT(RunError(g2, s, {}), Contains("index -4 is out of range for axis 0 of size 3"));
}

TEST_CASE("reduce: TopK's gradient goes to the elements it took", "[reduce]") {
  for (bool largest : {true, false})
    CheckOpGradient({RandomTensor({3, 5}, 4)},
                    [largest](GraphBuilder&, const std::vector<Value>& in) {
                      return TopK(in[0], 2, 1, largest).values;
                    });
}

TEST_CASE("array: GatherElements and ScatterElements gradients", "[array]") {
  Tensor idx = I64({2, 3}, {0, 2, 2, 1, 0, 0});  // repeated targets accumulate
  CheckOpGradient({RandomTensor({2, 4}, 1), idx}, [](GraphBuilder&, const std::vector<Value>& in) {
    return GatherElements(in[0], in[1], 1);
  });
  Tensor unique = I64({2, 2}, {3, 0, 1, 2});
  for (const char* reduction : {"none", "add"})
    CheckOpGradient({RandomTensor({2, 4}, 2), unique, RandomTensor({2, 2}, 3)},
                    [reduction](GraphBuilder&, const std::vector<Value>& in) {
                      return ScatterElements(in[0], in[1], in[2], 1, reduction);
                    });
}
