#include "runtime/cpu/packed_sgemm.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ir/ops/math.h"
#include "runtime/cpu/few_rows_sgemm.h"
#include "runtime/cpu/parallel_ranges.h"

namespace kiln::cpu {
namespace {

constexpr int kMr = 14;  // rows of a micro-tile
constexpr int kNr = 32;  // columns of a micro-tile: two zmm registers

// How the kernel walks a product, chosen once per process for the CPU it runs on: k in blocks of
// `kc` rows, units of work of at most `mc` rows, and within a unit, blocks of `nc` columns whose
// packed op(b) (kc x nc) stays in L2 while each micro-panel of op(a) (kMr x kc, in L1) runs
// across it. Measured on 2 threads, 1024 x 3072 x 768 and 1024 x 768 x 3072:
// - Zen 5 (1 MiB L2, fast L3): 28-row units, one 32-column panel at a time across k blocks of
//   1024 (480 GFLOP/s, against 400 with 112-row units and 256-k blocks);
// - Intel Xeon with AMX (2 MiB L2, an L3 that one core reads at about a third of Zen 5's rate):
//   224-row units over 384 x 512 blocks of op(b) (375-390 GFLOP/s, against 260-330 with Zen 5's
//   blocking, which streams all of op(b) from L3 once per 28 rows; MKL: 410-430).
// - Zen 4 (1 MiB L2, AVX-512 on 256-bit units): the L2 blocking too (a BERT-base layer 91-97 ->
//   77-80 ms, an MLP's training step 107 -> 81-86 ms against Zen 5's blocking).
struct Blocking {
  int64_t kc, mc, nc;
};

constexpr Blocking kL2Blocking{384, 224, 512};
constexpr Blocking kZen5Blocking{1024, 28, kNr};

// Whether this is an AMD CPU of family 0x1A (Zen 5) or later: cpuid leaf 1's family, with the
// extended family added as AMD's manuals define it.
bool IsZen5OrLater() {
  if (!__builtin_cpu_is("amd")) return false;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const unsigned base = (eax >> 8) & 0xF, extended = (eax >> 20) & 0xFF;
  return (base == 0xF ? base + extended : base) >= 0x1A;
}

// KILN_SGEMM_BLOCKING=l2 or =zen5 (also spelt intel and amd) takes one regardless of the CPU (to
// compare, and to test both on one machine); =KC,MC,NC (each 1 to 65536, NC a multiple of 32) sets
// all three, for tuning on another CPU. Anything else is ignored.
const Blocking& CpuBlocking() {
  static const Blocking blocking = [] {
    const char* env = std::getenv("KILN_SGEMM_BLOCKING");
    const std::string forced = env ? env : "";
    if (forced == "l2" || forced == "intel") return kL2Blocking;
    if (forced == "zen5" || forced == "amd") return kZen5Blocking;
    long long kc = 0, mc = 0, nc = 0;
    char end = 0;
    constexpr long long kMost = 1 << 16;
    if (std::sscanf(forced.c_str(), "%lld,%lld,%lld%c", &kc, &mc, &nc, &end) == 3 && kc > 0 &&
        mc > 0 && nc > 0 && nc % kNr == 0 && kc <= kMost && mc <= kMost && nc <= kMost)
      return Blocking{kc, mc, nc};
    return IsZen5OrLater() ? kZen5Blocking : kL2Blocking;
  }();
  return blocking;
}

// r[q] = lane q of each of r[0..15] (a 16 x 16 transpose in registers).
__attribute__((target("avx512f"))) inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int j = 0; j < 8; ++j) {
    t[2 * j] = _mm512_unpacklo_ps(r[2 * j], r[2 * j + 1]);
    t[2 * j + 1] = _mm512_unpackhi_ps(r[2 * j], r[2 * j + 1]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512d a = _mm512_castps_pd(t[4 * j]), b = _mm512_castps_pd(t[4 * j + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * j + 2]), d = _mm512_castps_pd(t[4 * j + 3]);
    u[4 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[4 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[4 * j + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * j + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {
    t[j] = _mm512_shuffle_f32x4(u[j], u[j + 4], 0x88);
    t[j + 4] = _mm512_shuffle_f32x4(u[j], u[j + 4], 0xdd);
    t[j + 8] = _mm512_shuffle_f32x4(u[j + 8], u[j + 12], 0x88);
    t[j + 12] = _mm512_shuffle_f32x4(u[j + 8], u[j + 12], 0xdd);
  }
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
    r[j + 4] = _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0x88);
    r[j + 12] = _mm512_shuffle_f32x4(t[j + 4], t[j + 12], 0xdd);
  }
}

// out[p * out_stride + i] = src[i * ld + p] for p < count and i < width, zero for rows <= i:
// `rows` rows of `count` contiguous floats, written interleaved (rows <= width <= 16), 16 x 16
// at a time through registers instead of one strided store per element.
__attribute__((target("avx512f"))) void InterleaveRows(const float* src, int64_t ld, int rows,
                                                       int64_t count, int width, float* out,
                                                       int64_t out_stride) {
  const __mmask16 out_mask = static_cast<__mmask16>((1u << width) - 1);
  for (int64_t p = 0; p < count; p += 16) {
    const int n = static_cast<int>(std::min<int64_t>(16, count - p));
    const __mmask16 in_mask = static_cast<__mmask16>((1u << n) - 1);
    __m512 r[16];
    for (int i = 0; i < 16; ++i)
      r[i] = i < rows ? _mm512_maskz_loadu_ps(in_mask, src + i * ld + p) : _mm512_setzero_ps();
    Transpose16x16(r);
    for (int q = 0; q < n; ++q) _mm512_mask_storeu_ps(out + (p + q) * out_stride, out_mask, r[q]);
  }
}

// out[p * width + i] = src[p * ld + i] for p < count and i < cols, zero for cols <= i < width
// (cols <= width <= 16): one masked load and store per p.
__attribute__((target("avx512f"))) void CopyRows(const float* src, int64_t ld, int64_t count,
                                                 int cols, int width, float* out) {
  const __mmask16 in_mask = static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 out_mask = static_cast<__mmask16>((1u << width) - 1);
  for (int64_t p = 0; p < count; ++p)
    _mm512_mask_storeu_ps(out + p * width, out_mask, _mm512_maskz_loadu_ps(in_mask, src + p * ld));
}

// out[s * count * kNr + p * kNr + j] = src[p * ld + s + j] for p < count and s + j < cols (s a
// multiple of kNr, zeros past cols): a row-major block spread into micro-panels of kNr columns,
// row by row, so that each row is read once and contiguously (a panel at a time would walk the
// rows kNr floats apart, a page each for a wide matrix).
__attribute__((target("avx512f"))) void SpreadRowsIntoPanels(const float* src, int64_t ld,
                                                             int64_t count, int64_t cols,
                                                             float* out) {
  const int64_t halves = (cols + kNr - 1) / kNr * 2, full = cols / 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (cols % 16)) - 1);
  for (int64_t p = 0; p < count; ++p) {
    const float* row = src + p * ld;
    float* dst = out + p * kNr;
    // Rows kAhead below, fetched now: the hardware's prefetcher starts afresh at each row.
    constexpr int64_t kAhead = 3;
    if (p + kAhead < count)
      for (int64_t h = 0; h < full; ++h)
        _mm_prefetch(reinterpret_cast<const char*>(row + kAhead * ld + h * 16), _MM_HINT_T0);
    for (int64_t h = 0; h < halves; ++h) {
      const __m512 v = h < full    ? _mm512_loadu_ps(row + h * 16)
                       : h == full ? _mm512_maskz_loadu_ps(tail, row + h * 16)
                                   : _mm512_setzero_ps();
      _mm512_storeu_ps(dst + h / 2 * count * kNr + h % 2 * 16, v);
    }
  }
}

// Rows [i0, i0 + mc) and columns [p0, p0 + kc) of op(a) as micro-panels of mr rows: panel r
// holds, for each p, its mr rows' entries (zeros past the last row).
void PackA(const float* a, bool trans, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
           int mr, float* out) {
  for (int64_t r = 0; r < mc; r += mr) {
    const int rows = static_cast<int>(std::min<int64_t>(mr, mc - r));
    float* panel = out + r * kc;
    if (trans) {  // op(a)(i, p) = a[p * lda + i]: each p's rows are contiguous
      CopyRows(a + p0 * lda + i0 + r, lda, kc, rows, mr, panel);
    } else {  // op(a)(i, p) = a[i * lda + p]
      InterleaveRows(a + (i0 + r) * lda + p0, lda, rows, kc, mr, panel, mr);
    }
  }
}

// Rows [p0, p0 + kc) and columns [j0, j0 + nc) of op(b) as micro-panels of kNr columns (zeros
// past the last column).
void PackB(const float* b, bool trans, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
           float* out) {
  if (!trans) {  // op(b)(p, j) = b[p * ldb + j]: each p's columns are contiguous
    SpreadRowsIntoPanels(b + p0 * ldb + j0, ldb, kc, nc, out);
    return;
  }
  for (int64_t s = 0; s < nc; s += kNr) {
    const int cols = static_cast<int>(std::min<int64_t>(kNr, nc - s));
    float* panel = out + s * kc;
    // op(b)(p, j) = b[j * ldb + p]: each half panel's 16 columns interleaved
    for (int half = 0; half < kNr; half += 16)
      InterleaveRows(b + (j0 + s + half) * ldb + p0, ldb, std::clamp(cols - half, 0, 16), kc, 16,
                     panel + half, kNr);
  }
}

// c[i][j] = start(i, j) + alpha * sum over p < kc of pa[p][i] pb[p][j] for i < rows <= MR,
// j < cols, where start is c's value when `accumulate`, else bias[j] (0 without a bias); one fused
// multiply-add, so alpha 1 rounds as a plain sum. MR is kMr, or fewer for a product of fewer rows
// (a batch of one: no work on padding rows).
template <int MR>
__attribute__((target("avx512f"))) void MicroKernel(int64_t kc, const float* pa, const float* pb,
                                                    float* c, int64_t ldc, int rows, int cols,
                                                    const float* bias, bool accumulate,
                                                    float alpha) {
  __m512 acc[MR][2];
#pragma GCC unroll 14
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  // c's tile is read (or written) after the k loop; fetched now, its misses overlap the loop.
  for (int i = 0; i < rows; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16), _MM_HINT_T0);
  }
  for (int64_t p = 0; p < kc; ++p) {
    // op(b)'s panel streams from L2: its lines kAheadB steps on, fetched now.
    constexpr int kAheadB = 8;
    _mm_prefetch(reinterpret_cast<const char*>(pb + kAheadB * kNr), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(pb + kAheadB * kNr + 16), _MM_HINT_T0);
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
  const __m512 scale = _mm512_set1_ps(alpha);
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
    _mm512_mask_storeu_ps(row, m0, _mm512_fmadd_ps(scale, acc[i][0], s0));
    _mm512_mask_storeu_ps(row + 16, m1, _mm512_fmadd_ps(scale, acc[i][1], s1));
  }
}

