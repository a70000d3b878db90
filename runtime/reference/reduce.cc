// Reference kernels of op family "reduce" (see ir/ops/reduce.h for the semantics).
#include "ir/ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "runtime/reference/kernel.h"
#include "runtime/reference/loops.h"
#include "runtime/reference/scalar_math.h"

namespace kiln::reference {
namespace {

// The input offsets that reduce into one output element, visited in row-major order of the reduced
// coordinates (for one axis: position k along the axis). They are computed as they are visited: a
// list of them would take 8 bytes per input element.
class ReducedElements {
 public:
  ReducedElements(int64_t base, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& strides, int64_t count)
      : base_(base), dims_(dims), strides_(strides), count_(count) {}
  int64_t size() const { return count_; }
  // Calls fn(k, offset) for the k-th element, k = 0, 1, ...
  template <typename Fn>
  void ForEach(Fn fn) const {
    if (count_ == 0) return;
    std::vector<int64_t> at(dims_.size(), 0);
    int64_t offset = base_;
    for (int64_t k = 0; k < count_; ++k) {
      fn(k, offset);
      for (int d = static_cast<int>(dims_.size()) - 1; d >= 0; --d) {  // the next coordinate
        offset += strides_[d];
        if (++at[d] < dims_[d]) break;
        offset -= strides_[d] * dims_[d];
        at[d] = 0;
      }
    }
  }

 private:
  int64_t base_;
  const std::vector<int64_t>& dims_;
  const std::vector<int64_t>& strides_;
  int64_t count_;
};

// Called once per output element `out` (row-major) with the input elements that reduce into it.
using ReductionFn = std::function<Status(int64_t out, const ReducedElements& in)>;

// The shared "reduce over axes" loop: splits the input's dims into kept and reduced ones (`axes`
// sorted, in range) and visits every output element with its reduced input elements. The output's
// row-major order is that of the kept dims, with or without keepdims.
Status ForEachReduction(const Shape& in, const std::vector<int>& axes, const ReductionFn& fn) {
  std::vector<int64_t> strides = RowMajorStrides(in);
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  int64_t num_out = 1, num_red = 1;
  for (int i = 0; i < in.rank(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    (reduced ? red_dims : kept_dims).push_back(in[i]);
    (reduced ? red_strides : kept_strides).push_back(strides[i]);
    (reduced ? num_red : num_out) *= in[i];
  }
  for (int64_t o = 0; o < num_out; ++o) {
    int64_t base = 0, flat = o;  // the output's offset through the kept dims (last dim fastest)
    for (int i = static_cast<int>(kept_dims.size()) - 1; i >= 0; --i) {
      base += (flat % kept_dims[i]) * kept_strides[i];
      flat /= kept_dims[i];
    }
    KILN_RETURN_IF_ERROR(fn(o, ReducedElements(base, red_dims, red_strides, num_red)));
  }
  return OkStatus();
}

std::vector<int> ReducedAxes(const KernelContext& ctx) {
  const AttrValue* axis = ctx.attrs().Find("axis");
  std::vector<int64_t> attr = axis ? std::vector<int64_t>{axis->get<int64_t>()}
                                   : ctx.attrs().Find("axes")->get<std::vector<int64_t>>();
  Result<std::vector<int>> axes = NormalizeReduceAxes(attr, ctx.input(0).rank());
  KILN_CHECK(axes.ok());  // inference validated the attribute
  return *axes;
}

// One reduction: a fold from an identity, in double for floats and int64 for integers.
struct Fold {
  double float_init;
  std::function<double(double, double)> float_fn;
  int64_t int_init;
  std::function<int64_t(int64_t, int64_t)> int_fn;
  bool needs_element;  // no value over zero elements
  bool mean;           // divide by the count
};

KernelFn FoldKernel(Fold f) {
  return [f](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    bool integral = !IsFloat(x.dtype());
    return ForEachReduction(
        x.shape(), ReducedAxes(ctx), [&](int64_t o, const ReducedElements& in) -> Status {
          int64_t n = in.size();
          if (n == 0 && (f.needs_element || (f.mean && integral)))
            return ctx.Fail("reduces over zero elements (input ", x.shape().ToString(), ")");
          if (integral) {
            int64_t acc = f.int_init;
            in.ForEach([&](int64_t, int64_t i) { acc = f.int_fn(acc, x.GetInt(i)); });
            y.SetInt(o, f.mean ? acc / n : acc);
          } else {
            double acc = f.float_init;
            in.ForEach([&](int64_t, int64_t i) { acc = f.float_fn(acc, x.GetDouble(i)); });
            y.SetDouble(o, f.mean ? acc / static_cast<double>(n) : acc);
          }
          return OkStatus();
        });
  };
}

// ArgMax (sign +1) or ArgMin (sign -1). NaN counts as the extreme, as in numpy.
KernelFn ArgKernel(int sign) {
  return [sign](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    bool last = ctx.attrs().Find("select_last_index")->get<bool>();
    bool integral = !IsFloat(x.dtype());
    return ForEachReduction(
        x.shape(), ReducedAxes(ctx), [&](int64_t o, const ReducedElements& in) -> Status {
          if (in.size() == 0)
            return ctx.Fail("reduces over zero elements (input ", x.shape().ToString(), ")");
          int64_t best = 0, best_int = 0;
          double best_float = 0;
          in.ForEach([&](int64_t k, int64_t i) {
            bool better, equal;
            if (integral) {
              const int64_t a = x.GetInt(i), b = best_int;
              better = sign > 0 ? a > b : a < b;
              equal = a == b;
              if (k == 0 || better || (last && equal)) best = k, best_int = a;
            } else {
              const double a = x.GetDouble(i), b = best_float;
              bool a_nan = std::isnan(a), b_nan = std::isnan(b);
              better = b_nan ? false : a_nan || (sign > 0 ? a > b : a < b);
              equal = (a_nan && b_nan) || a == b;
              if (k == 0 || better || (last && equal)) best = k, best_float = a;
            }
          });
          y.SetInt(o, best);
          return OkStatus();
        });
  };
}

// TopK along one axis: each row's order by value (ties by index, NaN above every number), the
// first k of it; values copied bytewise, so every dtype keeps its bits.
Status TopKKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t k = ctx.attrs().Find("k")->get<int64_t>();
  const bool largest = ctx.attrs().Find("largest")->get<bool>();
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes,
                        NormalizeReduceAxes({ctx.attrs().Find("axis")->get<int64_t>()}, x.rank()));
  const std::vector<int64_t>& dims = x.shape().dims();
  const size_t d = static_cast<size_t>(axes.at(0));
  const int64_t n = dims[d];
  if (k < 0 || k > n)
    return ctx.Fail("k is ", k, " for ", n, " elements along axis ", d, " of ", x.Summary(0));
  Shape out_shape = x.shape();
  out_shape.set_dim(static_cast<int>(d), k);
  for (int i = 0; i < 2; ++i) {
    if (ctx.output(i).valid()) continue;
    KILN_ASSIGN_OR_RETURN(ctx.output(i), Tensor::Create(i == 0 ? x.dtype() : i64, out_shape));
  }
  Tensor& values = ctx.output(0);
  Tensor& indices = ctx.output(1);
  int64_t outer = 1, inner = 1;
  for (size_t a = 0; a < d; ++a) outer *= dims[a];
  for (size_t a = d + 1; a < dims.size(); ++a) inner *= dims[a];
  const bool integral = !IsFloat(x.dtype());
  const size_t bytes = static_cast<size_t>(DTypeSize(x.dtype()));
  const auto* from = static_cast<const uint8_t*>(x.raw_data());
  auto* to = static_cast<uint8_t*>(values.raw_data());
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      auto before = [&](int64_t a, int64_t b) {  // a is taken before b
        if (integral) {
          const int64_t va = x.GetInt(base + a * inner), vb = x.GetInt(base + b * inner);
          if (va != vb) return largest ? va > vb : va < vb;
          return a < b;
        }
        const double va = x.GetDouble(base + a * inner), vb = x.GetDouble(base + b * inner);
        const bool a_nan = std::isnan(va), b_nan = std::isnan(vb);
        if (a_nan != b_nan) return largest ? a_nan : b_nan;
        if (!a_nan && va != vb) return largest ? va > vb : va < vb;
        return a < b;
      };
      for (int64_t j = 0; j < n; ++j) order[static_cast<size_t>(j)] = j;
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = o * k * inner + j * inner + i;
        const int64_t src = base + order[static_cast<size_t>(j)] * inner;
        std::memcpy(to + at * bytes, from + src * bytes, bytes);
        indices.SetInt(at, order[static_cast<size_t>(j)]);
      }
    }
  return OkStatus();
}

