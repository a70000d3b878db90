// Op family "text" (a part of "array"): TfIdfVectorizer, ONNX's n-gram counting over token ids.
//
// TfIdfVectorizer(x) -> y f32: x holds integer token ids, [N] (one text) or [B, N] (B texts of N
// tokens). The pool lists the n-grams that count: pool_starts[k] is where the (k+1)-grams begin
// in `pool` (ONNX's ngram_counts; the last level runs to the pool's end), and each occurrence of
// the i-th n-gram of the pool, counted level by level, adds one to output column
// ngram_indexes[i]; y is [C] or [B, C] with C = max(ngram_indexes) + 1. An n-gram of length n in
// [min_gram_length, max_gram_length] is n tokens at positions p, p + d, ..., p + (n - 1) d for
// every gap d in [1, max_skip_count + 1] (unigrams once, at d = 1). Per column c, mode "TF"
// writes the count, "IDF" weights[c] where the count is above 0, "TFIDF" count times weights[c]
// (weights indexed by column, as ONNX Runtime and the ONNX reference do; absent: all 1).
// Integer x (i32, i64); not differentiable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace kiln {

struct TfIdfOptions {
  int64_t min_gram_length = 1, max_gram_length = 1, max_skip_count = 0;
  std::string mode = "TF";  // "TF", "IDF" or "TFIDF"
  std::vector<int64_t> pool, pool_starts, ngram_indexes;
  std::vector<double> weights;  // empty: every weight 1
};
Value TfIdfVectorizer(At x, const TfIdfOptions& options);

}  // namespace kiln
