// Op family "array", part 2: Slice, Gather, Pad, OneHot and Range — inference (incl. unknown dims
// and errors) and reference kernels against hand-computed values. Part 1 is array_ops_test.cc.
#include <catch2/catch.hpp>
#include <cstdint>

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
using Ints = std::vector<int64_t>;

constexpr int64_t kEnd = INT64_MAX;    // "to the end" going forwards
constexpr int64_t kBegin = INT64_MIN;  // "to the beginning" going backwards

TEST_CASE("array: Slice of a vector, numpy semantics", "[array]") {
  GraphBuilder g;
  Value x = g.Constant(Iota({10}));  // 0..9
  auto slice = [&](Ints b, Ints e, Ints steps = {}) { return Slice(x, b, e, {}, steps); };
  std::vector<Value> ys = {
      slice({2}, {5}),                 // x[2:5]
      slice({1}, {8}, {2}),            // x[1:8:2]
      slice({-3}, {-1}),               // x[-3:-1]
      slice({8}, {2}, {-2}),           // x[8:2:-2]
      slice({-1}, {kBegin}, {-1}),     // x[::-1]
      slice({7}, {kEnd}),              // x[7:]
      slice({12}, {20}),               // x[12:20]: empty
      slice({100}, {-100}, {-3}),      // x[100:-100:-3]: starts at the last element
      slice({-20}, {kBegin}, {-1}),    // x[-20::-1]: empty, as numpy (starts before the first)
      slice({9}, {kBegin}, {kBegin}),  // the most negative step: just x[9]
  };
  CHECK(ys[0].shape() == Shape{3});
  CHECK(ys[4].shape() == Shape{10});
  CHECK(ys[6].shape() == Shape{0});
  std::vector<TensorName> fetches(ys.begin(), ys.end());
  auto out = EvalAll(g, fetches);
  CHECK(out[0].ToDoubles() == Doubles{2, 3, 4});
  CHECK(out[1].ToDoubles() == Doubles{1, 3, 5, 7});
  CHECK(out[2].ToDoubles() == Doubles{7, 8});
  CHECK(out[3].ToDoubles() == Doubles{8, 6, 4});
  CHECK(out[4].ToDoubles() == Doubles{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  CHECK(out[5].ToDoubles() == Doubles{7, 8, 9});
  CHECK(out[6].num_elements() == 0);
  CHECK(out[7].ToDoubles() == Doubles{9, 6, 3, 0});
  CHECK(out[8].num_elements() == 0);
  CHECK(out[9].ToDoubles() == Doubles{9});
}

TEST_CASE("array: Slice with axes, steps and unknown dims", "[array]") {
  GraphBuilder g;
  Value x = g.Constant(Iota({3, 4}));    // [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
  Value cols = Slice(x, {1}, {3}, {1});  // x[:, 1:3]
  Value corners = Slice(x, {3, 2}, {0, kBegin}, {-1, 0}, {-2, -2});  // x[2::-2, 3:0:-2]
  Value ints = Slice(g.Constant(Tensor::FromVector<int64_t>({4}, {10, 20, 30, 40})), {-2}, {kEnd});
  CHECK(cols.shape() == Shape{3, 2});
  CHECK(corners.shape() == Shape{2, 2});
  auto out = EvalAll(g, {cols, corners, ints});
  CHECK(out[0].ToDoubles() == Doubles{1, 2, 5, 6, 9, 10});
  CHECK(out[1].ToDoubles() == Doubles{11, 9, 3, 1});
  CHECK(out[2].ToInts() == Ints{30, 40});
  Value u = g.Placeholder("u", f32, {-1, 4});
  Value s = Slice(u, {1, 0}, {kEnd, 2});
  CHECK(s.shape() == Shape{-1, 2});
  Tensor y = Eval(g, s, {{"u", Iota({2, 4})}});
  CHECK(y.ToDoubles() == Doubles{4, 5});
}

TEST_CASE("array: Slice errors", "[array]") {
  auto error = [](Ints b, Ints e, Ints axes, Ints steps) {
    GraphBuilder g;
    Slice(g.Placeholder("x", f32, {3, 4}), b, e, axes, steps);
    return BuildError(g);
  };
  CHECK_THAT(error({0}, {1, 2}, {}, {}),
             Contains("attribute 'begins' has 1 entries but 'ends' has 2"));
  CHECK_THAT(error({0}, {1}, {}, {0}), Contains("attribute 'steps' [0] has a 0 step"));
  CHECK_THAT(error({0, 0}, {1, 1}, {1, -1}, {}), Contains("names axis 1 twice"));
  CHECK_THAT(error({0}, {1}, {2}, {}), Contains("axis 2 is out of range for rank 2"));
  CHECK_THAT(error({0, 0, 0}, {1, 1, 1}, {}, {}), Contains("more than the input's rank 2"));
  CHECK_THAT(error({0}, {1}, {0, 1}, {}), Contains("must be empty or match 'begins'"));
}

TEST_CASE("array: Gather", "[array]") {
  GraphBuilder g;
  Value data = g.Constant(Tensor::FromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  Value rows = Gather(data, g.Constant(Tensor::FromVector<int64_t>({2}, {2, 0})));
  // 2-D i32 indices with a negative index: output [2, 2, 2].
  Value grid = Gather(data, g.Constant(Tensor::FromVector<int32_t>({2, 2}, {0, 1, -1, 0})));
  Value col = Gather(data, g.Constant(Tensor::FromVector<int64_t>({1}, {1})), 1);
  Value scalar = Gather(data, g.Constant(Tensor::Scalar<int64_t>(1)));
  CHECK(rows.shape() == Shape{2, 2});
  CHECK(grid.shape() == Shape{2, 2, 2});
  CHECK(col.shape() == Shape{3, 1});
  CHECK(scalar.shape() == Shape{2});
  auto out = EvalAll(g, {rows, grid, col, scalar});
  CHECK(out[0].ToDoubles() == Doubles{5, 6, 1, 2});
  CHECK(out[1].ToDoubles() == Doubles{1, 2, 3, 4, 5, 6, 1, 2});
  CHECK(out[2].ToDoubles() == Doubles{2, 4, 6});
  CHECK(out[3].ToDoubles() == Doubles{3, 4});
}

TEST_CASE("array: Gather of i64 and bool data, and unknown dims", "[array]") {
  GraphBuilder g;
  Value idx = g.Constant(Tensor::FromVector<int32_t>({3}, {-1, 0, -1}));
  Value i = Gather(g.Constant(Tensor::FromVector<int64_t>({2}, {int64_t{1} << 60, -7})), idx);
  Value b = Gather(g.Constant(Tensor::FromVector<bool>({2}, {false, true})), idx);
  auto out = EvalAll(g, {i, b});
  CHECK(out[0].ToInts() == Ints{-7, int64_t{1} << 60, -7});
  CHECK(out[1].ToInts() == Ints{1, 0, 1});
  Value u = Gather(g.Placeholder("d", f32, {-1, 5, 2}), g.Placeholder("k", i64, {-1}), 1);
  CHECK(u.shape() == Shape{-1, -1, 2});
}

TEST_CASE("array: Gather errors", "[array]") {
  GraphBuilder g;
  Value data = g.Placeholder("data", f32, {3});
  Value y = Gather(data, g.Placeholder("k", i64, {-1}));
  Tensor values = Tensor::FromVector<float>({3}, {1, 2, 3});
  std::string high =
      RunError(g, y, {{"data", values}, {"k", Tensor::FromVector<int64_t>({2}, {0, 3})}});
  CHECK_THAT(high, Contains("index 3 is out of range for axis 0 of size 3"));
  CHECK_THAT(high, Contains("indices element 1"));
  std::string low =
      RunError(g, y, {{"data", values}, {"k", Tensor::FromVector<int64_t>({1}, {-4})}});
  CHECK_THAT(low, Contains("index -4 is out of range"));
  GraphBuilder g1;
  Gather(g1.Scalar(1), g1.Constant(Tensor::Scalar<int64_t>(0)));
  CHECK_THAT(BuildError(g1), Contains("cannot gather from a scalar"));
  GraphBuilder g2;
  Gather(g2.Placeholder("d", f32, {3}), g2.Placeholder("k", f32, {1}));
  CHECK_THAT(BuildError(g2), Contains("has dtype f32, expected one of {i32, i64}"));
  GraphBuilder g3;
  Gather(g3.Placeholder("d", f32, {3}), g3.Placeholder("k", i32, {1}), -2);
  CHECK_THAT(BuildError(g3), Contains("attribute 'axis' is -2, out of range for [3]"));
}

TEST_CASE("array: Pad modes on a vector", "[array]") {
  GraphBuilder g;
  Value x = g.Constant(Tensor::FromVector<float>({3}, {1, 2, 3}));
  Value zeros = Pad(x, {1, 2});
  Value nines = Pad(x, {1, 2}, "constant", 9);
  Value reflect = Pad(x, {2, 1}, "reflect");
  Value edge = Pad(x, {2, 1}, "edge");
  Value crop = Pad(x, {-1, 1});
  Value crop_edge = Pad(x, {1, -2}, "edge");
  CHECK(zeros.shape() == Shape{6});
  CHECK(crop.shape() == Shape{3});
  auto out = EvalAll(g, {zeros, nines, reflect, edge, crop, crop_edge});
  CHECK(out[0].ToDoubles() == Doubles{0, 1, 2, 3, 0, 0});
  CHECK(out[1].ToDoubles() == Doubles{9, 1, 2, 3, 9, 9});
  CHECK(out[2].ToDoubles() == Doubles{3, 2, 1, 2, 3, 2});
  CHECK(out[3].ToDoubles() == Doubles{1, 1, 1, 2, 3, 3});
  CHECK(out[4].ToDoubles() == Doubles{2, 3, 0});
  CHECK(out[5].ToDoubles() == Doubles{1, 1});
}

TEST_CASE("array: Pad in 2-D, other dtypes and unknown dims", "[array]") {
  GraphBuilder g;
  Value x = g.Constant(Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}));
  // pads [x1_begin, x2_begin, x1_end, x2_end]
  Value top_right = Pad(x, {1, 0, 0, 1});
  Value edge = Pad(x, {0, 1, 1, 0}, "edge");
  Value reflect = Pad(g.Constant(Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6})),
                      {1, 1, 0, 1}, "reflect");
  Value ints = Pad(g.Constant(Tensor::FromVector<int64_t>({2}, {-5, 6})), {1, 0}, "constant", 7);
  Value bools = Pad(g.Constant(Tensor::FromVector<bool>({1}, {false})), {0, 1}, "constant", 1);
  CHECK(top_right.shape() == Shape{3, 3});
  CHECK(reflect.shape() == Shape{3, 5});
  auto out = EvalAll(g, {top_right, edge, reflect, ints, bools});
  CHECK(out[0].ToDoubles() == Doubles{0, 0, 0, 1, 2, 0, 3, 4, 0});
  CHECK(out[1].ToDoubles() == Doubles{1, 1, 2, 3, 3, 4, 3, 3, 4});
  CHECK(out[2].ToDoubles() == Doubles{5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5});
  CHECK(out[3].ToInts() == Ints{7, -5, 6});
  CHECK(out[4].ToInts() == Ints{0, 1});
  CHECK(Pad(g.Placeholder("u", f32, {-1, 3}), {1, 1, 1, 1}).shape() == Shape{-1, 5});
}

