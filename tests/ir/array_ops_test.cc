// Op family "array", part 1: Reshape, Transpose, Squeeze, Unsqueeze, Flatten, BroadcastTo, Tile,
// Shape, Concat and Split — inference (incl. unknown dims and errors) and reference kernels against
// hand-computed values. Part 2 (Slice, Gather, Pad, OneHot, Range) is array_ops_index_test.cc.
#include <catch2/catch.hpp>

#include "ir/ops/array.h"
#include "runtime/session.h"
#include "tests/testing/eval.h"

using namespace kiln;
using Catch::Matchers::Contains;
using Doubles = std::vector<double>;
using kiln::testing::BuildError;
using kiln::testing::Eval;
using kiln::testing::EvalAll;
using kiln::testing::Iota;
using kiln::testing::RunError;

TEST_CASE("array: Reshape with -1 and 0", "[array]") {
  GraphBuilder g;
  Value x = g.Constant(Iota({2, 3, 4}));
  Value a = Reshape(x, {0, -1});     // [2, 12]
  Value b = Reshape(x, {-1, 0, 2});  // 0 copies dim 1 (3): [4, 3, 2]
  Value c = Reshape(x, {24});
  CHECK(a.shape() == Shape{2, 12});
  CHECK(b.shape() == Shape{4, 3, 2});
  CHECK(c.shape() == Shape{24});
  auto out = EvalAll(g, {a, b, c});
  CHECK(out[1].shape() == Shape{4, 3, 2});
  CHECK(out[1].ToDoubles() == Iota({24}).ToDoubles());  // element order is unchanged
  Value s = Reshape(g.Constant(Tensor::Scalar<float>(5)), {1, 1});
  CHECK(Eval(g, s).ToDoubles() == Doubles{5});
}

TEST_CASE("array: Reshape with unknown dims", "[array]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 3, 4});
  Value a = Reshape(x, {0, -1});
  CHECK(a.shape() == Shape{-1, 12});  // the copied unknown dim cancels
  CHECK(Reshape(x, {-1}).shape() == Shape{-1});
  CHECK(Reshape(x, {2, -1}).shape() == Shape{2, -1});
  CHECK(Reshape(x, {0, 0, 2, 2}).shape() == Shape{-1, 3, 2, 2});
  CHECK(Reshape(g.Placeholder("e", f32, {-1, 0, 3}), {-1, 3}).shape() == Shape{0, 3});  // empty
  Tensor y = Eval(g, a, {{"x", Iota({2, 3, 4})}});
  CHECK(y.shape() == Shape{2, 12});
  CHECK(y.GetDouble(23) == 23);
}

TEST_CASE("array: Reshape keeps i64 and bool values", "[array]") {
  GraphBuilder g;
  Value i =
      Reshape(g.Constant(Tensor::FromVector<int64_t>({4}, {1, -2, int64_t{1} << 40, 4})), {2, 2});
  Value b = Reshape(g.Constant(Tensor::FromVector<bool>({2, 2}, {true, false, false, true})), {-1});
  auto out = EvalAll(g, {i, b});
  CHECK(out[0].dtype() == i64);
  CHECK(out[0].ToInts() == std::vector<int64_t>{1, -2, int64_t{1} << 40, 4});
  CHECK(out[1].dtype() == boolean);
  CHECK(out[1].ToInts() == std::vector<int64_t>{1, 0, 0, 1});
}

TEST_CASE("array: Reshape errors", "[array]") {
  auto error = [](std::vector<int64_t> shape) {
    GraphBuilder g;
    Reshape(g.Placeholder("x", f32, {2, 3}), std::move(shape));
    return BuildError(g);
  };
  CHECK_THAT(error({-1, -1}), Contains("has more than one -1"));
  CHECK_THAT(error({4, 4}), Contains("cannot reshape [2, 3] to [4, 4]"));
  CHECK_THAT(error({4, 4}), Contains("element counts differ"));
  CHECK_THAT(error({-1, 4}), Contains("6 elements are not divisible by 4"));
  CHECK_THAT(error({0, 0, 0}), Contains("has rank 2"));
  CHECK_THAT(error({-2, -3}), Contains("entries must be >= -1"));
  CHECK_THAT(error({-1, 4}), Contains("(Reshape, built at tests/ir/array_ops_test.cc:"));
}

