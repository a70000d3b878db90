// A small CNN for the 8x8 digits, written with the builder API:
//   conv 3x3 (16) -> batchnorm -> relu -> maxpool 2 -> conv 3x3 (32) -> relu -> maxpool 2
//   -> flatten -> dense 10 (logits) -> softmax (probabilities)
// Graph input "images" f32[-1, 1, 8, 8]; outputs "logits" and "probabilities" f32[-1, 10].
// BuildDigitsTraining adds input "labels" i64[-1], a training-mode BatchNorm, and outputs "loss"
// (mean softmax cross-entropy) and "accuracy".
#pragma once

#include "ir/builder.h"

namespace kiln::models {

struct DigitsCnn {
  Value images;
  Value logits;
  Value probabilities;
  Value labels;    // training graph only
  Value loss;      // training graph only
  Value accuracy;  // training graph only
};

DigitsCnn BuildDigitsCnn(GraphBuilder& g, int64_t seed = 1, bool training = false);
DigitsCnn BuildDigitsTraining(GraphBuilder& g, int64_t seed = 1);

}  // namespace kiln::models
