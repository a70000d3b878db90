#include "runtime/cpu/few_rows_sgemm.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "runtime/cpu/parallel_ranges.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kStripe = 64;  // columns of c per stripe: four zmm per row
constexpr int64_t kKBlock = 8;   // rows of b per pass over a thread's stripes
// From this many elements of b (16 MiB), the threads split b's rows instead of its columns.
constexpr int64_t kSplitKElements = int64_t{1} << 22;

// The lanes of the next 16 that hold one of `left` remaining elements.
__mmask16 Mask(int64_t left) {
  return left >= 16 ? __mmask16(0xffff) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
}

// c[i][0, cols) = start + sum over p < kc of a[i * lda + p] b[p][j] for i < M, b row-major with
// leading dimension ldb, where start is c's value when `accumulate`, else the bias (0 without).
template <int M>
__attribute__((target("avx512f"))) void Stripe(const float* a, int64_t lda, int64_t kc,
                                               const float* b, int64_t ldb, const float* bias,
                                               bool accumulate, float* c, int64_t ldc,
                                               int64_t cols) {
  __mmask16 mask[4];
  for (int q = 0; q < 4; ++q) mask[q] = Mask(cols - 16 * q);
  __m512 acc[M][4];
  for (int q = 0; q < 4; ++q) {
    const __m512 start =
        bias && !accumulate ? _mm512_maskz_loadu_ps(mask[q], bias + 16 * q) : _mm512_setzero_ps();
    for (int i = 0; i < M; ++i)
      acc[i][q] = accumulate ? _mm512_maskz_loadu_ps(mask[q], c + i * ldc + 16 * q) : start;
  }
  for (int64_t p = 0; p < kc; ++p) {
    const float* row = b + p * ldb;
    __m512 bq[4];
    for (int q = 0; q < 4; ++q) bq[q] = _mm512_maskz_loadu_ps(mask[q], row + 16 * q);
    for (int i = 0; i < M; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i * lda + p]);
      for (int q = 0; q < 4; ++q) acc[i][q] = _mm512_fmadd_ps(ai, bq[q], acc[i][q]);
    }
  }
  for (int i = 0; i < M; ++i)
    for (int q = 0; q < 4; ++q) _mm512_mask_storeu_ps(c + i * ldc + 16 * q, mask[q], acc[i][q]);
}

// c[i][j] = bias[j] + dot(a[i], b[j]) for i < M and four rows j of b (stored n x k, leading
// dimension ldb), j < count.
template <int M>
__attribute__((target("avx512f"))) void Dots(const float* a, int64_t k, const float* b, int64_t ldb,
                                             const float* bias, float* c, int64_t ldc, int count) {
  __m512 acc[M][4];
  for (int i = 0; i < M; ++i)
    for (int q = 0; q < 4; ++q) acc[i][q] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; p += 16) {
    const __mmask16 m = Mask(k - p);
    __m512 bq[4];
    for (int q = 0; q < 4; ++q)
      bq[q] = q < count ? _mm512_maskz_loadu_ps(m, b + q * ldb + p) : _mm512_setzero_ps();
    for (int i = 0; i < M; ++i) {
      const __m512 ai = _mm512_maskz_loadu_ps(m, a + i * k + p);
      for (int q = 0; q < 4; ++q) acc[i][q] = _mm512_fmadd_ps(ai, bq[q], acc[i][q]);
    }
  }
  for (int i = 0; i < M; ++i)
    for (int q = 0; q < count; ++q)
      c[i * ldc + q] = (bias ? bias[q] : 0.0f) + _mm512_reduce_add_ps(acc[i][q]);
}

// The rows [k0, k1) of op(b)'s product with a's columns there, into c (rows of M, leading
// dimension p.n), starting from the bias (when `bias`) or zero: blocks of kKBlock rows of b, each
// across stripes [s0, s1) side by side, so that each block is read along its rows.
template <int M>
void Stripes(const SgemmProblem& p, const float* a, const float* b, int64_t k0, int64_t k1,
             int64_t s0, int64_t s1, const float* bias, float* c) {
  for (int64_t p0 = k0; p0 < std::max<int64_t>(k1, k0 + 1); p0 += kKBlock) {
    const int64_t kc = std::min(kKBlock, k1 - p0);
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t j0 = s * kStripe, cols = std::min(kStripe, p.n - j0);
      Stripe<M>(a + p0, p.k, std::max<int64_t>(kc, 0), b + p0 * SgemmLdb(p) + j0, SgemmLdb(p),
                bias ? bias + j0 : nullptr, p0 > k0, c + j0, p.n, cols);
    }
  }
}

