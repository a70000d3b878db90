// The reference kernel of Unique (ir/ops/unique.h).
#include "ir/ops/unique.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

// x seen as `count` slices along one axis: slice s holds x[o, s, i] for every outer o and inner
// i, in that order.
struct Slices {
  const Tensor& x;
  int64_t outer, count, inner;
  bool integral;

  int64_t At(int64_t s, int64_t k) const { return ((k / inner) * count + s) * inner + k % inner; }
  int64_t size() const { return outer * inner; }

  // -1, 0 or 1 as slice a sorts before, equal to or after slice b (NaN after every number, equal
  // to NaN).
  int Compare(int64_t a, int64_t b) const {
    for (int64_t k = 0; k < size(); ++k) {
      const int64_t i = At(a, k), j = At(b, k);
      if (x.dtype() == u64) {
        const uint64_t u = x.data<uint64_t>()[i], v = x.data<uint64_t>()[j];
        if (u != v) return u < v ? -1 : 1;
        continue;
      }
      if (integral) {
        const int64_t u = x.GetInt(i), v = x.GetInt(j);
        if (u != v) return u < v ? -1 : 1;
        continue;
      }
      const double u = x.GetDouble(i), v = x.GetDouble(j);
      const bool un = std::isnan(u), vn = std::isnan(v);
      if (un || vn) {
        if (un != vn) return un ? 1 : -1;
        continue;
      }
      if (u != v) return u < v ? -1 : 1;
    }
    return 0;
  }
};

Status UniqueKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const AttrMap& a = ctx.attrs();
  const bool flatten = a.Find("flatten")->get<bool>();
  const bool sorted = a.Find("sorted")->get<bool>();
  int axis = 0;
  Slices s{x, 1, x.num_elements(), 1, IsInteger(x.dtype()) || x.dtype() == boolean};
  if (!flatten) {
    axis = *NormalizeAxis(a.Find("axis")->get<int64_t>(), x.rank());
    s.count = x.shape()[axis];
    s.outer = s.inner = 1;
    for (int d = 0; d < axis; ++d) s.outer *= x.shape()[d];
    for (int d = axis + 1; d < x.rank(); ++d) s.inner *= x.shape()[d];
  }
  // Slices in order (stable: equal slices keep their order of appearance), then the first of each
  // run of equal ones.
  std::vector<int64_t> order(s.count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t p, int64_t q) { return s.Compare(p, q) < 0; });
  std::vector<int64_t> firsts, counts, group_of(s.count);
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || s.Compare(order[i - 1], order[i]) != 0) {
      firsts.push_back(order[i]);
      counts.push_back(0);
    }
    ++counts.back();
    group_of[order[i]] = static_cast<int64_t>(firsts.size()) - 1;
  }
  // rank[g]: where group g goes in y (ascending, or by first appearance).
  const auto unique = static_cast<int64_t>(firsts.size());
  std::vector<int64_t> by_position(unique), rank(unique);
  std::iota(by_position.begin(), by_position.end(), 0);
  if (!sorted)
    std::sort(by_position.begin(), by_position.end(),
              [&](int64_t g, int64_t h) { return firsts[g] < firsts[h]; });
  for (int64_t p = 0; p < unique; ++p) rank[by_position[p]] = p;

  Shape y_shape{unique};
  if (!flatten) {
    y_shape = x.shape();
    y_shape.set_dim(axis, unique);
  }
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(x.dtype(), y_shape));
  Tensor indices(i64, Shape{unique}), inverse(i64, Shape{s.count}), count_of(i64, Shape{unique});
  const int64_t width = DTypeSize(x.dtype());
  const Slices out{y, s.outer, unique, s.inner, s.integral};
  for (int64_t p = 0; p < unique; ++p) {
    const int64_t g = by_position[p];
    indices.data<int64_t>()[p] = firsts[g];
    count_of.data<int64_t>()[p] = counts[g];
    for (int64_t k = 0; k < s.size(); ++k)
      std::memcpy(y.data<char>() + out.At(p, k) * width,
                  x.data<char>() + s.At(firsts[g], k) * width, width);
  }
  for (int64_t i = 0; i < s.count; ++i) inverse.data<int64_t>()[i] = rank[group_of[i]];
  ctx.set_output(0, std::move(y));
  ctx.set_output(1, std::move(indices));
  ctx.set_output(2, std::move(inverse));
  ctx.set_output(3, std::move(count_of));
  return OkStatus();
}

}  // namespace

void RegisterUniqueKernels(KernelRegistry& r) { r.Register("Unique", UniqueKernel); }

}  // namespace kiln::reference
