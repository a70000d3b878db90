#include "ir/random.h"

#include <algorithm>
#include <cmath>

namespace kiln {
namespace {
uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t RandomBits(uint64_t seed, uint64_t counter, uint64_t index) {
  return SplitMix64(SplitMix64(SplitMix64(seed) ^ counter) ^ index);
}

double RandomUniform(uint64_t seed, uint64_t counter, uint64_t index) {
  return static_cast<double>(RandomBits(seed, counter, index) >> 11) * 0x1.0p-53;
}

double RandomNormal(uint64_t seed, uint64_t counter, uint64_t index) {
  double u1 = RandomUniform(seed, counter, 2 * index);
  double u2 = RandomUniform(seed, counter, 2 * index + 1);
  if (u1 <= 0.0) u1 = 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

Tensor RandomTensor(DType dtype, const Shape& shape, int64_t classes, uint64_t seed,
                    uint64_t counter) {
  if (dtype == seq) return *Tensor::Sequence(f32, {});
  if (dtype == optional) return Tensor::Optional(f32);
  Tensor t(dtype, shape);
  int64_t n = t.num_elements();
  if (dtype == f32) {
    float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(RandomNormal(seed, counter, i));
  } else if (IsFloat(dtype)) {
    for (int64_t i = 0; i < n; ++i) t.SetDouble(i, RandomNormal(seed, counter, i));
  } else {
    uint64_t k = dtype == boolean ? 2 : static_cast<uint64_t>(std::max<int64_t>(1, classes));
    for (int64_t i = 0; i < n; ++i)
      t.SetInt(i, static_cast<int64_t>(RandomBits(seed, counter, i) % k));
  }
  return t;
}

}  // namespace kiln
