#include "runtime/cpu/packed_sgemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ir/ops/math.h"
#include "runtime/cpu/few_rows_sgemm.h"
#include "runtime/cpu/parallel_ranges.h"

namespace kiln::cpu {
namespace {

constexpr int kMr = 14;  // rows of a micro-tile
constexpr int kNr = 32;  // columns of a micro-tile: two zmm registers
constexpr int64_t kKc = kPackedSgemmKc;
constexpr int64_t kMc = kMr * 2;  // rows of a unit of work

// Rows [i0, i0 + mc) and columns [p0, p0 + kc) of op(a) as micro-panels of mr rows: panel r
// holds, for each p, its mr rows' entries (zeros past the last row).
void PackA(const float* a, bool trans, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
           int mr, float* out) {
  for (int64_t r = 0; r < mc; r += mr) {
    const int rows = static_cast<int>(std::min<int64_t>(mr, mc - r));
    float* panel = out + r * kc;
    if (trans) {  // op(a)(i, p) = a[p * lda + i]: each p's rows are contiguous
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = a + (p0 + p) * lda + i0 + r;
        float* dst = panel + p * mr;
        for (int i = 0; i < rows; ++i) dst[i] = src[i];
        for (int i = rows; i < mr; ++i) dst[i] = 0.0f;
      }
    } else {  // op(a)(i, p) = a[i * lda + p]
      for (int i = 0; i < rows; ++i) {
        const float* src = a + (i0 + r + i) * lda + p0;
        for (int64_t p = 0; p < kc; ++p) panel[p * mr + i] = src[p];
      }
      for (int i = rows; i < mr; ++i)
        for (int64_t p = 0; p < kc; ++p) panel[p * mr + i] = 0.0f;
    }
  }
}

// Rows [p0, p0 + kc) and columns [j0, j0 + nc) of op(b) as micro-panels of kNr columns (zeros
// past the last column).
void PackB(const float* b, bool trans, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
           float* out) {
  for (int64_t s = 0; s < nc; s += kNr) {
    const int cols = static_cast<int>(std::min<int64_t>(kNr, nc - s));
    float* panel = out + s * kc;
    if (trans) {  // op(b)(p, j) = b[j * ldb + p]
      // In blocks of 16 rows of the panel (2 KiB, kept in L1 while every column is written
      // into them), not a whole column at a time (a stride of kNr floats through the panel).
      constexpr int64_t kBlock = 16;
      for (int64_t q = 0; q < kc; q += kBlock) {
        const int64_t rows = std::min(kBlock, kc - q);
        for (int j = 0; j < cols; ++j) {
          const float* src = b + (j0 + s + j) * ldb + p0 + q;
          for (int64_t p = 0; p < rows; ++p) panel[(q + p) * kNr + j] = src[p];
        }
        for (int j = cols; j < kNr; ++j)
          for (int64_t p = 0; p < rows; ++p) panel[(q + p) * kNr + j] = 0.0f;
      }
    } else {  // op(b)(p, j) = b[p * ldb + j]: each p's columns are contiguous
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b + (p0 + p) * ldb + j0 + s;
        float* dst = panel + p * kNr;
        std::memcpy(dst, src, sizeof(float) * cols);
        if (cols < kNr) std::memset(dst + cols, 0, sizeof(float) * (kNr - cols));
      }
    }
  }
}