TEST_CASE("array: Pad errors", "[array]") {
  auto error = [](Shape shape, Ints pads, std::string mode) {
    GraphBuilder g;
    Pad(g.Placeholder("x", f32, shape), pads, mode);
    return BuildError(g);
  };
  CHECK_THAT(error({3}, {1, 1}, "wrap"),
             Contains("attribute 'mode' must be \"constant\", \"reflect\" or \"edge\""));
  CHECK_THAT(error({3}, {1}, "constant"), Contains("must have 2 * rank = 2 entries"));
  CHECK_THAT(error({3}, {3, 0}, "reflect"), Contains("needs pads smaller than the dim"));
  CHECK_THAT(error({3}, {-4, 2}, "constant"), Contains("crops more than dim 0 of [3] holds"));
  CHECK_THAT(error({3}, {-2, -2}, "constant"), Contains("crops more than dim 0"));
  CHECK_THAT(error({0}, {1, 0}, "edge"), Contains("edge padding needs a non-empty dim"));
  // A dim known only at run time is checked then.
  GraphBuilder g;
  Value y = Pad(g.Placeholder("x", f32, {-1}), {2, 0}, "reflect");
  CHECK_THAT(RunError(g, y, {{"x", Iota({2})}}), Contains("needs pads smaller than the dim"));
}