TEST_CASE("array: Transpose", "[array]") {
  GraphBuilder g;
  Value x = g.Constant(Iota({2, 3}));  // [[0, 1, 2], [3, 4, 5]]
  Value t = Transpose(x);
  CHECK(t.shape() == Shape{3, 2});
  CHECK(Eval(g, t).ToDoubles() == Doubles{0, 3, 1, 4, 2, 5});
  // out[i][j][k] = x[k][i][j] for perm {1, 2, 0}.
  Value p = Transpose(g.Constant(Iota({2, 2, 2})), {1, 2, 0});
  CHECK(Eval(g, p).ToDoubles() == Doubles{0, 4, 1, 5, 2, 6, 3, 7});
  CHECK(Transpose(g.Placeholder("u", f16, {-1, 3, 5}), {2, 0, 1}).shape() == Shape{5, -1, 3});
  Value h = Transpose(g.Constant(Tensor::FromDoubles(f16, {2, 2}, {1.5, 2, 3, -4})));
  CHECK(Eval(g, h).ToDoubles() == Doubles{1.5, 3, 2, -4});
}

TEST_CASE("array: Transpose errors", "[array]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3});
  Transpose(x, {0, 0});
  CHECK_THAT(BuildError(g), Contains("attribute 'perm' [0, 0] is not a permutation of 0..1"));
  GraphBuilder g2;
  Transpose(g2.Placeholder("x", f32, {2, 3}), {0});
  CHECK_THAT(BuildError(g2), Contains("must have one entry per input dim (2 for [2, 3]), has 1"));
}

TEST_CASE("array: Squeeze and Unsqueeze", "[array]") {
  GraphBuilder g;
  Value x = g.Constant(Iota({1, 3, 1, 2}));
  Value all = Squeeze(x);
  CHECK(all.shape() == Shape{3, 2});
  CHECK(Squeeze(x, {-2}).shape() == Shape{1, 3, 2});
  CHECK(Squeeze(x, {0, 2}).shape() == Shape{3, 2});
  CHECK(Eval(g, all).ToDoubles() == Doubles{0, 1, 2, 3, 4, 5});
  Value u = Unsqueeze(all, {0, 3});
  CHECK(u.shape() == Shape{1, 3, 2, 1});
  CHECK(Unsqueeze(all, {-1}).shape() == Shape{3, 2, 1});
  CHECK(Unsqueeze(all, {1}).shape() == Shape{3, 1, 2});
  CHECK(Eval(g, u).ToDoubles() == Doubles{0, 1, 2, 3, 4, 5});
  Value p = g.Placeholder("p", f32, {-1, 1});
  CHECK(Squeeze(p, {1}).shape() == Shape{-1});
  CHECK(Unsqueeze(p, {0}).shape() == Shape{1, -1, 1});
}

TEST_CASE("array: Squeeze and Unsqueeze errors", "[array]") {
  GraphBuilder g1;
  Squeeze(g1.Placeholder("x", f32, {1, 3}), {1});
  CHECK_THAT(BuildError(g1), Contains("cannot squeeze dim 1 of [1, 3]: its size is 3, expected 1"));
  GraphBuilder g2;
  Squeeze(g2.Placeholder("x", f32, {-1, 1}));
  CHECK_THAT(BuildError(g2), Contains("(dim 0 is unknown); pass explicit 'axes'"));
  GraphBuilder g3;
  Unsqueeze(g3.Placeholder("x", f32, {2}), {0, 0});
  CHECK_THAT(BuildError(g3), Contains("names axis 0 twice"));
  GraphBuilder g4;
  Unsqueeze(g4.Placeholder("x", f32, {2}), {2});
  CHECK_THAT(BuildError(g4), Contains("axis 2 is out of range for an output of rank 2"));
  GraphBuilder g5;
  Unsqueeze(g5.Placeholder("x", f32, {2}), {});
  CHECK_THAT(BuildError(g5), Contains("must name at least one new axis"));
  // An unknown dim named in axes is checked when its size is known, at run time.
  GraphBuilder g6;
  Value s = Squeeze(g6.Placeholder("x", f32, {-1, 2}), {0});
  CHECK(s.shape() == Shape{2});
  CHECK_THAT(RunError(g6, s, {{"x", Iota({3, 2})}}), Contains("its size is 3, expected 1"));
}