// c[i][j] = start(i, j) + sum over p < kc of pa[p][i] pb[p][j] for i < rows <= MR, j < cols, where
// start is c's value when `accumulate`, else bias[j] (0 without a bias). MR is kMr, or fewer for
// a product of fewer rows (a batch of one: no work on padding rows).
template <int MR>
__attribute__((target("avx512f"))) void MicroKernel(int64_t kc, const float* pa, const float* pb,
                                                    float* c, int64_t ldc, int rows, int cols,
                                                    const float* bias, bool accumulate) {
  __m512 acc[MR][2];
#pragma GCC unroll 14
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_load_ps(pb);
    const __m512 b1 = _mm512_load_ps(pb + 16);
#pragma GCC unroll 14
    for (int i = 0; i < MR; ++i) {
      const __m512 ai = _mm512_set1_ps(pa[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    pa += MR;
    pb += kNr;
  }
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xffff) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32   ? __mmask16(0xffff)
                       : cols <= 16 ? __mmask16(0)
                                    : __mmask16((1u << (cols - 16)) - 1);
  __m512 start0 = _mm512_setzero_ps(), start1 = _mm512_setzero_ps();
  if (bias && !accumulate) {
    start0 = _mm512_maskz_loadu_ps(m0, bias);
    start1 = _mm512_maskz_loadu_ps(m1, bias + 16);
  }
#pragma GCC unroll 14
  for (int i = 0; i < MR; ++i) {
    if (i >= rows) break;
    float* row = c + i * ldc;
    __m512 s0 = start0, s1 = start1;
    if (accumulate) {
      s0 = _mm512_maskz_loadu_ps(m0, row);
      s1 = _mm512_maskz_loadu_ps(m1, row + 16);
    }
    _mm512_mask_storeu_ps(row, m0, _mm512_add_ps(s0, acc[i][0]));
    _mm512_mask_storeu_ps(row + 16, m1, _mm512_add_ps(s1, acc[i][1]));
  }
}

using MicroKernelFn = void (*)(int64_t, const float*, const float*, float*, int64_t, int, int,
                               const float*, bool);

// The micro-tile's rows for a product of m rows, and its kernel.
int MicroRows(int64_t m) { return m >= kMr ? kMr : m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : 8; }
MicroKernelFn MicroKernelFor(int mr) {
  switch (mr) {
    case 1:
      return MicroKernel<1>;
    case 2:
      return MicroKernel<2>;
    case 4:
      return MicroKernel<4>;
    case 8:
      return MicroKernel<8>;
    default:
      return MicroKernel<kMr>;
  }
}

int64_t Panels(int64_t n) { return (n + kNr - 1) / kNr; }

// The size of one matrix's packed op(b): every k block, all its column panels.
int64_t PackedBSize(const SgemmProblem& p) { return p.k * Panels(p.n) * kNr; }

// Where k block [p0, p0 + kc) of a packed op(b) starts: the blocks before it are kKc rows each.
int64_t PackedBBlock(const SgemmProblem& p, int64_t p0) { return p0 * Panels(p.n) * kNr; }

// One unit of work: rows [i0, i0 + mc) and columns [j0, j0 + nc) of c[bi], from op(b) packed
// whole (`packed_b`). The unit's rows of op(a) are packed first (every k block: for a unit of
// kMc = 28 rows and k = 768, 84 KiB, kept in L2); then each column panel of c is finished across
// all k blocks (its 2 x 14 x 32 accumulators in registers through a whole block of up to 1024 k,
// reading the block's b panel from L2, 128 KiB at most) and gets its epilogue while in L1. Few
// rows per unit and long k blocks measured best here (Zen 5, 2 threads: 1024 x 3072 x 768 at
// 480 GFLOP/s against 400 with 112-row units and 256-k blocks that keep the b panel in L1): the
// accumulators are stored and reloaded once per block instead of every 256 k.
void Unit(const SgemmProblem& p, int64_t bi, const float* packed_b, int64_t i0, int64_t mc,
          int64_t j0, int64_t nc) {
  const int mr = MicroRows(p.m);
  const MicroKernelFn kernel = MicroKernelFor(mr);
  const int64_t mc_pad = (mc + mr - 1) / mr * mr;
  thread_local AlignedFloats a_rows;
  float* pa = a_rows.Get(std::max<int64_t>(1, mc_pad * p.k));
  const float* a = p.a + bi * p.stride_a;
  float* c = p.c + bi * p.m * p.n + i0 * p.n + j0;
  const int64_t lda = p.trans_a ? p.m : p.k;
  const float* bias = p.bias ? p.bias + j0 : nullptr;
  for (int64_t p0 = 0; p0 < p.k; p0 += kKc)
    PackA(a, p.trans_a, lda, i0, mc, p0, std::min(kKc, p.k - p0), mr, pa + p0 * mc_pad);
  for (int64_t s = 0; s < nc; s += kNr) {
    const int cols = static_cast<int>(std::min<int64_t>(kNr, nc - s));
    if (p.k == 0) {
      for (int64_t i = 0; i < mc; ++i)
        for (int j = 0; j < cols; ++j) c[i * p.n + s + j] = bias ? bias[s + j] : 0.0f;
    }
    for (int64_t p0 = 0; p0 < p.k; p0 += kKc) {
      const int64_t kc = std::min(kKc, p.k - p0);
      const float* pb = packed_b + PackedBBlock(p, p0) + ((j0 + s) / kNr) * kc * kNr;
      for (int64_t r = 0; r < mc; r += mr) {
        const int rows = static_cast<int>(std::min<int64_t>(mr, mc - r));
        kernel(kc, pa + p0 * mc_pad + r * kc, pb, c + r * p.n + s, p.n, rows, cols,
               bias ? bias + s : nullptr, p0 > 0);
      }
    }
    if (p.relu || p.gelu_tanh) ApplySgemmEpilogue(p, c + s, mc, cols);
  }
}

// The number of threads worth starting for `work` (as ForEachRange decides).
int ThreadsFor(int64_t work, int64_t units, int threads) {
  return static_cast<int>(
      std::min<int64_t>({threads, units, std::max<int64_t>(1, work / kMinWorkPerThread)}));
}

// Packs one (k block, column panel) pair of a matrix `b` of op(b): unit u of
// k_blocks x Panels(n), k block major.
void PackBUnit(const SgemmProblem& p, const float* b, float* packed, int64_t u) {
  const int64_t panels = Panels(p.n);
  const int64_t p0 = u / panels * kKc, s = u % panels * kNr;
  const int64_t kc = std::min(kKc, p.k - p0);
  PackB(b, p.trans_b, p.trans_b ? p.k : p.n, p0, kc, s, std::min<int64_t>(kNr, p.n - s),
        packed + PackedBBlock(p, p0) + s * kc);
}

// Packs all of one matrix `b` of op(b) on up to `threads` threads.
void PackBMatrix(const SgemmProblem& p, const float* b, float* packed, int threads) {
  const int64_t units = (p.k + kKc - 1) / kKc * Panels(p.n);
  const int team = ThreadsFor(p.k * p.n, units, threads);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t u = 0; u < units; ++u) PackBUnit(p, b, packed, u);
}

}  // namespace

