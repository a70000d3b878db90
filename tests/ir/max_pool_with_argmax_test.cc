// MaxPoolWithArgmax (ir/ops/max_pool_with_argmax.h): hand-worked windows with dilations, padding
// and windows that hold no element of x, ties and NaN, integers, agreement with MaxPool2D where
// both apply, gradients against float64 central differences, and the attributes it refuses. Eval
// also runs every compiled backend against the reference kernel.
#include "ir/ops/max_pool_with_argmax.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "ir/ops/array.h"
#include "ir/ops/nn.h"
#include "tests/testing/eval.h"
#include "tests/testing/gradcheck_op.h"

using namespace kiln;
using Catch::Contains;

namespace {

std::vector<int64_t> Ints(const Tensor& t) { return t.ToInts(); }

}  // namespace

TEST_CASE("MaxPoolWithArgmax: dilated windows over a padded axis", "[nn]") {
  // Kernel 2, dilation 3, pad 2 before: windows start at -2, -1, 0, 1 and cover {-2, 1},
  // {-1, 2}, {0, 3}, {1, 4}; the padded positions are ignored.
  GraphBuilder g;
  Value x = g.Constant(Tensor::FromVector<float>({1, 1, 5}, {3, 1, 4, 1, 5}));
  MaxPoolWithArgmaxResult r =
      MaxPoolWithArgmax(x, {.kernel = {2}, .strides = {1}, .dilations = {3}, .pads = {2, 0}});
  Tensor y = testing::Eval(g, r.y);
  CHECK(y.shape() == Shape{1, 1, 4});
  CHECK(y.ToDoubles() == std::vector<double>{1, 4, 3, 5});
  CHECK(Ints(testing::Eval(g, r.argmax)) == std::vector<int64_t>{1, 2, 0, 4});
}

TEST_CASE("MaxPoolWithArgmax: a window with no element of x gives -inf and argmax -1", "[nn]") {
  // Kernel 2, dilation 4, pads 1 and 3: the window at -1 covers {-1, 3}, both outside x.
  GraphBuilder g;
  Value x = g.Constant(Tensor::FromVector<float>({1, 1, 2}, {7, 8}));
  MaxPoolWithArgmaxResult r =
      MaxPoolWithArgmax(x, {.kernel = {2}, .strides = {1}, .dilations = {4}, .pads = {1, 3}});
  const std::vector<double> y = testing::Eval(g, r.y).ToDoubles();
  REQUIRE(y.size() == 2);
  CHECK(y[0] == -std::numeric_limits<double>::infinity());
  CHECK(y[1] == 7);
  CHECK(Ints(testing::Eval(g, r.argmax)) == std::vector<int64_t>{-1, 0});
  // Integers get their lowest value there.
  GraphBuilder gi;
  Value xi = gi.Constant(Tensor::FromVector<int32_t>({1, 1, 2}, {-7, 8}));
  MaxPoolWithArgmaxResult ri =
      MaxPoolWithArgmax(xi, {.kernel = {2}, .strides = {1}, .dilations = {4}, .pads = {1, 3}});
  CHECK(Ints(testing::Eval(gi, ri.y)) ==
        std::vector<int64_t>{std::numeric_limits<int32_t>::min(), -7});
}

TEST_CASE("MaxPoolWithArgmax: 3-D windows, ties, NaN and indices across N and C", "[nn]") {
  // x [2, 2, 2, 2, 2]: plane 0 all ones (a tie: the first position wins), plane 1 ascending,
  // plane 2 with a NaN (it wins), plane 3 with its maximum last. argmax addresses x flattened.
  std::vector<float> values(32, 1.0f);
  for (int i = 0; i < 8; ++i) values[8 + i] = static_cast<float>(i);
  values[16 + 3] = std::numeric_limits<float>::quiet_NaN();
  for (int i = 0; i < 8; ++i) values[24 + i] = static_cast<float>(-i);
  values[24 + 7] = 100;
  GraphBuilder g;
  Value x = g.Constant(Tensor::FromVector<float>({2, 2, 2, 2, 2}, values));
  MaxPoolWithArgmaxResult r = MaxPoolWithArgmax(x, {.kernel = {2, 2, 2}});
  const std::vector<double> y = testing::Eval(g, r.y).ToDoubles();
  REQUIRE(y.size() == 4);
  CHECK(y[0] == 1);
  CHECK(y[1] == 7);
  CHECK(std::isnan(y[2]));
  CHECK(y[3] == 100);
  CHECK(Ints(testing::Eval(g, r.argmax)) == std::vector<int64_t>{0, 15, 19, 31});
}

