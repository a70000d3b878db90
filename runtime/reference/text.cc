// The reference kernel of TfIdfVectorizer (ir/ops/text.h).
#include "ir/ops/text.h"

#include <map>
#include <vector>

#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

Status TfIdfVectorizerKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const AttrMap& a = ctx.attrs();
  const int64_t min_n = a.Find("min_gram_length")->get<int64_t>();
  const int64_t max_n = a.Find("max_gram_length")->get<int64_t>();
  // A gap past the text's length forms no n-gram longer than 1: at most `length` gaps matter.
  const int64_t length = x.shape()[x.rank() - 1];
  const int64_t gaps = std::min(a.Find("max_skip_count")->get<int64_t>(), length) + 1;
  const std::string& mode = a.Find("mode")->get<std::string>();
  const auto& pool = a.Find("pool")->get<std::vector<int64_t>>();
  const auto& starts = a.Find("pool_starts")->get<std::vector<int64_t>>();
  const auto& columns = a.Find("ngram_indexes")->get<std::vector<int64_t>>();
  const auto& weights = a.Find("weights")->get<std::vector<double>>();
  // The pool's n-grams of each length -> their index in pool order.
  std::map<int64_t, std::map<std::vector<int64_t>, int64_t>> ngrams;
  int64_t next = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    const auto n = static_cast<int64_t>(k + 1);
    const int64_t end = k + 1 < starts.size() ? starts[k + 1] : static_cast<int64_t>(pool.size());
    for (int64_t p = starts[k]; p < end; p += n)
      ngrams[n][std::vector<int64_t>(pool.begin() + p, pool.begin() + p + n)] = next++;
  }
  Tensor& y = ctx.output(0);
  const int64_t texts = x.rank() == 1 ? 1 : x.shape()[0];
  const int64_t width = y.shape()[y.rank() - 1];
  std::vector<int64_t> counts(static_cast<size_t>(width));
  std::vector<int64_t> gram;
  for (int64_t t = 0; t < texts; ++t) {
    std::fill(counts.begin(), counts.end(), 0);
    // Gram lengths beyond the pool's levels match nothing.
    for (int64_t n = min_n; n <= std::min<int64_t>(max_n, static_cast<int64_t>(starts.size()));
         ++n) {
      auto level = ngrams.find(n);
      if (level == ngrams.end()) continue;
      for (int64_t d = 1; d <= (n == 1 ? 1 : gaps); ++d)
        for (int64_t p = 0; p + (n - 1) * d < length; ++p) {
          gram.clear();
          for (int64_t i = 0; i < n; ++i) gram.push_back(x.GetInt(t * length + p + i * d));
          auto hit = level->second.find(gram);
          if (hit != level->second.end()) ++counts[columns[hit->second]];
        }
    }
    for (int64_t c = 0; c < width; ++c) {
      const double weight = c < static_cast<int64_t>(weights.size()) ? weights[c] : 1.0;
      const auto count = static_cast<double>(counts[c]);
      const double v = mode == "TF"    ? count
                       : mode == "IDF" ? (count > 0 ? weight : 0)
                                       : count * weight;
      y.SetDouble(t * width + c, v);
    }
  }
  return OkStatus();
}

}  // namespace

void RegisterTextKernels(KernelRegistry& r) {
  r.Register("TfIdfVectorizer", TfIdfVectorizerKernel);
}

}  // namespace kiln::reference
