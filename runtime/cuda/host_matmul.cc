// RunMatmulOnHost (matmul_call.h): cuBLASLt's matmul semantics, computed plainly on the host for
// the simulated device. Column by column of D: an f32 accumulator per row, one k-step at a time.
#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "ir/ops/math.h"
#include "runtime/cpu/parallel_ranges.h"
#include "runtime/cuda/host_elements.h"
#include "runtime/cuda/matmul_call.h"

namespace kiln::cuda {
namespace {

// `v` rounded to TF32 (10 mantissa bits): to nearest, ties away from zero; inf and NaN kept.
float ToTf32(float v) {
  uint32_t bits = std::bit_cast<uint32_t>(v);
  if ((bits & 0x7f800000u) == 0x7f800000u) return v;
  bits = (bits + 0x1000u) & 0xffffe000u;
  return std::bit_cast<float>(bits);
}

// Element (row, col) of the stored column-major matrix at `base`, seen through op(), as the
// multiplier takes it (TF32-rounded when `tf32`).
float OpElement(const void* base, DType t, bool trans, int64_t ld, int64_t row, int64_t col,
                bool tf32) {
  const float v =
      trans ? LoadElement(base, col + row * ld, t) : LoadElement(base, row + col * ld, t);
  return tf32 ? ToTf32(v) : v;
}

}  // namespace

void RunMatmulOnHost(const MatmulCall& c, const void* a, const void* b, const void* bias, void* d,
                     int threads) {
  const int64_t ab_size = DTypeSize(c.ab_type);
  const int64_t d_size = DTypeSize(c.d_type);
  const int64_t columns = c.batch * c.n;  // of every D_i, in turn
  cpu::ForEachRange(columns, columns * c.m * c.k, threads, [&](int64_t begin, int64_t end) {
    std::vector<float> acc(c.m);
    for (int64_t column = begin; column < end; ++column) {
      const int64_t i = column / c.n, j = column % c.n;
      const char* a_i = static_cast<const char*>(a) + i * c.stride_a * ab_size;
      const char* b_i = static_cast<const char*>(b) + i * c.stride_b * ab_size;
      char* d_i = static_cast<char*>(d) + i * c.stride_d * d_size;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t p = 0; p < c.k; ++p) {
        const float bv = OpElement(b_i, c.ab_type, c.trans_b, c.ldb, p, j, c.tf32);
        for (int64_t r = 0; r < c.m; ++r)
          acc[r] += OpElement(a_i, c.ab_type, c.trans_a, c.lda, r, p, c.tf32) * bv;
      }
      for (int64_t r = 0; r < c.m; ++r) {
        float v = c.alpha * acc[r];
        if (c.beta != 0.0f) v += c.beta * LoadElement(d_i, r + j * c.ldd, c.d_type);
        if (c.bias) v += LoadElement(bias, r, c.d_type);
        if (c.activation == MatmulCall::Activation::kRelu) v = std::max(v, 0.0f);
        if (c.activation == MatmulCall::Activation::kGeluTanh)
          v = static_cast<float>(GeluTanhValue(static_cast<double>(v)));
        StoreElement(d_i, r + j * c.ldd, c.d_type, v);
      }
    }
  });
}

}  // namespace kiln::cuda
