// Gradient checking: symbolic gradients (passes/autodiff) against float64 central differences.
// Used by `kiln gradcheck` and by the op and model gradient tests.
//
// The graph is first promoted to f64 (passes/promote_f64.h). `of` must be a scalar unless
// `sum_of` is set (then its sum is differentiated). Each `wrt` may be a placeholder, a variable or
// any node output: it is perturbed by feeding it, one element at a time.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/session.h"

namespace kiln {

struct GradCheckOptions {
  double step = 1e-6;           // central-difference step
  bool sum_of = false;          // differentiate sum(of) when `of` is not a scalar
  int64_t max_elements = 4096;  // per wrt tensor; beyond it, a deterministic sample is checked
};

struct GradCheckResult {
  std::string wrt;
  TensorType type;
  int64_t checked = 0;       // elements compared
  double max_abs_error = 0;  // max |symbolic - numeric|
  double max_rel_error = 0;  // max |symbolic - numeric| / max(1, |numeric|)
  Tensor symbolic, numeric;  // the gradients (f64), numeric only at checked elements
};

Result<std::vector<GradCheckResult>> CheckGradients(const Graph& graph, const std::string& of,
                                                    const std::vector<std::string>& wrt,
                                                    const FeedList& feeds,
                                                    const GradCheckOptions& options = {});

}  // namespace kiln
