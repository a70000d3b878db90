#include "tools/lib/validation.h"

#include <algorithm>

#include "passes/freeze.h"
#include "tools/lib/batch_rows.h"

namespace kiln::cli {
namespace {

// The index of the largest value of row `r` of a [rows, n] tensor (the first one on ties).
int64_t ArgMaxOfRow(const Tensor& t, int64_t r, int64_t n) {
  int64_t best = 0;
  for (int64_t j = 1; j < n; ++j)
    if (t.GetDouble(r * n + j) > t.GetDouble(r * n + best)) best = j;
  return best;
}

}  // namespace

Result<std::string> LabelsForAccuracy(const std::vector<std::pair<std::string, Tensor>>& data,
                                      const std::string& named) {
  if (!named.empty()) {
    for (const auto& [name, t] : data)
      if (name == named) return named;
    return MakeError(ErrorCode::kNotFound, "--accuracy: no --data array named '", named, "'");
  }
  std::vector<std::string> integer;
  for (const auto& [name, t] : data)
    if (!IsFloat(t.dtype())) integer.push_back(name);
  if (integer.size() != 1)
    return MakeError(ErrorCode::kInvalidArgument, "--accuracy: ",
                     integer.empty() ? "no --data array holds class ids (integers)"
                                     : "several --data arrays hold integers",
                     "; name the labels: --accuracy LOGITS=NAME");
  return integer[0];
}

Result<std::unique_ptr<Validation>> Validation::Create(
    const Graph& model, const SessionOptions& session_options,
    std::vector<std::pair<std::string, Tensor>> data, ValidationOptions options) {
  KILN_ASSIGN_OR_RETURN(Graph inference, ForInference(model));
  std::unique_ptr<Validation> v(new Validation(std::move(inference), session_options));
  KILN_RETURN_IF_ERROR(v->session_.status());
  int64_t examples = -1;
  for (const auto& [name, t] : data) {
    if (t.rank() == 0 || (examples >= 0 && t.shape()[0] != examples))
      return MakeError(ErrorCode::kInvalidArgument, "--val '", name, "' has ",
                       t.rank() ? t.shape()[0] : 0, " examples",
                       examples >= 0 ? ", the others " + std::to_string(examples) : "");
    examples = t.shape()[0];
  }
  v->examples_ = options.full_batches_only ? examples - examples % options.batch : examples;
  if (v->examples_ <= 0)
    return MakeError(ErrorCode::kInvalidArgument, "--val: ", examples,
                     " examples, fewer than one batch of ", options.batch);
  v->data_ = std::move(data);
  v->options_ = std::move(options);
  return v;
}

Result<ValidationResult> Validation::Evaluate(const VariableStore& trained) {
  KILN_RETURN_IF_ERROR(trained.MaterializeAll());
  for (const auto& [name, value] : trained.values())
    if (const Node* node = graph_.FindNode(name); node && node->op == "Variable")
      session_.variables().Set(name, value);
  std::vector<TensorName> fetches = {options_.loss};
  if (!options_.logits.empty()) fetches.emplace_back(options_.logits);
  const Tensor* labels = nullptr;
  for (const auto& [name, t] : data_)
    if (name == options_.labels) labels = &t;
  ValidationResult result;
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < examples_; begin += options_.batch) {
    const int64_t end = std::min(examples_, begin + options_.batch), n = end - begin;
    FeedList feeds;
    for (const auto& [name, t] : data_) feeds.emplace_back(name, BatchRows(t, nullptr, begin, end));
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> out, session_.Run(feeds, fetches));
    loss_sum += out[0].GetDouble(0) * static_cast<double>(n);
    if (options_.logits.empty() || !labels) continue;
    const Tensor& logits = out[1];
    if (logits.rank() != 2 || logits.shape()[0] != n)
      return MakeError(ErrorCode::kInvalidArgument, "--accuracy: '", options_.logits, "' is ",
                       logits.shape().ToString(), ", not [", n, ", classes]");
    const int64_t classes = logits.shape()[1];
    for (int64_t r = 0; r < n; ++r) {
      const bool one_hot = labels->rank() == 2 && labels->shape()[1] > 1;
      const int64_t want =
          one_hot ? ArgMaxOfRow(*labels, begin + r, labels->shape()[1]) : labels->GetInt(begin + r);
      correct += ArgMaxOfRow(logits, r, classes) == want;
    }
  }
  result.examples = examples_;
  result.loss = loss_sum / static_cast<double>(examples_);
  if (!options_.logits.empty())
    result.accuracy = static_cast<double>(correct) / static_cast<double>(examples_);
  return result;
}

}  // namespace kiln::cli