template <int M>
void Product(const SgemmProblem& p, const float* a, const float* b, float* c, int threads) {
  const int64_t stripes = (p.n + kStripe - 1) / kStripe;
  if (!p.trans_b && threads > 1 && p.k * p.n >= kSplitKElements && p.k >= 4 * kKBlock) {
    // A b larger than the caches is read once from memory: each thread takes a contiguous range
    // of its rows (one sequential stream, where splitting the columns gave each thread a part of
    // every row: 16 vs 21 GB/s for AlexNet's 151 MB fc6 weights on a 2-core Zen 4), into its own
    // partial sums of c, added in thread order afterwards.
    const int parts = threads;
    thread_local std::vector<float> partials;
    partials.assign(static_cast<size_t>((parts - 1) * M * p.n), 0.0f);
    float* const partial_sums = partials.data();  // this thread's buffer, for every thread
    ForEachRange(parts, M * p.n * p.k, threads, [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        const int64_t k0 = p.k * part / parts / kKBlock * kKBlock;
        const int64_t k1 = part + 1 == parts ? p.k : p.k * (part + 1) / parts / kKBlock * kKBlock;
        float* out = part == 0 ? c : partial_sums + (part - 1) * M * p.n;
        Stripes<M>(p, a, b, k0, k1, 0, stripes, part == 0 ? p.bias : nullptr, out);
      }
    });
    for (int part = 1; part < parts; ++part) {
      const float* partial = partial_sums + (part - 1) * M * p.n;
      for (int64_t i = 0; i < M * p.n; ++i) c[i] += partial[i];
    }
    ApplySgemmEpilogue(p, c, M, p.n);
    return;
  }
  if (!p.trans_b) {
    // A thread's stripes advance together through blocks of kKBlock rows of b, so that each block
    // is read along its rows (its stripes side by side) instead of one stripe down all of k.
    ForEachRange(stripes, M * p.n * p.k, threads, [&](int64_t begin, int64_t end) {
      Stripes<M>(p, a, b, 0, p.k, begin, end, p.bias, c);
      for (int64_t s = begin; s < end; ++s)
        ApplySgemmEpilogue(p, c + s * kStripe, M, std::min(kStripe, p.n - s * kStripe));
    });
    return;
  }
  const int64_t groups = (p.n + 3) / 4;
  ForEachRange(groups, M * p.n * p.k, threads, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const int64_t j0 = g * 4;
      const int count = static_cast<int>(std::min<int64_t>(4, p.n - j0));
      Dots<M>(a, p.k, b + j0 * SgemmLdb(p), SgemmLdb(p), p.bias ? p.bias + j0 : nullptr, c + j0,
              p.n, count);
      ApplySgemmEpilogue(p, c + j0, M, count);
    }
  });
}

}  // namespace

bool FewRowsSgemm(const SgemmProblem& p, int threads) {
  if (p.m < 1 || p.m > kFewRows || p.packed_b != nullptr || p.accumulate || p.alpha != 1.0f)
    return false;
  thread_local AlignedFloats a_rows;  // op(a) of one matrix, m x k row-major, when trans_a
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    const float* src = p.a + bi * p.stride_a;
    const float* a = src;
    if (p.trans_a) {
      float* rows = a_rows.Get(std::max<int64_t>(1, p.m * p.k));
      for (int64_t i = 0; i < p.m; ++i)
        for (int64_t q = 0; q < p.k; ++q) rows[i * p.k + q] = src[q * p.m + i];
      a = rows;
    }
    const float* b = p.b + bi * p.stride_b;
    float* c = p.c + bi * p.m * p.n;
    switch (p.m) {
      case 1:
        Product<1>(p, a, b, c, threads);
        break;
      case 2:
        Product<2>(p, a, b, c, threads);
        break;
      case 3:
        Product<3>(p, a, b, c, threads);
        break;
      default:
        Product<4>(p, a, b, c, threads);
    }
  }
  return true;
}

}  // namespace kiln::cpu
