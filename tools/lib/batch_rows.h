// Mini-batches for kiln train and its validation: rows of an array along its first axis.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace kiln::cli {

// Rows order[begin, end) of `t` along axis 0 as a new tensor; rows begin..end-1 when `order` is
// null.
Tensor BatchRows(const Tensor& t, const std::vector<int64_t>* order, int64_t begin, int64_t end);

}  // namespace kiln::cli