TEST_CASE("array: Flatten", "[array]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3, 4});
  CHECK(Flatten(x).shape() == Shape{2, 12});
  CHECK(Flatten(x, 0).shape() == Shape{1, 24});
  CHECK(Flatten(x, 3).shape() == Shape{24, 1});
  CHECK(Flatten(x, -1).shape() == Shape{6, 4});
  Value u = g.Placeholder("u", f32, {-1, 3, 4});
  CHECK(Flatten(u).shape() == Shape{-1, 12});
  CHECK(Flatten(u, 2).shape() == Shape{-1, 4});
  CHECK(Flatten(g.Placeholder("e", f32, {-1, 0, 4}), 2).shape() == Shape{0, 4});
  Value f = Flatten(g.Constant(Iota({2, 3})), 0);
  Tensor y = Eval(g, f);
  CHECK(y.shape() == Shape{1, 6});
  CHECK(y.ToDoubles() == Doubles{0, 1, 2, 3, 4, 5});
  GraphBuilder bad;
  Flatten(bad.Placeholder("x", f32, {2, 3}), 3);
  CHECK_THAT(BuildError(bad), Contains("attribute 'axis' is 3, expected a value in [-2, 2]"));
}

TEST_CASE("array: BroadcastTo", "[array]") {
  GraphBuilder g;
  Value row = BroadcastTo(g.Constant(Tensor::FromVector<float>({3}, {1, 2, 3})), {2, 3});
  Value col = BroadcastTo(g.Constant(Tensor::FromVector<float>({2, 1}, {1, 2})), {2, 3});
  Value b = BroadcastTo(g.Constant(Tensor::FromVector<bool>({1}, {true})), {2});
  CHECK(row.shape() == Shape{2, 3});
  auto out = EvalAll(g, {row, col, b});
  CHECK(out[0].ToDoubles() == Doubles{1, 2, 3, 1, 2, 3});
  CHECK(out[1].ToDoubles() == Doubles{1, 1, 1, 2, 2, 2});
  CHECK(out[2].ToInts() == std::vector<int64_t>{1, 1});
  CHECK(BroadcastTo(g.Placeholder("u", f32, {-1, 1}), {2, 5, 4}).shape() == Shape{2, 5, 4});
  GraphBuilder g1;
  BroadcastTo(g1.Placeholder("x", f32, {3}), {2, 4});
  CHECK_THAT(BuildError(g1),
             Contains("cannot broadcast [3] to [2, 4]: dim 0 has size 3, expected 1 or 4"));
  GraphBuilder g2;
  BroadcastTo(g2.Placeholder("x", f32, {2, 3}), {3});
  CHECK_THAT(BuildError(g2), Contains("which has fewer dims"));
}

TEST_CASE("array: Tile", "[array]") {
  GraphBuilder g;
  Value x = g.Constant(Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}));
  Value wide = Tile(x, {1, 2});
  Value tall = Tile(x, {2, 1});
  Value none = Tile(x, {0, 1});
  CHECK(wide.shape() == Shape{2, 4});
  CHECK(none.shape() == Shape{0, 2});
  auto out = EvalAll(g, {wide, tall, none});
  CHECK(out[0].ToDoubles() == Doubles{1, 2, 1, 2, 3, 4, 3, 4});
  CHECK(out[1].ToDoubles() == Doubles{1, 2, 3, 4, 1, 2, 3, 4});
  CHECK(out[2].num_elements() == 0);
  Value u = g.Placeholder("u", f32, {-1, 2});
  CHECK(Tile(u, {3, 2}).shape() == Shape{-1, 4});
  CHECK(Tile(u, {0, 2}).shape() == Shape{0, 4});
  GraphBuilder g1;
  Tile(g1.Placeholder("x", f32, {2}), {1, 1});
  CHECK_THAT(BuildError(g1), Contains("must have one entry per input dim (1 for [2])"));
  GraphBuilder g2;
  Tile(g2.Placeholder("x", f32, {2}), {-1});
  CHECK_THAT(BuildError(g2), Contains("has a negative entry"));
}

