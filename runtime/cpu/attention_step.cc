// Library step "attention" (compiler/epilogue_fusion.h): for each of `batch` matrices,
// y[i] = softmax(q[i] op(k[i]) + mask) v[i] over f32, the softmax along each row of scores. The
// scores of a block of query rows (at most 64 K floats, so that they stay in L2) are computed by
// the packed sgemm, masked, softmaxed in place (runtime/cpu/row_exp.h) and multiplied by v into y,
// so that no [batch, Lq, Lk] tensor is ever written. Blocks of all matrices are spread over the
// session's threads (each product then on one thread); fewer blocks than threads run one after
// another, each product on all of them. Without AVX-512 the products are OpenBLAS's sgemm.
// The key columns that a mask sets to -inf for every row of a block (a key-padding mask's
// padding; a causal mask's columns past the block's last row) are skipped in both products and
// the softmax: their exponentials are exactly 0, so the result is the same, except that a NaN or
// inf in q k^T or v at a column skipped for the whole block does not reach the block's output (as
// in flash-style kernels; which columns a block skips depends on its rows). A block whose rows are
// all masked everywhere runs whole (NaN rows, as the reference's softmax gives). Blocks are not
// made smaller for a causal mask: re-packing k for each block and packing the probabilities already
// bound this step at a head depth of 64 (docs/performance.md). Attributes: m (Lq), n (Lk), k (the
// depth of q and k), batch, stride_a and stride_b (q's and k's elements per matrix, 0: one shared),
// trans_b (k stored [Lk, depth]), n_v (v's columns), stride_v, mask (0: none; 1: one [Lq, Lk] for
// every matrix; 2: one per matrix). Inputs q, k, [mask], v; output y [batch, Lq, n_v]. Rounding:
// the softmax's exponentials as the generated kernel's (f32, summed in double), normalized after
// the p v product (each output row times 1 / its sum, at least 1: an unnormalized row reaches at
// most Lk max|v|, past f32's range only for |v| above 3e38 / Lk), the products as the gemm step's,
// subnormals flushed (Block).
#include <cblas.h>
#include <xmmintrin.h>

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/packed_sgemm.h"
#include "runtime/cpu/row_exp.h"

namespace kiln::cpu {
namespace {

struct AttentionParams {
  int64_t m = 0, n = 0, k = 0, batch = 1, stride_q = 0, stride_k = 0, n_v = 0, stride_v = 0;
  bool trans_k = false;
  int64_t mask = 0;
};

// c (m x n) = op(a) op(b), row-major, on up to `threads` threads.
void Product(const SgemmProblem& p, int threads) {
  if (HasPackedSgemm()) return PackedSgemm(p, threads);
  openblas_set_num_threads(threads);
  cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans,
              p.trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(p.m), static_cast<int>(p.n),
              static_cast<int>(p.k), 1.0f, p.a, static_cast<int>(p.trans_a ? p.m : p.k), p.b,
              static_cast<int>(SgemmLdb(p)), 0.0f, p.c, static_cast<int>(p.n));
}

// The key columns [first, last) outside which every one of `rows` rows of a mask (leading
// dimension n) is -inf; [0, n) when every row is -inf everywhere (or n is 0). Each row is read
// from its ends only as far as the bounds found so far: the first columns top down, the last ones
// bottom up (a causal block's last row sees the most columns), so that besides the -inf columns
// skipped a block reads about 2 rows' worth.
std::pair<int64_t, int64_t> LiveColumns(const float* mask, int64_t rows, int64_t n) {
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  int64_t first = n, last = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = mask + i * n;
    int64_t j = 0;
    while (j < first && row[j] == kMinusInf) ++j;
    first = std::min(first, j);
  }
  for (int64_t i = rows - 1; i >= 0; --i) {
    const float* row = mask + i * n;
    int64_t end = n;
    while (end > last && row[end - 1] == kMinusInf) --end;
    last = std::max(last, end);
  }
  if (first >= last) return {0, n};
  return {first, last};
}

