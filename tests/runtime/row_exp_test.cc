// The softmax row loops of runtime/cpu/row_exp.h against double-precision std::exp: every exp
// within 2 ulp over the range a softmax feeds it (x - max in [-110, 0], below which f32 is 0),
// the double sum within 1e-6, NaN carried, -inf giving 0, any length (vector body and tail); an
// added mask and the max in one pass as the two apart.
#include "runtime/cpu/row_exp.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace kiln::cpu {
namespace {

TEST_CASE("row max and sum of exponentials match double precision, any length", "[cpu]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-110.0f, 0.0f);
  for (int64_t n : {0, 1, 15, 16, 17, 100, 4096 + 5}) {
    INFO("n = " << n);
    std::vector<float> x(n), out(n);
    for (float& v : x) v = value(rng);
    if (n > 3) x[3] = -std::numeric_limits<float>::infinity();
    const float max = RowMax(x.data(), n);
    float want_max = -std::numeric_limits<float>::infinity();
    for (float v : x) want_max = std::max(want_max, v);
    CHECK(max == want_max);
    const float shift = 0.25f;
    const double sum = SumExp(x.data(), n, shift, out.data());
    double want_sum = 0;
    int far = 0;
    for (int64_t c = 0; c < n; ++c) {
      const double want = std::exp(static_cast<double>(x[c] - shift));
      want_sum += static_cast<float>(want);
      // f32's spacing at `want` (exp(-inf) = 0 has no exponent: the smallest spacing there).
      const double spacing = want > 0 ? std::ldexp(1.0, std::ilogb(want) - 23) : 0.0;
      const double ulp =
          std::max(spacing, static_cast<double>(std::numeric_limits<float>::denorm_min()));
      if (std::fabs(out[c] - want) > 2 * ulp) ++far;
    }
    CHECK(far == 0);
    CHECK(sum == Approx(want_sum).epsilon(1e-6).margin(1e-30));
    CHECK(SumExp(x.data(), n, shift, nullptr) == sum);
  }
  // NaN: skipped by the max, carried by the sum (in the vector body and in the tail).
  for (int64_t at : {2, 17}) {
    std::vector<float> x(18, -1.0f);
    x[at] = std::numeric_limits<float>::quiet_NaN();
    CHECK(RowMax(x.data(), 18) == -1.0f);
    CHECK(std::isnan(SumExp(x.data(), 18, 0.0f, nullptr)));
  }
}

TEST_CASE("an added mask and the row's max in one pass match the two apart, any length", "[cpu]") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (int64_t n : {0, 1, 15, 16, 17, 100, 4096 + 5}) {
    INFO("n = " << n);
    std::vector<float> x(n), mask(n);
    for (float& v : x) v = value(rng);
    for (float& v : mask) v = value(rng);
    for (int64_t c = 5; c < n; c += 7) mask[c] = -kInf;
    if (n > 2) x[n - 2] = std::numeric_limits<float>::quiet_NaN();  // in the tail or the body
    std::vector<float> want = x;
    for (int64_t c = 0; c < n; ++c) want[c] += mask[c];
    const float max = AddRowMax(x.data(), mask.data(), n);
    CHECK(max == RowMax(want.data(), n));
    for (int64_t c = 0; c < n; ++c)
      CHECK((x[c] == want[c] || (std::isnan(x[c]) && std::isnan(want[c]))));
  }
}

}  // namespace
}  // namespace kiln::cpu