TEST_CASE("array: Shape gives the run-time shape", "[array]") {
  GraphBuilder g;
  Value s = ShapeOf(g.Placeholder("x", boolean, {-1, 3}));
  CHECK(s.dtype() == i64);
  CHECK(s.shape() == Shape{2});
  Tensor y = Eval(g, s, {{"x", Tensor(boolean, {4, 3})}});
  CHECK(y.ToInts() == std::vector<int64_t>{4, 3});
  Value scalar = ShapeOf(g.Scalar(1));
  CHECK(scalar.shape() == Shape{0});
  CHECK(Eval(g, scalar).num_elements() == 0);
}

TEST_CASE("array: Concat", "[array]") {
  GraphBuilder g;
  Value a = g.Constant(Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}));
  Value b = g.Constant(Tensor::FromVector<float>({2, 1}, {5, 6}));
  Value c = g.Constant(Tensor::FromVector<float>({1, 2}, {7, 8}));
  Value cols = Concat({a, b}, 1);
  Value last = Concat({a, b, a}, -1);
  Value rows = Concat({a, c}, 0);
  Value one = Concat({c}, 0);
  CHECK(cols.shape() == Shape{2, 3});
  CHECK(rows.shape() == Shape{3, 2});
  auto out = EvalAll(g, {cols, last, rows, one});
  CHECK(out[0].ToDoubles() == Doubles{1, 2, 5, 3, 4, 6});
  CHECK(out[1].ToDoubles() == Doubles{1, 2, 5, 1, 2, 3, 4, 6, 3, 4});
  CHECK(out[2].ToDoubles() == Doubles{1, 2, 3, 4, 7, 8});
  CHECK(out[3].ToDoubles() == Doubles{7, 8});
}

TEST_CASE("array: Concat of i64 and bool, and with unknown dims", "[array]") {
  GraphBuilder g;
  Value i = Concat({g.Constant(Tensor::FromVector<int64_t>({2}, {-1, int64_t{1} << 50})),
                    g.Constant(Tensor::FromVector<int64_t>({1}, {3}))},
                   0);
  Value b = Concat({g.Constant(Tensor::FromVector<bool>({1}, {true})),
                    g.Constant(Tensor::FromVector<bool>({2}, {false, true}))},
                   0);
  auto out = EvalAll(g, {i, b});
  CHECK(out[0].ToInts() == std::vector<int64_t>{-1, int64_t{1} << 50, 3});
  CHECK(out[1].ToInts() == std::vector<int64_t>{1, 0, 1});
  Value u = g.Placeholder("u", f32, {-1, 2});
  Value v = g.Placeholder("v", f32, {3, -1});
  CHECK(Concat({u, v}, 0).shape() == Shape{-1, 2});
  CHECK(Concat({u, v}, 1).shape() == Shape{3, -1});
  CHECK(Concat({v, g.Placeholder("w", f32, {3, 4})}, 1).shape() == Shape{3, -1});
}

