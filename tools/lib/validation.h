// Validation for `kiln train`: the model as it evaluates (BatchNorm and Dropout in inference,
// passes/freeze.h ForInference) in a session of its own, which takes the training session's
// variable values before each evaluation and runs a held-out set through in batches: the mean
// loss over its examples and, given a logits tensor ([batch, classes]) and the labels fed to the
// loss (class ids, or one-hot rows), the top-1 accuracy.
//
// Contract: the held-out arrays are named as the training data and share one example count; with
// a model that fixes its batch only full batches are evaluated. Errors name the tensor or array.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "runtime/session.h"

namespace kiln::cli {

struct ValidationOptions {
  std::string loss;    // the loss tensor of the model
  std::string logits;  // "" : no accuracy
  std::string labels;  // the held-out array holding the labels (with logits)
  int64_t batch = 32;
  bool full_batches_only = false;
};

struct ValidationResult {
  double loss = 0;
  std::optional<double> accuracy;
  int64_t examples = 0;  // evaluated
};

class Validation {
 public:
  static Result<std::unique_ptr<Validation>> Create(
      const Graph& model, const SessionOptions& session_options,
      std::vector<std::pair<std::string, Tensor>> data, ValidationOptions options);
  // Evaluates the held-out set with the variable values of `trained` (a training session's).
  Result<ValidationResult> Evaluate(const VariableStore& trained);

 private:
  Validation(Graph graph, const SessionOptions& session_options)
      : graph_(std::move(graph)), session_(graph_, session_options) {}

  Graph graph_;  // the model for inference: the session points into it
  Session session_;
  std::vector<std::pair<std::string, Tensor>> data_;
  ValidationOptions options_;
  int64_t examples_ = 0;
};

// The labels array for top-1 accuracy: `named` when given, else the only integer-typed array of
// `data` (class ids); an error asks to name it when there is none or more than one.
Result<std::string> LabelsForAccuracy(const std::vector<std::pair<std::string, Tensor>>& data,
                                      const std::string& named);

}  // namespace kiln::cli