using MicroKernelFn = void (*)(int64_t, const float*, const float*, float*, int64_t, int, int,
                               const float*, bool, float);

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

int64_t KBlocks(const SgemmProblem& p) { return (p.k + CpuBlocking().kc - 1) / CpuBlocking().kc; }

// The size of one matrix's packed op(b): every k block, all its column panels.
int64_t PackedBSize(const SgemmProblem& p) { return p.k * Panels(p.n) * kNr; }

// Where k block [p0, p0 + kc) of a packed op(b) starts: the blocks before it are kc rows each.
int64_t PackedBBlock(const SgemmProblem& p, int64_t p0) { return p0 * Panels(p.n) * kNr; }

// One unit of work: rows [i0, i0 + mc) and columns [j0, j0 + nc) of c[bi]. For each k block and
// each block of columns, op(b)'s block (kc x nc, in L2) comes from `packed_b` (packed whole), or,
// when that is null, is packed here from p.b; then for each block of at most the blocking's mc
// rows (packed; once per k block when the unit has only one), each micro-panel of rows runs across
// the block's column panels (14 x 32 accumulators in registers through the k block), accumulating
// into c after the first k block; the epilogue follows the last k block while c is in cache.
void Unit(const SgemmProblem& p, int64_t bi, const float* packed_b, int64_t i0, int64_t mc,
          int64_t j0, int64_t nc) {
  const Blocking& blocking = CpuBlocking();
  const int mr = MicroRows(p.m);
  const MicroKernelFn kernel = MicroKernelFor(mr);
  const float* a = p.a + bi * p.stride_a;
  float* c = p.c + bi * p.m * p.n + i0 * p.n + j0;
  const int64_t lda = p.trans_a ? p.m : p.k;
  const float* bias = p.bias ? p.bias + j0 : nullptr;
  const bool epilogue = p.relu || p.gelu_tanh;
  if (p.k == 0) {
    if (p.accumulate) return;  // c += nothing
    for (int64_t i = 0; i < mc; ++i)
      for (int64_t j = 0; j < nc; ++j) c[i * p.n + j] = bias ? bias[j] : 0.0f;
    if (epilogue) ApplySgemmEpilogue(p, c, mc, nc);
    return;
  }
  const int64_t row_block = std::max<int64_t>(mr, blocking.mc / mr * mr);
  const bool one_row_block = mc <= row_block;
  const int64_t kc_max = std::min(blocking.kc, p.k);
  thread_local AlignedFloats a_rows, b_block;
  float* pa = a_rows.Get((std::min(mc, row_block) + mr - 1) / mr * mr * kc_max);
  float* pb_own = packed_b ? nullptr : b_block.Get(kc_max * Panels(blocking.nc) * kNr);
  const float* b = p.b + bi * p.stride_b;
  const int64_t ldb = SgemmLdb(p);
  for (int64_t p0 = 0; p0 < p.k; p0 += blocking.kc) {
    const int64_t kc = std::min(blocking.kc, p.k - p0);
    const bool last = p0 + kc == p.k;
    if (one_row_block) PackA(a, p.trans_a, lda, i0, mc, p0, kc, mr, pa);
    for (int64_t jc = 0; jc < nc; jc += blocking.nc) {
      const int64_t jn = std::min(blocking.nc, nc - jc);
      const float* pb_block = pb_own;
      if (packed_b)
        pb_block = packed_b + PackedBBlock(p, p0) + (j0 + jc) / kNr * kc * kNr;
      else
        PackB(b, p.trans_b, ldb, p0, kc, j0 + jc, jn, pb_own);
      for (int64_t ic = 0; ic < mc; ic += row_block) {
        const int64_t rows_here = std::min(row_block, mc - ic);
        if (!one_row_block) PackA(a, p.trans_a, lda, i0 + ic, rows_here, p0, kc, mr, pa);
        for (int64_t r = 0; r < rows_here; r += mr) {
          const int rows = static_cast<int>(std::min<int64_t>(mr, rows_here - r));
          for (int64_t s = 0; s < jn; s += kNr) {
            const int cols = static_cast<int>(std::min<int64_t>(kNr, jn - s));
            kernel(kc, pa + r * kc, pb_block + s * kc, c + (ic + r) * p.n + jc + s, p.n, rows, cols,
                   bias ? bias + jc + s : nullptr, p.accumulate || p0 > 0, p.alpha);
          }
        }
      }
      if (last && epilogue) ApplySgemmEpilogue(p, c + jc, mc, jn);
    }
  }
}