TEST_CASE("array: Concat errors", "[array]") {
  GraphBuilder g1;
  Concat({g1.Placeholder("a", f32, {2, 2}), g1.Placeholder("b", f32, {3, 3})}, 1);
  std::string e1 = BuildError(g1);
  CHECK_THAT(e1, Contains("input 1 has shape [3, 3], which differs from [2, 2] in dim 0"));
  CHECK_THAT(e1, Contains("(Concat, built at tests/ir/array_ops_test.cc:"));
  GraphBuilder g2;
  Concat({g2.Placeholder("a", f32, {2, 2}), g2.Placeholder("b", f32, {2})}, 0);
  CHECK_THAT(BuildError(g2), Contains("all inputs must have the same rank"));
  GraphBuilder g3;
  Concat({g3.Placeholder("a", f32, {2}), g3.Placeholder("b", i64, {2})}, 0);
  CHECK_THAT(BuildError(g3), Contains("they must match"));
  GraphBuilder g4;
  Concat({g4.Scalar(1), g4.Scalar(2)}, 0);
  CHECK_THAT(BuildError(g4), Contains("cannot concatenate scalars"));
  GraphBuilder g5;
  Concat({g5.Placeholder("a", f32, {2})}, 1);
  CHECK_THAT(BuildError(g5), Contains("attribute 'axis' is 1, out of range for [2]"));
}

TEST_CASE("array: Split by sizes and by count", "[array]") {
  GraphBuilder g;
  std::vector<Value> parts = Split(g.Constant(Iota({5})), 0, {2, 3});
  REQUIRE(parts.size() == 2);
  CHECK(parts[1].shape() == Shape{3});
  Value x = g.Constant(Iota({2, 4}));  // [[0, 1, 2, 3], [4, 5, 6, 7]]
  std::vector<Value> cols = Split(x, 1, {1, 0, 3});
  std::vector<Value> halves = SplitEven(x, -1, 2);
  REQUIRE(cols.size() == 3);
  REQUIRE(halves.size() == 2);
  CHECK(cols[1].shape() == Shape{2, 0});
  auto out = EvalAll(g, {parts[0], parts[1], cols[0], cols[1], cols[2], halves[0], halves[1]});
  CHECK(out[0].ToDoubles() == Doubles{0, 1});
  CHECK(out[1].ToDoubles() == Doubles{2, 3, 4});
  CHECK(out[2].ToDoubles() == Doubles{0, 4});
  CHECK(out[3].num_elements() == 0);
  CHECK(out[4].ToDoubles() == Doubles{1, 2, 3, 5, 6, 7});
  CHECK(out[5].ToDoubles() == Doubles{0, 1, 4, 5});
  CHECK(out[6].ToDoubles() == Doubles{2, 3, 6, 7});
}

TEST_CASE("array: Split with unknown dims and errors", "[array]") {
  GraphBuilder g;
  Value u = g.Placeholder("u", f32, {-1, 4});
  std::vector<Value> even = SplitEven(u, 0, 2);
  CHECK(even[0].shape() == Shape{-1, 4});
  std::vector<Value> sized = Split(u, 0, {1, 2});
  CHECK(sized[1].shape() == Shape{2, 4});
  CHECK_THAT(RunError(g, sized[0], {{"u", Iota({4, 4})}}),
             Contains("attribute 'sizes' [1, 2] sums to 3, but dim 0 of [4, 4] has size 4"));

  GraphBuilder g1;
  Split(g1.Placeholder("x", f32, {5}), 0, {2, 2});
  CHECK_THAT(BuildError(g1), Contains("sums to 4, but dim 0 of [5] has size 5"));
  GraphBuilder g2;
  SplitEven(g2.Placeholder("x", f32, {5}), 0, 2);
  CHECK_THAT(BuildError(g2), Contains("num_outputs 2 does not divide dim 0 of [5]"));
  GraphBuilder g3;
  SplitEven(g3.Placeholder("x", f32, {4}), 0, 0);
  CHECK_THAT(BuildError(g3), Contains("exactly one of 'sizes' (non-empty) and 'num_outputs'"));
  GraphBuilder g4;
  AttrMap both;
  both.Set("sizes", std::vector<int64_t>{2, 2});
  both.Set("num_outputs", int64_t{2});
  g4.AddOp("Split", {g4.Placeholder("x", f32, {4})}, both, SourceLocation::current());
  CHECK_THAT(BuildError(g4), Contains("got sizes [2, 2] and num_outputs 2"));
  GraphBuilder g5;
  Split(g5.Placeholder("x", f32, {4}), 0, {5, -1});
  CHECK_THAT(BuildError(g5), Contains("must hold sizes >= 0"));
}
