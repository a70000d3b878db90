#include "ir/ops/text.h"

#include <algorithm>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"
#include "ir/tensor.h"

namespace kiln {
namespace {

Status InferTfIdfVectorizer(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  if (x.rank() != 1 && x.rank() != 2)
    return ctx.Fail("x must be [N] or [B, N] token ids, got ", ctx.input(0).ToString());
  const AttrMap& a = ctx.attrs();
  KILN_ASSIGN_OR_RETURN(int64_t min_n, a.GetInt("min_gram_length"));
  KILN_ASSIGN_OR_RETURN(int64_t max_n, a.GetInt("max_gram_length"));
  KILN_ASSIGN_OR_RETURN(int64_t skip, a.GetInt("max_skip_count"));
  KILN_ASSIGN_OR_RETURN(std::string mode, a.GetString("mode"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pool, a.GetInts("pool"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> starts, a.GetInts("pool_starts"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> columns, a.GetInts("ngram_indexes"));
  KILN_ASSIGN_OR_RETURN(std::vector<double> weights, a.GetFloats("weights"));
  if (min_n < 1 || max_n < min_n || skip < 0)
    return ctx.Fail("gram lengths [", min_n, ", ", max_n, "] and max_skip_count ", skip,
                    " must satisfy 1 <= min <= max and skip >= 0");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return ctx.Fail("mode must be TF, IDF or TFIDF, got '", mode, "'");
  // Level k (the (k+1)-grams) spans [starts[k], starts[k+1]) of the pool in whole n-grams.
  int64_t ngrams = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t begin = starts[k];
    const int64_t end = k + 1 < starts.size() ? starts[k + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) ||
        (end - begin) % static_cast<int64_t>(k + 1) != 0)
      return ctx.Fail("pool level ", k + 1, " spans [", begin, ", ", end, ") of a pool of ",
                      pool.size(), ": not a whole number of ", k + 1, "-grams");
    ngrams += (end - begin) / static_cast<int64_t>(k + 1);
  }
  if (static_cast<int64_t>(columns.size()) != ngrams)
    return ctx.Fail("ngram_indexes has ", columns.size(), " entries for the pool's ", ngrams,
                    " n-grams");
  if (!weights.empty() && weights.size() != columns.size())
    return ctx.Fail("weights has ", weights.size(), " entries for ", columns.size(), " n-grams");
  if (std::any_of(columns.begin(), columns.end(),
                  [](int64_t c) { return c < 0 || c >= kMaxTensorBytes / 4; }))
    return ctx.Fail("ngram_indexes must be in [0, ", kMaxTensorBytes / 4,
                    ") (the output's columns)");
  const int64_t width = columns.empty() ? 0 : *std::max_element(columns.begin(), columns.end()) + 1;
  ctx.AddOutput(f32, x.rank() == 1 ? Shape{width} : Shape{x[0], width});
  return OkStatus();
}

}  // namespace

Value TfIdfVectorizer(At x, const TfIdfOptions& o) {
  AttrMap a;
  a.Set("min_gram_length", o.min_gram_length);
  a.Set("max_gram_length", o.max_gram_length);
  a.Set("max_skip_count", o.max_skip_count);
  a.Set("mode", o.mode);
  a.Set("pool", o.pool);
  a.Set("pool_starts", o.pool_starts);
  a.Set("ngram_indexes", o.ngram_indexes);
  a.Set("weights", o.weights);
  return internal::MakeOp("TfIdfVectorizer", {x.value}, std::move(a), x.loc);
}

void RegisterTextOps(OpRegistry& r) {
  r.Register(OpDefBuilder("TfIdfVectorizer", "array")
                 .Input("x", "I")
                 .Output("y")
                 .Types("I", IndexTypes())
                 .Attr("min_gram_length", AttrType::kInt, int64_t{1})
                 .Attr("max_gram_length", AttrType::kInt, int64_t{1})
                 .Attr("max_skip_count", AttrType::kInt, int64_t{0})
                 .Attr("mode", AttrType::kString, std::string("TF"))
                 .Attr("pool", AttrType::kInts, std::vector<int64_t>{})
                 .Attr("pool_starts", AttrType::kInts, std::vector<int64_t>{})
                 .Attr("ngram_indexes", AttrType::kInts, std::vector<int64_t>{})
                 .Attr("weights", AttrType::kFloats, std::vector<double>{})
                 .Infer(InferTfIdfVectorizer)
                 .NotDifferentiable()
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
}

}  // namespace kiln