// Sums x into y (already zeroed, shape of `like`) through the broadcast index map.
Status SumLikeKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (BroadcastShapes(y.shape(), x.shape()).value() != x.shape())
    return ctx.Fail("cannot sum ", x.shape().ToString(), " down to ", y.shape().ToString());
  BroadcastIndex to_y(x.shape(), y.shape());
  bool integral = !IsFloat(x.dtype());
  std::vector<double> fsum(integral ? 0 : y.num_elements(), 0.0);
  std::vector<int64_t> isum(integral ? y.num_elements() : 0, 0);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (integral)
      isum[to_y(i)] = WrapAdd(isum[to_y(i)], x.GetInt(i));
    else
      fsum[to_y(i)] += x.GetDouble(i);
  }
  for (int64_t j = 0; j < y.num_elements(); ++j) {
    if (integral)
      y.SetInt(j, isum[j]);
    else
      y.SetDouble(j, fsum[j]);
  }
  return OkStatus();
}

}  // namespace

void RegisterReduceKernels(KernelRegistry& r) {
  r.Register("SumLike", SumLikeKernel);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr int64_t kMinInt = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
  auto add = [](double a, double b) { return a + b; };
  auto mul = [](double a, double b) { return a * b; };
  auto imax = [](int64_t a, int64_t b) { return std::max(a, b); };
  auto imin = [](int64_t a, int64_t b) { return std::min(a, b); };
  r.Register("Sum", FoldKernel({0.0, add, 0, WrapAdd, false, false}));
  r.Register("Mean", FoldKernel({0.0, add, 0, WrapAdd, false, true}));
  r.Register("Prod", FoldKernel({1.0, mul, 1, WrapMul, false, false}));
  r.Register("Max", FoldKernel({-kInf, NanMax, kMinInt, imax, true, false}));
  r.Register("Min", FoldKernel({kInf, NanMin, kMaxInt, imin, true, false}));
  r.Register("ArgMax", ArgKernel(+1));
  r.Register("ArgMin", ArgKernel(-1));
  r.Register("TopK", TopKKernel);
}

}  // namespace kiln::reference