TEST_CASE("array: OneHot", "[array]") {
  GraphBuilder g;
  Value idx = g.Constant(Tensor::FromVector<int64_t>({2}, {1, 2}));
  Value last = OneHot(idx, 3);
  Value first = OneHot(idx, 3, f32, 1, 0, 0);
  CHECK(last.shape() == Shape{2, 3});
  CHECK(first.shape() == Shape{3, 2});
  // Negative indices count from the end; out of [-depth, depth) gives all off_value.
  Value odd = OneHot(g.Constant(Tensor::FromVector<int32_t>({4}, {-1, 3, -4, 0})), 3, i32, 5, -1);
  // 2-D indices, new axis in the middle: out[a][d][b] = (idx[a][b] == d).
  Value mid =
      OneHot(g.Constant(Tensor::FromVector<int32_t>({2, 2}, {0, 1, 2, 0})), 3, f32, 1, 0, 1);
  Value flags = OneHot(idx, 3, boolean);
  CHECK(odd.dtype() == i32);
  CHECK(mid.shape() == Shape{2, 3, 2});
  auto out = EvalAll(g, {last, first, odd, mid, flags});
  CHECK(out[0].ToDoubles() == Doubles{0, 1, 0, 0, 0, 1});
  CHECK(out[1].ToDoubles() == Doubles{0, 0, 1, 0, 0, 1});
  CHECK(out[2].ToInts() == Ints{-1, -1, 5, -1, -1, -1, -1, -1, -1, 5, -1, -1});
  CHECK(out[3].ToDoubles() == Doubles{1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0});
  CHECK(out[4].ToInts() == Ints{0, 1, 0, 0, 0, 1});
  CHECK(OneHot(g.Placeholder("u", i64, {-1}), 4).shape() == Shape{-1, 4});
}

