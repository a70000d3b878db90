// Test helper: checks an op's symbolic gradient against float64 central differences.
//
// Float inputs become f64 placeholders, the others constants; the op's output y is reduced to
// loss = sum(y * W) with a fixed random W in [-1, 1], so every output element contributes with its
// own weight. Every float input's gradient must match within `tolerance` (max |sym - num| /
// max(1, |num|)).
#pragma once

#include <functional>
#include <vector>

#include "ir/builder.h"
#include "ir/tensor.h"

namespace kiln::testing {

using MakeOpFn = std::function<Value(GraphBuilder&, const std::vector<Value>&)>;

void CheckOpGradient(const std::vector<Tensor>& inputs, const MakeOpFn& make,
                     double tolerance = 1e-6);

// A f64 tensor of `shape` with values uniform in [low, high), from `seed`.
Tensor RandomTensor(Shape shape, uint64_t seed, double low = -1, double high = 1);

}  // namespace kiln::testing
