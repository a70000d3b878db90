// One LSTM sequence classifier in two forms, to compare a loop with the unrolled graph a static
// compiler would otherwise need:
//   "sequence-lstm-unrolled"  x f32[batch, steps, features]: the cell repeated `steps` times;
//   "sequence-lstm-loop"      x f32[batch, -1, features]: the cell in a kiln::WhileLoop over the
//                             fed number of steps (at most `steps`, the loop's maximum, which
//                             keeps its gradient's shapes static; ir/ops/control.h).
// Both: labels i64[batch]; one LSTM layer of `hidden` units from a zero state; a Dense layer on the
// last h gives "logits" [batch, classes]; "loss" is their mean softmax cross-entropy. With the
// same seed both start from the same weights and compute the same loss.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace kiln::models {

struct SequenceLstmOptions {
  int64_t batch = 32;
  int64_t steps = 32;  // the unrolled form's length; the loop form's maximum
  int64_t features = 64;
  int64_t hidden = 256;
  int64_t classes = 10;
  int64_t seed = 1;
};

// "sequence-lstm-unrolled" or "sequence-lstm-loop".
const std::vector<std::string>& SequenceLstmNames();
Result<Graph> BuildSequenceLstm(const std::string& name, const SequenceLstmOptions& options = {});

}  // namespace kiln::models