class AttentionStep : public StepRunner {
 public:
  AttentionStep(const Step& step, AttentionParams p) : step_(step), p_(p) {
    // At least one micro-tile of rows (14), at most all of them.
    rows_per_block_ =
        std::min(p_.m, std::max<int64_t>(14, (int64_t{1} << 16) / std::max<int64_t>(1, p_.n)));
    blocks_ = (p_.m + rows_per_block_ - 1) / rows_per_block_;
  }

  Status Run(StepEnv& env) const override {
    const bool has_mask = p_.mask != 0;
    const float* q = static_cast<const float*>(env.data[step_.inputs[0]]);
    const float* k = static_cast<const float*>(env.data[step_.inputs[1]]);
    const float* mask = has_mask ? static_cast<const float*>(env.data[step_.inputs[2]]) : nullptr;
    const float* v = static_cast<const float*>(env.data[step_.inputs[has_mask ? 3 : 2]]);
    float* y = static_cast<float*>(env.data[step_.outputs[0]]);
    const int64_t tasks = p_.batch * blocks_;
    // Without the packed kernel, OpenBLAS's threads are not nested inside OpenMP's.
    if (tasks >= env.threads && env.threads > 1 && HasPackedSgemm()) {
#pragma omp parallel for num_threads(env.threads) schedule(static)
      for (int64_t t = 0; t < tasks; ++t) Block(q, k, mask, v, y, t / blocks_, t % blocks_, 1);
    } else {
      for (int64_t t = 0; t < tasks; ++t)
        Block(q, k, mask, v, y, t / blocks_, t % blocks_, env.threads);
    }
    return OkStatus();
  }

 private:
  // Query rows [r0, r0 + rows) of matrix b. Subnormal floats count as zero meanwhile (MXCSR's FTZ
  // and DAZ, restored after): the exponentials of scores far below their row's largest are
  // subnormal, and scaling or multiplying them would take a microcode assist each (the whole
  // step ran 6x slower); their contributions, below 2^-126 of the row's weight, are lost.
  void Block(const float* q, const float* k, const float* mask, const float* v, float* y, int64_t b,
             int64_t block, int threads) const {
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040);  // FTZ (bit 15) and DAZ (bit 6)
    thread_local AlignedFloats scores_buffer;
    const int64_t r0 = block * rows_per_block_;
    const int64_t rows = std::min(rows_per_block_, p_.m - r0);
    float* scores = scores_buffer.Get(rows_per_block_ * p_.n);
    const float* mask_rows =
        mask ? mask + (p_.mask == 2 ? b * p_.m * p_.n : 0) + r0 * p_.n : nullptr;
    // Scores of the live key columns [c0, c0 + n) only, row-major with leading dimension n.
    const auto [c0, c1] =
        mask_rows ? LiveColumns(mask_rows, rows, p_.n) : std::pair<int64_t, int64_t>{0, p_.n};
    const int64_t n = c1 - c0;
    SgemmProblem s;
    s.m = rows, s.n = n, s.k = p_.k;
    s.a = q + b * p_.stride_q + r0 * p_.k;
    s.b = k + b * p_.stride_k + (p_.trans_k ? c0 * p_.k : c0);
    s.ldb = p_.trans_k ? p_.k : p_.n;
    s.trans_b = p_.trans_k;
    s.c = scores;
    Product(s, threads);
    // Each row's exponentials stay unnormalized through the p v product: its output row (n_v
    // values, where the row has n) is scaled by 1 / sum instead.
    thread_local std::vector<float> inverse_sums;
    inverse_sums.resize(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) {
      float* row = scores + i * n;
      const float max = mask_rows ? AddRowMax(row, mask_rows + i * p_.n + c0, n) : RowMax(row, n);
      inverse_sums[i] = static_cast<float>(1.0 / SumExp(row, n, max, row));
    }
    SgemmProblem o;
    o.m = rows, o.n = p_.n_v, o.k = n;
    o.a = scores;
    o.b = v + b * p_.stride_v + c0 * p_.n_v;
    o.c = y + (b * p_.m + r0) * p_.n_v;
    Product(o, threads);
    for (int64_t i = 0; i < rows; ++i) {
      float* out = o.c + i * p_.n_v;
      for (int64_t j = 0; j < p_.n_v; ++j) out[j] *= inverse_sums[i];
    }
    _mm_setcsr(csr);
  }

  const Step& step_;
  AttentionParams p_;
  int64_t rows_per_block_ = 1, blocks_ = 1;
};

