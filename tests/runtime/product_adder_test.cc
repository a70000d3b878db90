// runtime/cpu/product_adder.h: c += alpha op(a) op(b) for f32 and bf16 operands, every transpose,
// against a float64 sum; the bf16 operands both through the way this CPU takes (oneDNN's native
// matmul where it has one) and widened to f32, which other CPUs take.
#include "runtime/cpu/product_adder.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

namespace kiln::cpu {
namespace {

std::vector<float> Random(int64_t count, uint32_t seed) {
  std::vector<float> v(count);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    // Multiples of 1/64 in [-2, 2]: exact in bf16.
    x = static_cast<float>(static_cast<int32_t>(seed >> 8) % 257) / 64.0f;
  }
  return v;
}

std::vector<uint16_t> ToBf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = FloatToBFloat16(v[i]);
  return out;
}

// The largest error of `adder` against c_start + alpha a b in float64, in units of f32 sums of k
// products of magnitude <= 16.
double WorstError(const ProductAdder& adder, const GemmParams& p, float alpha, int threads) {
  const std::vector<float> a = Random(p.m * p.k, 1), b = Random(p.k * p.n, 2);
  const std::vector<float> c_start = Random(p.m * p.n, 3);
  const std::vector<uint16_t> a16 = ToBf16(a), b16 = ToBf16(b);
  std::vector<float> c = c_start;
  const bool narrow = p.dtype == bf16;
  REQUIRE(adder
              .Add(narrow ? static_cast<const void*>(a16.data()) : a.data(),
                   narrow ? static_cast<const void*>(b16.data()) : b.data(), c.data(), alpha,
                   threads)
              .ok());
  double worst = 0;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = 0;
      for (int64_t q = 0; q < p.k; ++q)
        sum += static_cast<double>(p.trans_a ? a[q * p.m + i] : a[i * p.k + q]) *
               (p.trans_b ? b[j * p.k + q] : b[q * p.n + j]);
      const double want = c_start[i * p.n + j] + alpha * sum;
      worst = std::max(worst, std::abs(c[i * p.n + j] - want) /
                                  (1e-5 * (16.0 * static_cast<double>(p.k) + 1.0)));
    }
  return worst;
}

TEST_CASE("a product is added into f32 weights for f32 and bf16 operands, native and widened",
          "[cpu][training]") {
  const DType dtype = GENERATE(f32, bf16);
  const int trans = GENERATE(0, 1, 2, 3);
  const auto [m, n, k] = GENERATE(std::tuple{5, 7, 3}, std::tuple{130, 70, 450});
  GemmParams p;
  p.m = m, p.n = n, p.k = k;
  p.trans_a = (trans & 1) != 0, p.trans_b = (trans & 2) != 0;
  p.dtype = dtype;
  p.out_dtype = f32;
  INFO(DTypeName(dtype) << " " << m << " x " << n << " x " << k << " trans " << trans);
  Step step;
  step.node.name = "update";
  Result<std::unique_ptr<ProductAdder>> adder = MakeProductAdder(step, p);
  REQUIRE(adder.ok());
  CHECK(WorstError(**adder, p, -0.125f, 2) <= 1.0);
  if (dtype != bf16) return;
  GemmParams wide = p;
  wide.dtype = f32;
  Result<std::unique_ptr<ProductAdder>> f32_adder = MakeProductAdder(step, wide);
  REQUIRE(f32_adder.ok());
  std::unique_ptr<ProductAdder> widened = MakeWidenedProductAdder(p, std::move(*f32_adder));
  CHECK(WorstError(*widened, p, 0.5f, 1) <= 1.0);
}

TEST_CASE("a product that is not one f32 or bf16 pair into f32 is refused", "[cpu][training]") {
  Step step;
  step.node.name = "update";
  GemmParams p;
  p.m = p.n = p.k = 4;
  p.batch = 2;
  Result<std::unique_ptr<ProductAdder>> batched = MakeProductAdder(step, p);
  REQUIRE_FALSE(batched.ok());
  CHECK_THAT(batched.error().message(), Catch::Contains("update"));
  p.batch = 1;
  p.dtype = f64;
  p.out_dtype = f64;
  CHECK_FALSE(MakeProductAdder(step, p).ok());
  p.dtype = bf16;
  p.out_dtype = bf16;
  CHECK_FALSE(MakeProductAdder(step, p).ok());
}

}  // namespace
}  // namespace kiln::cpu
