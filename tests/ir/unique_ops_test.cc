// Unique (ir/ops/unique.h) against numpy.unique's answers: flattened and along an axis, sorted
// and in order of appearance, NaN, integers beyond float precision, and an axis it refuses.
#include <catch2/catch.hpp>
#include <cmath>

#include "ir/ops/unique.h"
#include "tests/testing/eval.h"

using namespace kiln;
using Ints = std::vector<int64_t>;

namespace {

std::vector<Tensor> RunUnique(const Tensor& x, std::optional<int64_t> axis, bool sorted) {
  GraphBuilder g;
  UniqueResult u = Unique(g.Constant(x), axis, sorted);
  g.Output("y", u.y);
  g.Output("indices", u.indices);
  g.Output("inverse", u.inverse);
  g.Output("counts", u.counts);
  return testing::EvalAll(g, {"y", "indices", "inverse", "counts"});
}

}  // namespace

TEST_CASE("Unique of flattened values, sorted and in order of appearance", "[array]") {
  Tensor x = Tensor::FromVector<float>({2, 3}, {2, 1, 1, 3, 4, 3});
  std::vector<Tensor> r = RunUnique(x, std::nullopt, true);
  CHECK(r[0].ToDoubles() == std::vector<double>{1, 2, 3, 4});
  CHECK(r[1].ToInts() == Ints{1, 0, 3, 4});
  CHECK(r[2].ToInts() == Ints{1, 0, 0, 2, 3, 2});
  CHECK(r[3].ToInts() == Ints{2, 1, 2, 1});
  r = RunUnique(x, std::nullopt, false);
  CHECK(r[0].ToDoubles() == std::vector<double>{2, 1, 3, 4});
  CHECK(r[1].ToInts() == Ints{0, 1, 3, 4});
  CHECK(r[2].ToInts() == Ints{0, 1, 1, 2, 3, 2});
  CHECK(r[3].ToInts() == Ints{1, 2, 2, 1});
  // NaN equals NaN and sorts last; integers compare exactly.
  r = RunUnique(Tensor::FromVector<float>({4}, {NAN, 1, NAN, -1}), std::nullopt, true);
  CHECK(r[0].shape() == Shape{3});
  CHECK(r[0].GetDouble(0) == -1);
  CHECK(std::isnan(r[0].GetDouble(2)));
  CHECK(r[3].ToInts() == Ints{1, 1, 2});
  const int64_t big = int64_t{1} << 60;
  r = RunUnique(Tensor::FromVector<int64_t>({3}, {big + 1, big, big + 1}), std::nullopt, true);
  CHECK(r[0].ToInts() == Ints{big, big + 1});
  // u64 from 2^63 on sorts after the smaller values.
  Tensor wide = Tensor::FromVector<uint64_t>({2}, {(uint64_t{1} << 63) + 5, 1});
  r = RunUnique(wide, std::nullopt, true);
  CHECK(r[0].data<uint64_t>()[0] == 1);
  CHECK(r[0].data<uint64_t>()[1] == (uint64_t{1} << 63) + 5);
}

TEST_CASE("Unique slices along an axis", "[array]") {
  // Rows [1, 0, 0], [1, 0, 0], [2, 3, 4]; columns [1, 1, 2], [0, 0, 3], [0, 0, 4].
  Tensor x = Tensor::FromVector<int32_t>({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4});
  std::vector<Tensor> r = RunUnique(x, 0, true);
  CHECK(r[0].shape() == Shape{2, 3});
  CHECK(r[0].ToInts() == Ints{1, 0, 0, 2, 3, 4});
  CHECK(r[1].ToInts() == Ints{0, 2});
  CHECK(r[2].ToInts() == Ints{0, 0, 1});
  CHECK(r[3].ToInts() == Ints{2, 1});
  r = RunUnique(x, -1, true);
  CHECK(r[0].shape() == Shape{3, 3});
  CHECK(r[0].ToInts() == Ints{0, 0, 1, 0, 0, 1, 3, 4, 2});  // columns [0,0,3] < [0,0,4] < [1,1,2]
  CHECK(r[2].ToInts() == Ints{2, 0, 1});
  GraphBuilder g;
  Unique(g.Placeholder("x", f32, {2, 3}), 2);
  CHECK_THAT(testing::BuildError(g), Catch::Contains("axis 2 is out of range for rank 2"));
}
