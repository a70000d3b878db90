// The UCI handwritten digits (data/digits.csv.gz): 8x8 images with pixel values 0..16 and labels.
// Loading checks every row (65 integers in range) and reports the line of the first bad one.
#pragma once

#include <string>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln::models {

struct Digits {
  Tensor images;  // f32 [N, 1, 8, 8], pixels scaled to [0, 1]
  Tensor labels;  // i64 [N], 0..9
};

// Reads a gzip-compressed (or plain) CSV.
Result<Digits> LoadDigits(const std::string& path);
// Rows [begin, end) of `d`.
Digits SliceDigits(const Digits& d, int64_t begin, int64_t end);

}  // namespace kiln::models
