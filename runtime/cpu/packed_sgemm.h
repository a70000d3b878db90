// kiln's own single-precision matrix multiply for x86-64 CPUs with AVX-512 (the "gemm" library
// step's f32 path where HasPackedSgemm()). op(b) is packed into 32-column panels once per call
// (once for a batch that repeats it, or never: PackedSgemmB keeps weights packed across calls);
// then units of work (rows by a run of panels, of any matrix of the batch) are split over the
// session's OpenMP threads: each packs its rows of op(a) per block of k and runs a
// register-blocked micro-kernel over them (14 x 32: 28 zmm accumulators, b's row loaded once per
// k, a's entries broadcast; 1, 2, 4 or 8 rows for products of fewer rows), in blocks sized for
// the CPU's caches (PackedSgemmKc()). A batched product (attention's Q K^T) is thus one parallel
// loop, not a loop of calls. A fused epilogue (bias, relu, tanh-approximated GELU) is applied to
// each panel of c while it is in cache. Sums run in k order within blocks of PackedSgemmKc();
// rounding differs from a naive loop's as any blocked gemm's does (the differential tests'
// tolerance).
#pragma once

#include <cstdint>

namespace kiln::cpu {

// One batched product c[i] = op(a[i]) x op(b[i]) (+ bias) for i < batch, c row-major m x n with
// leading dimension n (or c[i] += alpha op(a[i]) x op(b[i]) when `accumulate`); op(a) is m x k (a
// stored k x m, leading dimension m, when trans_a; m x k, leading dimension k, otherwise), op(b) k
// x n likewise (leading dimension `ldb` where it is set: a window of a wider matrix). a[i] starts
// at i * stride_a elements (0 repeats one matrix), b[i] at i * stride_b, c[i] at i * m * n.
struct SgemmProblem {
  int64_t m = 0, n = 0, k = 0, batch = 1, stride_a = 0, stride_b = 0;
  bool trans_a = false, trans_b = false;
  // b's leading dimension, at least op(b)'s stored row length (k when trans_b, else n); 0: that
  // length (b dense).
  int64_t ldb = 0;
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  const float* bias = nullptr;  // n values added to every row, or nullptr
  // op(b) packed beforehand (PackedSgemmB, from this problem's b), used for every matrix of the
  // batch instead of packing b; nullptr: b is packed by the call.
  const float* packed_b = nullptr;
  bool relu = false;
  bool gelu_tanh = false;  // GeluTanhValue (ir/ops/math.h), in f64 as the reference computes it
  // c += alpha * op(a) x op(b), adding to c's values (a weight updated by its gradient's product:
  // runtime/cpu/state_steps.cc); without a bias or an epilogue. Each block of k adds its partial
  // product, times alpha, to c. alpha 1 rounds as a plain product.
  bool accumulate = false;
  float alpha = 1.0f;
};

// b's leading dimension in `p` (p.ldb, or what a dense b has).
inline int64_t SgemmLdb(const SgemmProblem& p) { return p.ldb ? p.ldb : p.trans_b ? p.k : p.n; }

// The rows of k a block of the kernel covers on this CPU (chosen once per process).
int64_t PackedSgemmKc();

// True when this CPU runs the packed kernel (AVX-512F).
bool HasPackedSgemm();

// Computes `p` on up to `threads` threads. Requires HasPackedSgemm(). Products of at most four
// rows whose op(b) is not prepacked read it unpacked (runtime/cpu/few_rows_sgemm.h).
void PackedSgemm(const SgemmProblem& p, int threads);

// p's relu or tanh GELU epilogue on `rows` x `cols` of c (leading dimension p.n), in place.
void ApplySgemmEpilogue(const SgemmProblem& p, float* c, int64_t rows, int64_t cols);

// A 64-byte aligned float buffer that grows and is kept (the kernel's packing buffers).
class AlignedFloats {
 public:
  AlignedFloats() = default;
  ~AlignedFloats();
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  // At least `count` floats; the contents are kept only while the buffer does not grow.
  float* Get(int64_t count);

 private:
  float* data_ = nullptr;
  int64_t size_ = 0;
};

// Matrix 0 of a problem's op(b), packed once for many calls: weights that no run changes, or that
// change less often than they are read (the gemm step keys it by the variable's version).
class PackedSgemmB {
 public:
  // Packs p.b (its first matrix) as PackedSgemm would, on up to `threads` threads.
  void Pack(const SgemmProblem& p, int threads);
  const float* data() const { return data_; }
  // The bytes Pack keeps for `p`.
  static int64_t BytesFor(const SgemmProblem& p);

 private:
  AlignedFloats buffer_;
  const float* data_ = nullptr;
};

}  // namespace kiln::cpu