TEST_CASE("MaxPoolWithArgmax agrees with MaxPool2D, and argmax points at the maximum", "[nn]") {
  const Tensor input = testing::RandomTensor({2, 3, 7, 6}, 11);
  GraphBuilder g;
  Value x = g.Constant(input);
  Pool2DOptions pool{.kernel = {3, 2}, .strides = {2, 1}, .pads = {1, 0, 1, 1}, .ceil_mode = true};
  MaxPoolWithArgmaxResult r = MaxPoolWithArgmax(
      x, {.kernel = {3, 2}, .strides = {2, 1}, .pads = {1, 0, 1, 1}, .ceil_mode = true});
  const Tensor y = testing::Eval(g, r.y);
  CHECK(y.ToDoubles() == testing::Eval(g, MaxPool2D(x, pool)).ToDoubles());
  const std::vector<int64_t> at = Ints(testing::Eval(g, r.argmax));
  REQUIRE(static_cast<int64_t>(at.size()) == y.num_elements());
  for (size_t i = 0; i < at.size(); ++i) CHECK(input.GetDouble(at[i]) == y.GetDouble(i));
}

TEST_CASE("MaxPoolWithArgmax: gradients against central differences", "[nn][grad]") {
  testing::CheckOpGradient(
      {testing::RandomTensor({2, 3, 5, 6}, 12)}, [](GraphBuilder&, const std::vector<Value>& in) {
        return MaxPoolWithArgmax(
                   in[0],
                   {.kernel = {2, 3}, .strides = {1, 2}, .dilations = {2, 1}, .pads = {1, 1, 0, 1}})
            .y;
      });
  // Overlapping windows (an element is the maximum of several), and a window of padding alone.
  testing::CheckOpGradient({testing::RandomTensor({1, 2, 6}, 13)},
                           [](GraphBuilder&, const std::vector<Value>& in) {
                             return MaxPoolWithArgmax(in[0], {.kernel = {3}, .strides = {1}}).y;
                           });
  testing::CheckOpGradient(
      {testing::RandomTensor({1, 1, 2}, 14)}, [](GraphBuilder&, const std::vector<Value>& in) {
        // The -inf of the empty window does not enter the loss's gradient.
        Value y = MaxPoolWithArgmax(
                      in[0], {.kernel = {2}, .strides = {1}, .dilations = {4}, .pads = {1, 3}})
                      .y;
        return Slice(y, {1}, {2}, {2});
      });
}

TEST_CASE("MaxPoolWithArgmax refuses windows its input cannot hold", "[nn]") {
  auto error = [](std::vector<int64_t> shape, const MaxPoolWithArgmaxOptions& o) {
    GraphBuilder g;
    MaxPoolWithArgmax(g.Placeholder("x", f32, Shape(std::move(shape))), o);
    return testing::BuildError(g);
  };
  CHECK_THAT(error({1, 1, 4, 4}, {.kernel = {2}}),
             Contains("attribute 'kernel' must have 2 values (one per spatial dim of f32[1, 1, 4, "
                      "4]), got [2]"));
  CHECK_THAT(error({1, 4}, {.kernel = {2}}), Contains("at least one spatial dim, got f32[1, 4]"));
  CHECK_THAT(error({1, 1, 4}, {.kernel = {0}}), Contains("'kernel' values must be in [1, 2^31]"));
  CHECK_THAT(error({1, 1, 4}, {.kernel = {2}, .dilations = {0}}),
             Contains("'dilations' values must be in [1, 2^31], got [0]"));
  CHECK_THAT(error({1, 1, 4}, {.kernel = {2}, .pads = {1}}), Contains("'pads'"));
  CHECK_THAT(error({1, 1, 4}, {.kernel = {2}, .pads = {-1, 0}}),
             Contains("'pads' values must be in [0, 2^31], got [-1, 0]"));
  CHECK_THAT(error({1, 1, 4}, {.kernel = {3}, .dilations = {2}}),
             Contains("is shorter than the window's extent 5"));
  CHECK_THAT(error({1, 1, 0}, {.kernel = {1}}), Contains("cannot pool an empty input"));
}
