// Counter-based random numbers: value i of stream (seed, counter) is a pure function of its
// arguments, so every backend (reference, CPU, GPU, an AOT module) draws the same numbers, in any
// order and in parallel. Used by Variable initializers and Dropout.
#pragma once

#include <cstdint>

#include "ir/tensor.h"

namespace kiln {

// 64 random bits for element `index` of stream (seed, counter).
uint64_t RandomBits(uint64_t seed, uint64_t counter, uint64_t index);
// Uniform in [0, 1) with 53 random bits.
double RandomUniform(uint64_t seed, uint64_t counter, uint64_t index);
// Standard normal (Box-Muller on two independent uniforms).
double RandomNormal(uint64_t seed, uint64_t counter, uint64_t index);

// A tensor of seeded random data from stream (seed, counter): floats standard normal, integers
// uniform in [0, classes) (at least 1), bools 0 or 1. For benchmarks' and fuzzers' inputs. A
// container dtype gives an empty one (of f32 elements: kiln's types do not say their elements').
Tensor RandomTensor(DType dtype, const Shape& shape, int64_t classes, uint64_t seed,
                    uint64_t counter);

}  // namespace kiln