TEST_CASE("array: OneHot errors", "[array]") {
  GraphBuilder g1;
  OneHot(g1.Placeholder("i", i64, {2}), 0);
  CHECK_THAT(BuildError(g1), Contains("attribute 'depth' is 0, expected > 0"));
  GraphBuilder g2;
  OneHot(g2.Placeholder("i", i64, {2}), 3, f32, 1, 0, 2);
  CHECK_THAT(BuildError(g2),
             Contains("attribute 'axis' is 2, out of range for an output of rank 2"));
  GraphBuilder g3;
  OneHot(g3.Placeholder("i", f32, {2}), 3);
  CHECK_THAT(BuildError(g3), Contains("expected one of {i32, i64}"));
}

TEST_CASE("array: Range with known length", "[array]") {
  GraphBuilder g;
  Value ints = Range(g.Scalar(0, i64), g.Scalar(10, i64), g.Scalar(3, i64));
  Value quarters = Range(g.Scalar(1), g.Scalar(2), g.Scalar(0.25));
  Value down = Range(g.Scalar(5, i32), g.Scalar(0, i32), g.Scalar(-2, i32));
  Value empty = Range(g.Scalar(5, i32), g.Scalar(0, i32), g.Scalar(1, i32));
  Value wide = Range(g.Scalar(-9e18, i64), g.Scalar(9e18, i64), g.Scalar(6e18, i64));
  CHECK(ints.shape() == Shape{4});
  CHECK(ints.dtype() == i64);
  CHECK(quarters.shape() == Shape{4});
  CHECK(down.shape() == Shape{3});
  CHECK(empty.shape() == Shape{0});
  CHECK(wide.shape() == Shape{3});
  auto out = EvalAll(g, {ints, quarters, down, empty, wide});
  CHECK(out[0].ToInts() == Ints{0, 3, 6, 9});
  CHECK(out[1].ToDoubles() == Doubles{1, 1.25, 1.5, 1.75});
  CHECK(out[2].ToInts() == Ints{5, 3, 1});
  CHECK(out[3].num_elements() == 0);
  CHECK(out[4].ToInts() == Ints{-9000000000000000000, -3000000000000000000, 3000000000000000000});
}

TEST_CASE("array: Range with unknown length, and errors", "[array]") {
  GraphBuilder g;
  Value start = g.Placeholder("start", f32, {});
  Value delta = g.Placeholder("delta", f32, {});
  Value r = Range(start, g.Scalar(1), delta);
  CHECK(r.shape() == Shape{-1});
  auto scalar = [](float v) { return Tensor::Scalar<float>(v); };
  Tensor y = Eval(g, r, {{"start", scalar(0)}, {"delta", scalar(0.3f)}});
  REQUIRE(y.shape() == Shape{4});  // ceil(1 / 0.3) = 4
  CHECK(y.GetDouble(1) == Approx(0.3));
  CHECK(y.GetDouble(3) == Approx(0.9));
  CHECK_THAT(RunError(g, r, {{"start", scalar(0)}, {"delta", scalar(0)}}),
             Contains("delta must not be 0"));

  GraphBuilder g1;
  Range(g1.Scalar(0), g1.Placeholder("limit", f32, {}), g1.Scalar(0));
  CHECK_THAT(BuildError(g1), Contains("(Range, built at tests/ir/array_ops_index_test.cc:"));
  CHECK_THAT(BuildError(g1), Contains("delta must not be 0"));
  GraphBuilder g2;
  Range(g2.Scalar(0), g2.Placeholder("limit", f32, {2}), g2.Scalar(1));
  CHECK_THAT(BuildError(g2), Contains("input 'limit' must be a scalar, got shape [2]"));
  GraphBuilder g3;
  Range(g3.Scalar(0), g3.Scalar(2, i64), g3.Scalar(1));
  CHECK_THAT(BuildError(g3), Contains("they must match"));
  GraphBuilder g4;
  Value b = g4.Constant(Tensor::Scalar<bool>(true));
  Range(b, b, b);
  CHECK_THAT(BuildError(g4), Contains("has dtype bool, expected one of"));
}

