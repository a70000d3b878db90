// Op family "reduce": reductions over axes (Sum, Mean, Max, Min, Prod), the index of the
// largest / smallest element along one axis (ArgMax, ArgMin) and the k largest / smallest (TopK).
//
// Sum/Mean/Max/Min/Prod: numeric input, output of the same dtype. Attributes `axes` (ints; empty =
// every axis; negative axes count from the end; duplicates are an error) and `keepdims` (bool,
// false: reduced axes are removed; true: they stay with size 1).
// ArgMax/ArgMin (ONNX semantics): numeric input of rank >= 1, i64 output. Attributes `axis` (int,
// 0), `keepdims` (bool, true) and `select_last_index` (bool, false: the first of equal extremes).
//
// TopK (ONNX semantics): numeric input of rank >= 1 -> (values, indices): along `axis` (int, -1)
// the `k` (int, 0 <= k <= that dim) largest elements (`largest` true) or smallest, in order
// (largest first, or smallest first), ties taken in index order, NaN counted as larger than any
// number (as PyTorch's topk); indices i64. `sorted` (bool, true) is accepted for ONNX's sake: the
// results are always in order. Gradient: the values' gradient scattered back to the indices.
//
// Values: integer Sum and Prod wrap around (two's complement) in int64 and are then narrowed to the
// dtype; integer Mean is the int64 sum divided by the count, truncated toward zero. Max/Min
// propagate NaN, and ArgMax/ArgMin treat NaN as the extreme (as numpy): they return the first (or
// with select_last_index the last) NaN. Over a zero-size reduction: Sum gives 0, Prod 1, float Mean
// NaN; Max, Min, ArgMax, ArgMin and integer Mean fail (at build time when the shape is known,
// otherwise at run time). A reduction of an empty output (another dim is 0) never fails.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/builder.h"
#include "ir/status.h"

namespace kiln {

Value Sum(At x, std::vector<int64_t> axes = {}, bool keepdims = false);
// Sums x down to the run-time shape of `like`, which must broadcast to x's shape: the reduction
// that undoes numpy broadcasting (gradients of broadcasting ops use it).
Value SumLike(At x, Value like);
Value Mean(At x, std::vector<int64_t> axes = {}, bool keepdims = false);
Value Max(At x, std::vector<int64_t> axes = {}, bool keepdims = false);
Value Min(At x, std::vector<int64_t> axes = {}, bool keepdims = false);
Value Prod(At x, std::vector<int64_t> axes = {}, bool keepdims = false);
Value ArgMax(At x, int64_t axis = 0, bool keepdims = true, bool select_last_index = false);
Value ArgMin(At x, int64_t axis = 0, bool keepdims = true, bool select_last_index = false);
struct TopKResult {
  Value values, indices;
};
TopKResult TopK(At x, int64_t k, int64_t axis = -1, bool largest = true, bool sorted = true);

// The reduced axes of a rank-`rank` input, sorted and in [0, rank): `axes` empty means all of them;
// negative axes count from the end. Fails on an axis out of range or named twice. Shared by
// inference and the kernels so that both read the attribute the same way.
Result<std::vector<int>> NormalizeReduceAxes(const std::vector<int64_t>& axes, int rank);

}  // namespace kiln
