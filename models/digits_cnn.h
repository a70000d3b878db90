// A small CNN for the 8x8 digits, written with the builder API:
//   conv 3x3 (16) -> batchnorm -> relu -> maxpool 2 -> conv 3x3 (32) -> relu -> maxpool 2
//   -> flatten -> dense 10 (logits) -> softmax (probabilities)
// Graph input "images" f32[-1, 1, 8, 8]; outputs "logits" and "probabilities" f32[-1, 10].
#pragma once

#include "ir/builder.h"

namespace kiln::models {

struct DigitsCnn {
  Value images;
  Value logits;
  Value probabilities;
};

DigitsCnn BuildDigitsCnn(GraphBuilder& g, int64_t seed = 1);

}  // namespace kiln::models
