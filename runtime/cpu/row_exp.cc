#include "runtime/cpu/row_exp.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::cpu {
namespace {

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

__attribute__((target("avx512f"))) inline __m512 Exp16(__m512 x) {
  // Below -103 every exp is 0 in f32 (and NaN stays NaN: max returns its second operand then).
  x = _mm512_max_ps(_mm512_set1_ps(-103.0f), x);
  x = _mm512_min_ps(_mm512_set1_ps(88.7f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  // e^r on [-ln2/2, ln2/2]: Taylor coefficients refined (Cephes expf).
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

__attribute__((target("avx512f"))) float RowMax16(const float* x, int64_t n) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) m = _mm512_max_ps(_mm512_loadu_ps(x + c), m);  // NaN: keeps m
  float max = _mm512_reduce_max_ps(m);
  for (; c < n; ++c) max = std::max(max, x[c]);
  return max;
}

__attribute__((target("avx512f"))) float AddRowMax16(float* x, const float* add, int64_t n) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    const __m512 sum = _mm512_add_ps(_mm512_loadu_ps(x + c), _mm512_loadu_ps(add + c));
    _mm512_storeu_ps(x + c, sum);
    m = _mm512_max_ps(sum, m);  // NaN: keeps m
  }
  float max = _mm512_reduce_max_ps(m);
  for (; c < n; ++c) {
    x[c] += add[c];
    max = std::max(max, x[c]);
  }
  return max;
}

__attribute__((target("avx512f"))) double SumExp16(const float* x, int64_t n, float shift,
                                                   float* out) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_loadu_ps(x + c), s));
    if (out) _mm512_storeu_ps(out + c, e);
    lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    hi = _mm512_add_pd(
        hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  double sum = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
  for (; c < n; ++c) {
    const float e = std::exp(x[c] - shift);
    if (out) out[c] = e;
    sum += e;
  }
  return sum;
}

}  // namespace

float RowMax(const float* x, int64_t n) {
  if (HasAvx512()) return RowMax16(x, n);
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < n; ++c) max = std::max(max, x[c]);
  return max;
}

float AddRowMax(float* x, const float* add, int64_t n) {
  if (HasAvx512()) return AddRowMax16(x, add, n);
  for (int64_t c = 0; c < n; ++c) x[c] += add[c];
  return RowMax(x, n);
}

double SumExp(const float* x, int64_t n, float shift, float* out) {
  if (HasAvx512()) return SumExp16(x, n, shift, out);
  double sum = 0;
  for (int64_t c = 0; c < n; ++c) {
    const float e = std::exp(x[c] - shift);
    if (out) out[c] = e;
    sum += e;
  }
  return sum;
}

}  // namespace kiln::cpu