// How PackedSgemm divides each product into units of work: row_blocks x col_blocks, each an
// even share of the micro-panels of rows (mr rows) and of columns (kNr columns), numbered row
// block major, or column block major when `columns_first`.
struct UnitGrid {
  int mr = kMr;
  int64_t row_panels = 1, row_blocks = 1, col_panels = 1, col_blocks = 1;
  bool columns_first = false;

  struct Span {
    int64_t i0, rows, j0, cols;
  };
  // Unit u (< row_blocks * col_blocks) of one matrix of p.
  Span At(int64_t u, const SgemmProblem& p) const {
    const int64_t ib = columns_first ? u % row_blocks : u / col_blocks;
    const int64_t jb = columns_first ? u / row_blocks : u % col_blocks;
    const int64_t i0 = ib * row_panels / row_blocks * mr;
    const int64_t i1 = std::min(p.m, (ib + 1) * row_panels / row_blocks * mr);
    const int64_t j0 = jb * col_panels / col_blocks * kNr;
    const int64_t j1 = std::min(p.n, (jb + 1) * col_panels / col_blocks * kNr);
    return {i0, i1 - i0, j0, j1 - j0};
  }
};

// Units of at most the blocking's mc rows, as wide as leaves every thread a few units (wider
// units pack op(a) fewer times). A single product's units are dealt out so that a static
// schedule gives each thread the same work: its rows split into a multiple of `threads` blocks,
// or, when that divides more evenly at a cost worth paying (256 rows are 19 micro-panels: 10
// and 9 on two threads, while 2048 columns are 64 panels: 32 and 32), its columns into one unit
// per thread, all rows (each thread reading only its part of op(b)).
UnitGrid DivideIntoUnits(const SgemmProblem& p, int threads) {
  UnitGrid g;
  g.mr = MicroRows(p.m);
  g.row_panels = (p.m + g.mr - 1) / g.mr;
  g.col_panels = Panels(p.n);
  const int64_t panels_per_block = std::max<int64_t>(1, CpuBlocking().mc / g.mr);
  g.row_blocks = (g.row_panels + panels_per_block - 1) / panels_per_block;
  const int64_t t = threads;
  if (p.batch == 1 && t > 1) {
    // What the busiest thread does beyond an even share, as a fraction of the whole.
    auto uneven = [t](int64_t panels) {
      return static_cast<double>((panels + t - 1) / t * t - panels) / static_cast<double>(panels);
    };
    // Splitting the columns packs op(a) once per thread instead of once (about two cycles an
    // element, counting its repacking per block of columns), and op(b) in L2 instead of through
    // memory (about one an element saved); the evener split saves its excess of the kernel's
    // m n k / 32 cycles.
    const double m = static_cast<double>(p.m), n = static_cast<double>(p.n);
    const double k = static_cast<double>(p.k);
    const double saved = (uneven(g.row_panels) - uneven(g.col_panels)) * m * n * k / 32 + k * n;
    if (g.col_panels >= t && saved > 2.0 * static_cast<double>(t - 1) * m * k) {
      g.columns_first = true;
      g.row_blocks = 1;
      g.col_blocks = t;
      return g;
    }
    if (g.row_blocks >= t) g.row_blocks = std::min(g.row_panels, (g.row_blocks + t - 1) / t * t);
  }
  while (g.col_blocks < g.col_panels && p.batch * g.row_blocks * g.col_blocks < 2 * t)
    g.col_blocks = std::min(g.col_panels, g.col_blocks * 2);
  return g;
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
  const int64_t block_rows = CpuBlocking().kc;
  const int64_t p0 = u / panels * block_rows, s = u % panels * kNr;
  const int64_t kc = std::min(block_rows, p.k - p0);
  PackB(b, p.trans_b, SgemmLdb(p), p0, kc, s, std::min<int64_t>(kNr, p.n - s),
        packed + PackedBBlock(p, p0) + s * kc);
}