TEST_CASE("array: extreme attribute values give errors, never overflow", "[array][bad-input]") {
  auto error = [](auto make) {
    GraphBuilder g;
    make(g.Placeholder("x", f32, {2, 3}));
    return BuildError(g);
  };
  CHECK_THAT(error([](Value x) { Tile(x, {kEnd, 2}); }), Contains("overflows int64"));
  CHECK_THAT(error([](Value x) { Reshape(x, {kEnd, 2}); }), Contains("overflows int64"));
  CHECK_THAT(error([](Value x) {
               Pad(x, {kBegin, 0, kEnd, 0});
             }),
             Contains("crops more than dim 0"));
  CHECK_THAT(error([](Value x) { Pad(x, {kEnd, 0, kEnd, 0}); }), Contains("overflows int64"));
  CHECK_THAT(error([](Value x) { SplitEven(x, 0, kEnd); }), Contains("expected 1..65536"));
  CHECK_THAT(error([](Value x) { Split(x, 0, {kEnd, kEnd}); }), Contains("must hold sizes >= 0"));
  CHECK_THAT(error([](Value x) { Unsqueeze(x, {kBegin}); }), Contains("out of range"));
  CHECK_THAT(error([](Value x) { Transpose(x, {kBegin, 0}); }), Contains("not a permutation"));
  CHECK_THAT(error([](Value x) { Flatten(x, kBegin); }), Contains("expected a value in [-2, 2]"));
  CHECK_THAT(error([](Value x) { Squeeze(x, {kEnd}); }), Contains("out of range"));
  CHECK_THAT(error([](Value x) { Concat({x}, kBegin); }), Contains("out of range"));
  CHECK_THAT(error([](Value x) { Gather(x, x.builder()->Scalar(0, i64), kEnd); }),
             Contains("out of range"));
  CHECK_THAT(error([](Value x) { OneHot(x.builder()->Scalar(0, i64), 2, f32, 1, 0, kBegin); }),
             Contains("out of range"));
  GraphBuilder g;
  Value s = Slice(g.Constant(Iota({4})), {kBegin}, {kEnd}, {}, {kEnd});
  CHECK(s.shape() == Shape{1});
  CHECK(Eval(g, s).ToDoubles() == Doubles{0});
  GraphBuilder r1;
  Range(r1.Scalar(-9.2e18, i64), r1.Scalar(9.2e18, i64), r1.Scalar(1, i64));
  CHECK_THAT(BuildError(r1), Contains("overflows int64"));
  GraphBuilder r2;
  Range(r2.Scalar(0), r2.Scalar(1e30), r2.Scalar(1));
  CHECK_THAT(BuildError(r2), Contains("is not a finite int64"));
}

TEST_CASE("array: NonZero gives positions in row-major order, a count known from values",
          "[array]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3});
  Value nz = NonZero(x);
  CHECK(nz.dtype() == i64);
  CHECK(nz.shape() == Shape{2, -1});
  // [[0, 2, 0], [NaN, 0, -1]]: (0, 1), (1, 0), (1, 2)
  Tensor y = Eval(g, nz, {{"x", Tensor::FromVector<float>({2, 3}, {0, 2, 0, NAN, 0, -1})}});
  REQUIRE(y.shape() == Shape{2, 3});
  CHECK(y.ToInts() == Ints{0, 1, 1, 1, 0, 2});
  CHECK(Eval(g, nz, {{"x", Tensor(f32, Shape{2, 3})}}).shape() == Shape{2, 0});
  // A constant's count is known when the graph is built; bools and scalars too.
  GraphBuilder c;
  Value flags = NonZero(c.Constant(Tensor::FromVector<bool>({4}, {true, false, true, true})));
  CHECK(flags.shape() == Shape{1, 3});
  CHECK(EvalAll(c, {flags}, {})[0].ToInts() == Ints{0, 2, 3});
  CHECK(NonZero(c.Scalar(5)).shape() == Shape{0, 1});
}