// a * b, false on overflow or a negative factor.
bool Mul(int64_t a, int64_t b, int64_t* out) {
  return a >= 0 && b >= 0 && !__builtin_mul_overflow(a, b, out);
}

// Whether a buffer of `elements` holds `batch` matrices of `size` elements `stride` apart.
bool Holds(int64_t elements, int64_t batch, int64_t stride, int64_t size) {
  int64_t last = 0, end = 0;
  return Mul(batch - 1, stride, &last) && !__builtin_add_overflow(last, size, &end) &&
         end <= elements;
}

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeAttentionStep(const Step& step, const Executable& exe) {
  AttentionParams p;
  for (auto [name, field] : std::vector<std::pair<const char*, int64_t*>>{{"m", &p.m},
                                                                          {"n", &p.n},
                                                                          {"k", &p.k},
                                                                          {"batch", &p.batch},
                                                                          {"stride_a", &p.stride_q},
                                                                          {"stride_b", &p.stride_k},
                                                                          {"n_v", &p.n_v},
                                                                          {"stride_v", &p.stride_v},
                                                                          {"mask", &p.mask}}) {
    KILN_ASSIGN_OR_RETURN(*field, step.attrs.GetInt(name));
  }
  KILN_ASSIGN_OR_RETURN(int64_t trans_k, step.attrs.GetInt("trans_b"));
  p.trans_k = trans_k != 0;
  const bool has_mask = p.mask != 0;
  auto bad = [&](const std::string& what) {
    return MakeError(ErrorCode::kInternal, "attention step of '", step.node.name, "': ", what);
  };
  if (p.mask < 0 || p.mask > 2 || step.inputs.size() != (has_mask ? 4u : 3u) ||
      step.outputs.size() != 1)
    return bad("takes q, k, [mask], v (mask 0, 1 or 2) and one output");
  for (int id : step.inputs)
    if (exe.buffers[id].type.dtype != f32 || !exe.buffers[id].layout.empty())
      return bad("operands must be dense f32");
  const TensorType& out = exe.buffers[step.outputs[0]].type;
  int64_t scores = 0, qs = 0, ks = 0, vs = 0, ys = 0, all_scores = 0;
  if (p.m < 1 || p.n < 1 || p.k < 0 || p.batch < 1 || p.n_v < 0 || !Mul(p.m, p.n, &scores) ||
      !Mul(p.m, p.k, &qs) || !Mul(p.n, p.k, &ks) || !Mul(p.n, p.n_v, &vs) ||
      !Mul(p.m, p.n_v, &ys) || !Mul(scores, p.batch, &all_scores))
    return bad("m, n, k, batch or n_v out of range");
  auto elements = [&](int i) { return exe.buffers[step.inputs[i]].type.shape.NumElements(); };
  int64_t y_elements = 0;
  if (out.dtype != f32 || !exe.buffers[step.outputs[0]].layout.empty() ||
      !Mul(ys, p.batch, &y_elements) || out.shape.NumElements() != y_elements)
    return bad("the output must hold batch x m x n_v f32");
  if (!Holds(elements(0), p.batch, p.stride_q, qs) ||
      !Holds(elements(1), p.batch, p.stride_k, ks) ||
      !Holds(elements(has_mask ? 3 : 2), p.batch, p.stride_v, vs) ||
      (has_mask && elements(2) != (p.mask == 1 ? scores : all_scores)))
    return bad("an operand does not hold the matrices its attributes reach");
  return std::unique_ptr<StepRunner>(new AttentionStep(step, p));
}

}  // namespace kiln::cpu