void ApplySgemmEpilogue(const SgemmProblem& p, float* c, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = c + i * p.n;
    if (p.relu)
      for (int64_t j = 0; j < cols; ++j) row[j] = row[j] > 0.0f ? row[j] : 0.0f;
    if (p.gelu_tanh)
      for (int64_t j = 0; j < cols; ++j)
        row[j] = static_cast<float>(GeluTanhValue(static_cast<double>(row[j])));
  }
}

bool HasPackedSgemm() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

AlignedFloats::~AlignedFloats() { std::free(data_); }

float* AlignedFloats::Get(int64_t count) {
  if (count > size_) {
    std::free(data_);
    size_ = std::max(count, size_ * 3 / 2);
    data_ = static_cast<float*>(std::aligned_alloc(64, sizeof(float) * ((size_ + 15) / 16 * 16)));
  }
  return data_;
}

int64_t PackedSgemmB::BytesFor(const SgemmProblem& p) {
  return std::max<int64_t>(1, PackedBSize(p)) * static_cast<int64_t>(sizeof(float));
}

void PackedSgemmB::Pack(const SgemmProblem& p, int threads) {
  float* out = buffer_.Get(std::max<int64_t>(1, PackedBSize(p)));
  PackBMatrix(p, p.b, out, threads);
  data_ = out;
}

void PackedSgemm(const SgemmProblem& p, int threads) {
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  if (FewRowsSgemm(p, threads)) return;  // m <= 4: read op(b) once, unpacked
  // op(b) is packed whole, once per call (once for the batch when it repeats), by all threads;
  // then each unit packs its rows of op(a) per k block. Units are blocks of kMc rows by columns
  // as wide as leaves every thread a few units (wider units pack op(a) fewer times).
  const int64_t row_blocks = (p.m + kMc - 1) / kMc;
  const int64_t panels = Panels(p.n);
  const int64_t work = p.batch * p.m * p.n * std::max<int64_t>(p.k, 1) / 16;
  int64_t unit_panels = panels;
  while (unit_panels > 1 && p.batch * row_blocks * ((panels + unit_panels - 1) / unit_panels) <
                                2 * static_cast<int64_t>(threads))
    unit_panels = (unit_panels + 1) / 2;
  const int64_t col_units = (panels + unit_panels - 1) / unit_panels;
  const int64_t per_matrix = row_blocks * col_units;
  // Batches whose packed op(b) would not fit in 16 Mi floats are done in groups.
  const bool prepacked = p.packed_b != nullptr;
  const bool repeat_b = p.stride_b == 0 || prepacked;
  const int64_t b_size = PackedBSize(p);
  const int64_t group =
      repeat_b ? p.batch
               : std::clamp<int64_t>((int64_t{1} << 24) / std::max<int64_t>(1, b_size), 1, p.batch);
  thread_local AlignedFloats packed_b_buffer;
  float* packed_b =
      prepacked ? nullptr
                : packed_b_buffer.Get(std::max<int64_t>(1, (repeat_b ? 1 : group) * b_size));
  const int k_blocks = static_cast<int>((p.k + kKc - 1) / kKc);
  for (int64_t first = 0; first < p.batch; first += group) {
    const int64_t count = std::min(group, p.batch - first);
    const int64_t b_items = repeat_b ? 1 : count;
    const bool pack = !prepacked && (!repeat_b || first == 0);
    const int64_t pack_units = pack ? b_items * k_blocks * panels : 0;
    const int64_t units = count * per_matrix;
    const int team = ThreadsFor(work * count / p.batch, std::max(pack_units, units), threads);
    const float* from = prepacked ? p.packed_b : packed_b;
#pragma omp parallel num_threads(team) if (team > 1)
    {
#pragma omp for schedule(static)
      for (int64_t u = 0; u < pack_units; ++u) {
        const int64_t item = u / (k_blocks * panels);
        PackBUnit(p, p.b + (first + item) * p.stride_b, packed_b + item * b_size,
                  u % (k_blocks * panels));
      }
#pragma omp for schedule(static)
      for (int64_t u = 0; u < units; ++u) {
        const int64_t item = u / per_matrix, rest = u % per_matrix;
        const int64_t ib = rest / col_units, jb = rest % col_units;
        const int64_t i0 = ib * kMc, j0 = jb * unit_panels * kNr;
        Unit(p, first + item, from + (repeat_b ? 0 : item * b_size), i0, std::min(kMc, p.m - i0),
             j0, std::min(unit_panels * kNr, p.n - j0));
      }
    }
  }
}

}  // namespace kiln::cpu
