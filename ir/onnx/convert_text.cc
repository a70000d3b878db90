// ONNX TfIdfVectorizer over integer token ids, as kiln's (ir/ops/text.h): ngram_counts are the
// pool's level starts, pool_int64s the pool. A pool of strings needs string tensors, which kiln
// does not have.
#include "ir/onnx/convert_context.h"
#include "ir/ops/text.h"

namespace kiln::onnx_import {
namespace {

Status ConvertTfIdfVectorizer(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  if (n.has_attr("pool_strings"))
    return n.Unsupported("a pool of strings (kiln has no string tensors)");
  TfIdfOptions o;
  KILN_ASSIGN_OR_RETURN(o.min_gram_length, n.Int("min_gram_length", 1));
  KILN_ASSIGN_OR_RETURN(o.max_gram_length, n.Int("max_gram_length", 1));
  KILN_ASSIGN_OR_RETURN(o.max_skip_count, n.Int("max_skip_count", 0));
  KILN_ASSIGN_OR_RETURN(o.mode, n.String("mode", "TF"));
  KILN_ASSIGN_OR_RETURN(o.pool, n.Ints("pool_int64s"));
  KILN_ASSIGN_OR_RETURN(o.pool_starts, n.Ints("ngram_counts"));
  KILN_ASSIGN_OR_RETURN(o.ngram_indexes, n.Ints("ngram_indexes"));
  KILN_ASSIGN_OR_RETURN(o.weights, n.Floats("weights"));
  n.SetOutput(0, TfIdfVectorizer(x, o));
  return OkStatus();
}

}  // namespace

void AddTextConverters(ConverterTable& t) { t["TfIdfVectorizer"] = ConvertTfIdfVectorizer; }

}  // namespace kiln::onnx_import
