// kiln's packed AVX-512 sgemm (runtime/cpu/packed_sgemm.h) against a plain product in double:
// every transpose, sizes on both sides of the micro-tiles (1, 2, 4, 8 and 14 rows x 32), of the
// few-rows path (runtime/cpu/few_rows_sgemm.h: up to 4 rows, 64-column stripes, dot products of
// 16 lanes) and of the blocking's units, column blocks and k blocks (PackedSgemmKc()), a batch
// with one operand repeated (stride 0), the fused bias, relu and GELU, one thread and several
// (rows spread evenly over 2 or 3 of them), b packed beforehand, products added into c's
// values (alpha op(a) op(b) accumulated: a weight updated by its gradient), and b a window of a
// wider matrix (its leading dimension set: attention's live key columns).
#include "runtime/cpu/packed_sgemm.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "ir/ops/math.h"
#include "runtime/cpu/few_rows_sgemm.h"

namespace kiln::cpu {
namespace {

struct Case {
  int64_t m, n, k, batch = 1;
  bool trans_a = false, trans_b = false, repeat_b = false;
  bool bias = false, relu = false, gelu = false;
  float alpha = 0;    // not 0: c += alpha * op(a) x op(b) over c's given values (accumulate)
  int64_t pad_b = 0;  // b's leading dimension exceeds a dense one's by this
};

std::vector<float> Random(int64_t count, uint32_t seed) {
  std::vector<float> v(count);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(static_cast<int32_t>(seed >> 8) % 2001) / 1000.0f;  // [-2, 2]
  }
  return v;
}

void Check(const Case& t, int threads) {
  INFO("m " << t.m << " n " << t.n << " k " << t.k << " batch " << t.batch << " trans_a "
            << t.trans_a << " trans_b " << t.trans_b << " repeat_b " << t.repeat_b << " bias "
            << t.bias << " relu " << t.relu << " gelu " << t.gelu << " alpha " << t.alpha
            << " pad_b " << t.pad_b << " threads " << threads);
  const int64_t ldb = (t.trans_b ? t.k : t.n) + t.pad_b, b_size = (t.trans_b ? t.n : t.k) * ldb;
  const std::vector<float> a = Random(t.batch * t.m * t.k, 1);
  const std::vector<float> b = Random((t.repeat_b ? 1 : t.batch) * b_size, 2);
  const std::vector<float> bias = Random(t.n, 3);
  const bool accumulate = t.alpha != 0;
  const std::vector<float> c_start = Random(t.batch * t.m * t.n, 4);
  // Every entry must be written (or, accumulating, added to).
  std::vector<float> c = accumulate ? c_start : std::vector<float>(c_start.size(), std::nanf(""));
  SgemmProblem p;
  p.m = t.m, p.n = t.n, p.k = t.k, p.batch = t.batch;
  p.stride_a = t.m * t.k, p.stride_b = t.repeat_b ? 0 : b_size;
  p.trans_a = t.trans_a, p.trans_b = t.trans_b;
  p.ldb = t.pad_b ? ldb : 0;
  p.a = a.data(), p.b = b.data(), p.c = c.data(), p.bias = t.bias ? bias.data() : nullptr;
  p.relu = t.relu, p.gelu_tanh = t.gelu;
  p.accumulate = accumulate;
  p.alpha = accumulate ? t.alpha : 1.0f;
  PackedSgemm(p, threads);
  // b packed beforehand: the same bits (products of a few rows read b unpacked instead: the gemm
  // step never prepacks theirs, so their sums need not agree with the packed path's bit for bit).
  if ((t.batch == 1 || t.repeat_b) && t.m > kFewRows) {
    PackedSgemmB packed;
    packed.Pack(p, threads);
    SgemmProblem q = p;
    std::vector<float> c2 = accumulate ? c_start : std::vector<float>(c.size(), std::nanf(""));
    q.c = c2.data(), q.packed_b = packed.data();
    PackedSgemm(q, threads);
    CHECK(std::memcmp(c.data(), c2.data(), sizeof(float) * c.size()) == 0);
  }
  double worst = 0;
  for (int64_t bi = 0; bi < t.batch; ++bi) {
    const float* ai = a.data() + bi * p.stride_a;
    const float* bb = b.data() + bi * p.stride_b;
    for (int64_t i = 0; i < t.m; ++i) {
      for (int64_t j = 0; j < t.n; ++j) {
        double sum = t.bias ? bias[j] : 0.0;
        for (int64_t q = 0; q < t.k; ++q) {
          double x = t.trans_a ? ai[q * t.m + i] : ai[i * t.k + q];
          double y = t.trans_b ? bb[j * ldb + q] : bb[q * ldb + j];
          sum += x * y;
        }
        if (accumulate) sum = c_start[(bi * t.m + i) * t.n + j] + t.alpha * sum;
        if (t.relu) sum = sum > 0 ? sum : 0;
        if (t.gelu) sum = GeluTanhValue(sum);
        const double got = c[(bi * t.m + i) * t.n + j];
        // f32 sums of k products of magnitude <= 4
        const double tolerance = 1e-5 * (4.0 * static_cast<double>(t.k) + 1.0);
        REQUIRE(std::isfinite(got));
        worst = std::max(worst, std::abs(got - sum) / tolerance);
      }
    }
  }
  CHECK(worst <= 1.0);
}

TEST_CASE("The packed sgemm matches a float64 product for every shape, transpose and epilogue",
          "[packed_sgemm]") {
  if (!HasPackedSgemm()) {
    WARN("this CPU has no AVX-512F: the packed sgemm is not used, nothing to check");
    return;
  }
  std::vector<Case> cases;
  for (int64_t m : {1, 2, 3, 4, 8, 13, 14, 15, 113})
    for (int64_t n : {1, 16, 31, 33, 257})
      for (int64_t k : {int64_t{1}, int64_t{7}, PackedSgemmKc(), PackedSgemmKc() + 44})
        for (int trans = 0; trans < 4; ++trans)
          cases.push_back({m, n, k, 1, (trans & 1) != 0, (trans & 2) != 0});
  cases.push_back({128, 128, 64, 6, false, true});              // attention's Q K^T
  cases.push_back({128, 64, 128, 6, false, false, true});       // one b for the whole batch
  cases.push_back({30, 70, 40, 1, false, false, false, true});  // bias
  cases.push_back({30, 70, 40, 1, true, true, false, true, true});
  cases.push_back({30, 70, 40, 1, false, false, false, true, false, true});
  cases.push_back({5, 9, 0, 2, false, false, false, true});  // k = 0: the bias alone
  // 5 micro-panels of rows, 4 of columns: on 2 threads each takes half of the columns.
  cases.push_back({60, 128, 50, 1, false, true, false, true, true});
  // Several units of rows, blocks of columns and blocks of k, epilogue after the last k block.
  cases.push_back({479, 1100, 2 * PackedSgemmKc() + 5, 1, false, false, false, true, true});
  cases.push_back({479, 1100, 2 * PackedSgemmKc() + 5, 1, true, true, false, false, false, true});
  // A few rows over a b larger than the caches: the threads split b's rows (partial sums added).
  cases.push_back({3, 2100, 2003, 1, false, false, false, true, true});
  // Accumulated into c (a weight's update by its gradient's product): every transpose with blocks
  // of k, few rows (the packed path: the few-rows one does not accumulate), units of rows and
  // blocks of columns (one large case), k = 0 (c unchanged).
  for (int trans = 0; trans < 4; ++trans) {
    const bool ta = (trans & 1) != 0, tb = (trans & 2) != 0;
    cases.push_back(
        {60, 70, 2 * PackedSgemmKc() + 3, 1, ta, tb, false, false, false, false, -0.25f});
    cases.push_back({3, 70, 40, 1, ta, tb, false, false, false, false, 1.0f});
  }
  cases.push_back({300, 600, PackedSgemmKc() + 3, 1, true, true, false, false, false, false, 0.5f});
  cases.push_back({20, 33, 0, 1, false, false, false, false, false, false, -0.5f});
  // b a window of a wider matrix: every transpose, few rows and the packed path, a batch, blocks
  // of k, a few rows over a b split by rows across threads, units of all rows by column blocks.
  for (int trans = 0; trans < 4; ++trans)
    for (int64_t m : {3, 40}) {
      const bool ta = (trans & 1) != 0, tb = (trans & 2) != 0;
      cases.push_back({m, 70, 45, 2, ta, tb, false, false, false, false, 0.0f, 13});
      cases.push_back(
          {m, 70, 2 * PackedSgemmKc() + 5, 1, ta, tb, false, false, false, false, 0.0f, 13});
    }
  cases.push_back({3, 2100, 2003, 1, false, false, false, true, true, false, 0.0f, 13});
  cases.push_back({256, 1100, 60, 1, false, false, false, false, false, false, 0.0f, 13});
  for (const Case& t : cases) {
    Check(t, 1);
    if (t.m * t.n * t.k >= 100000) Check(t, 2);
    if (t.m * t.n * t.k >= 10000000) Check(t, 3);
  }
}

}  // namespace
}  // namespace kiln::cpu
