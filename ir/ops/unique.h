// Op family "unique" (a part of "array"): Unique, numpy.unique with ONNX's four outputs.
//
// Unique(x) -> (y, indices, inverse, counts): the distinct values of x flattened (flatten = true)
// or its distinct slices along `axis` (each slice holds every element whose index along `axis`
// is the same; two are equal when all their elements are). y holds them in ascending
// (lexicographic for slices) order when `sorted`, else in order of first appearance; indices
// [U] (i64) is where each first appears, inverse (i64, one entry per element or slice of x)
// which of y each is, counts [U] (i64) how often each appears. y is [U] when flattened, else x's
// shape with U along `axis`; U is known only from x's values. NaN equals NaN and sorts after
// every number (numpy's equal_nan). Any dtype; not differentiable.
#pragma once

#include <optional>

#include "ir/builder.h"

namespace kiln {

struct UniqueResult {
  Value y, indices, inverse, counts;
};
// axis: nullopt flattens x first.
UniqueResult Unique(At x, std::optional<int64_t> axis = std::nullopt, bool sorted = true);

}  // namespace kiln
