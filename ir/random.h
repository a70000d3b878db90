// Counter-based random numbers: value i of stream (seed, counter) is a pure function of its
// arguments, so every backend (reference, CPU, GPU, an AOT module) draws the same numbers, in any
// order and in parallel. Used by Variable initializers and Dropout.
#pragma once

#include <cstdint>

namespace kiln {

// 64 random bits for element `index` of stream (seed, counter).
uint64_t RandomBits(uint64_t seed, uint64_t counter, uint64_t index);
// Uniform in [0, 1) with 53 random bits.
double RandomUniform(uint64_t seed, uint64_t counter, uint64_t index);
// Standard normal (Box-Muller on two independent uniforms).
double RandomNormal(uint64_t seed, uint64_t counter, uint64_t index);

}  // namespace kiln
