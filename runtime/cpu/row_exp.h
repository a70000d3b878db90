// Row loops of a softmax over f32 for the cpu runtime's routines
// (runtime/cpu/cross_entropy_step.cc, runtime/cpu/attention_step.cc): the row's max and the sum of
// exp(x - shift). With AVX-512F (asked once) they run 16 lanes at a time: exp as e^r * 2^n with n =
// round(x log2 e), r = x - n ln 2 (ln 2 split in two), e^r a degree-6 polynomial (within 2 ulp of
// expf over the range a softmax uses, x - max <= 0), 2^n by vscalefps (so results below FLT_MIN
// underflow gracefully to 0); the sum in double, 8 lanes at a time. Without AVX-512F, scalar
// std::exp and the same double sum. NaN is skipped by the max and carried by the sum.
#pragma once

#include <cstdint>

namespace kiln::cpu {

// max over x[0, n), skipping NaNs (as std::max(max, x) does); -inf for n = 0.
float RowMax(const float* x, int64_t n);

// x[i] += add[i] for i < n (f32 adds), then RowMax(x, n): an additive mask and the row's max in
// one pass.
float AddRowMax(float* x, const float* add, int64_t n);

// The sum over x[0, n) of exp(x - shift), accumulated in double; when `out` is given, each
// exp(x - shift) is also stored there as f32.
double SumExp(const float* x, int64_t n, float shift, float* out);

}  // namespace kiln::cpu