// Packs all of one matrix `b` of op(b) on up to `threads` threads.
void PackBMatrix(const SgemmProblem& p, const float* b, float* packed, int threads) {
  const int64_t units = KBlocks(p) * Panels(p.n);
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

int64_t PackedSgemmKc() { return CpuBlocking().kc; }

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
  // Unless prepacked, op(b) is packed whole, once per call (once for the batch when it repeats),
  // by all threads, then each unit packs its rows of op(a) per k block; or, when each thread
  // takes its own columns, each packs its part of op(b) block by block as it goes (in L2, where
  // the kernel reads it, instead of through memory).
  const UnitGrid grid = DivideIntoUnits(p, threads);
  const int64_t per_matrix = grid.row_blocks * grid.col_blocks;
  const int64_t work = p.batch * p.m * p.n * std::max<int64_t>(p.k, 1) / 16;
  const int64_t panels = Panels(p.n);
  // Batches whose packed op(b) would not fit in 16 Mi floats are done in groups.
  const bool prepacked = p.packed_b != nullptr;
  const bool packed_by_units = !prepacked && grid.columns_first;
  const bool repeat_b = p.stride_b == 0 || prepacked;
  const int64_t b_size = PackedBSize(p);
  const int64_t group =
      repeat_b ? p.batch
               : std::clamp<int64_t>((int64_t{1} << 24) / std::max<int64_t>(1, b_size), 1, p.batch);
  thread_local AlignedFloats packed_b_buffer;
  float* packed_b =
      prepacked || packed_by_units
          ? nullptr
          : packed_b_buffer.Get(std::max<int64_t>(1, (repeat_b ? 1 : group) * b_size));
  const int64_t k_blocks = KBlocks(p);
  for (int64_t first = 0; first < p.batch; first += group) {
    const int64_t count = std::min(group, p.batch - first);
    const int64_t b_items = repeat_b ? 1 : count;
    const bool pack = !prepacked && !packed_by_units && (!repeat_b || first == 0);
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
        const int64_t item = u / per_matrix;
        const UnitGrid::Span span = grid.At(u % per_matrix, p);
        const float* b_packed = from ? from + (repeat_b ? 0 : item * b_size) : nullptr;
        Unit(p, first + item, b_packed, span.i0, span.rows, span.j0, span.cols);
      }
    }
  }
}

}  // namespace kiln::cpu
