// TfIdfVectorizer (ir/ops/text.h) against hand-counted n-grams: gaps, gram lengths, the three
// modes with weights, a batch of texts, and a pool it refuses.
#include <catch2/catch.hpp>

#include "ir/ops/text.h"
#include "tests/testing/eval.h"

using namespace kiln;
using Doubles = std::vector<double>;

namespace {

// Unigrams {1, 3} and bigrams {(1, 2), (1, 3)}, columns 0..3 in pool order.
TfIdfOptions Pool() {
  TfIdfOptions o;
  o.pool = {1, 3, 1, 2, 1, 3};
  o.pool_starts = {0, 2};
  o.ngram_indexes = {0, 1, 2, 3};
  o.max_gram_length = 2;
  o.max_skip_count = 1;
  return o;
}

Tensor Vectorize(const Tensor& x, const TfIdfOptions& o) {
  GraphBuilder g;
  return testing::Eval(g, TfIdfVectorizer(g.Constant(x), o));
}

}  // namespace

TEST_CASE("TfIdfVectorizer counts n-grams with gaps, in three modes", "[array]") {
  // In 1 2 1 2 3: unigram 1 twice, 3 once; bigrams with gap 1: (1,2) twice; with gap 2: (1,3)
  // once (1 _ 3).
  Tensor x = Tensor::FromVector<int64_t>({5}, {1, 2, 1, 2, 3});
  TfIdfOptions o = Pool();
  Tensor y = Vectorize(x, o);
  CHECK(y.dtype() == f32);
  CHECK(y.ToDoubles() == Doubles{2, 1, 2, 1});
  o.max_skip_count = 0;  // no (1,3) without a gap
  CHECK(Vectorize(x, o).ToDoubles() == Doubles{2, 1, 2, 0});
  o = Pool();
  o.min_gram_length = 2;  // bigrams only
  CHECK(Vectorize(x, o).ToDoubles() == Doubles{0, 0, 2, 1});
  o = Pool();
  o.weights = {0.5, 2, 1, 3};
  o.mode = "TFIDF";
  CHECK(Vectorize(x, o).ToDoubles() == Doubles{1, 2, 2, 3});
  o.mode = "IDF";
  CHECK(Vectorize(Tensor::FromVector<int32_t>({3}, {1, 1, 2}), o).ToDoubles() ==
        Doubles{0.5, 0, 1, 0});
  // Gram lengths past the pool's change nothing; gaps past the text are every gap it has (1 _ _ 2
  // and 1 _ _ _ 3 join in). Both finish at once.
  o = Pool();
  o.max_gram_length = int64_t{1} << 62;
  CHECK(Vectorize(x, o).ToDoubles() == Doubles{2, 1, 2, 1});
  o.max_skip_count = int64_t{1} << 62;
  CHECK(Vectorize(x, o).ToDoubles() == Doubles{2, 1, 3, 2});
  // Two n-grams sharing a column add up.
  o = Pool();
  o.ngram_indexes = {0, 1, 1, 2};
  CHECK(Vectorize(x, o).ToDoubles() == Doubles{2, 3, 1});
  // A batch of texts, one row each; columns may be shared and reordered.
  o = Pool();
  o.ngram_indexes = {3, 0, 1, 2};
  Tensor batch = Tensor::FromVector<int64_t>({2, 5}, {1, 2, 1, 2, 3, 3, 3, 3, 3, 3});
  y = Vectorize(batch, o);
  CHECK(y.shape() == Shape{2, 4});
  CHECK(y.ToDoubles() == Doubles{1, 2, 1, 2, 5, 0, 0, 0});
}

TEST_CASE("TfIdfVectorizer refuses pools that do not add up", "[array]") {
  TfIdfOptions o = Pool();
  o.pool_starts = {0, 3};  // three tokens of bigrams
  GraphBuilder g;
  TfIdfVectorizer(g.Placeholder("x", i64, {5}), o);
  CHECK_THAT(testing::BuildError(g), Catch::Contains("not a whole number of 2-grams"));
  o = Pool();
  o.ngram_indexes = {0, 1};
  GraphBuilder h;
  TfIdfVectorizer(h.Placeholder("x", i64, {5}), o);
  CHECK_THAT(testing::BuildError(h),
             Catch::Contains("ngram_indexes has 2 entries for the pool's 4"));
  o = Pool();
  o.ngram_indexes = {0, 1, 2, int64_t{1} << 62};
  GraphBuilder big;
  TfIdfVectorizer(big.Placeholder("x", i64, {5}), o);
  CHECK_THAT(testing::BuildError(big), Catch::Contains("ngram_indexes must be in [0, "));
  GraphBuilder f;
  TfIdfVectorizer(f.Placeholder("x", f32, {5}), Pool());
  CHECK_THAT(testing::BuildError(f), Catch::Contains("TfIdfVectorizer"));
}
