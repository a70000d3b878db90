// Library step "reduce_sum": Sum, Mean and SumLike over f32 or f64, as one strided pass over the
// input accumulating in double (like the reference kernels), then scaled (1 for sums, 1/count for
// means: a mean over nothing is NaN) and rounded to the dtype. Attributes: "reduced" (one 0/1 per
// input dim: 1 = summed away) and "scale". The input may be in a blocked layout where the kept
// dims keep their order in memory (runtime/cpu/layouts.h): it is then summed in memory order. The
// output holds the kept dims in order (with or without size-1 dims for the reduced ones: the bytes
// are the same). Large inputs split their outermost dim over the session's threads, each
// accumulating into its own partial sums, added in thread order (so a result does not depend on
// scheduling); runs that are summed away use eight independent accumulators, so the loop
// vectorizes (f32 runs: AVX-512 widening adds where the CPU has it, 32 accumulators for a run
// summed away). Both reorder the reference's additions, in double: results agree within the dtype's
// rounding.
#include <immintrin.h>
#include <omp.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "runtime/cpu/layouts.h"
#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/reduction_groups.h"

namespace kiln::cpu {
namespace {

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

// acc[i] += x[i] for i < n, widened to double: 8 lanes a step where the CPU has AVX-512 (the
// portable loop compiles to 2).
__attribute__((target("avx512f"))) void AddWidenedAvx512(const float* x, double* acc, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm512_storeu_pd(acc + i, _mm512_add_pd(_mm512_loadu_pd(acc + i),
                                            _mm512_maskz_cvtps_pd(0xff, _mm256_loadu_ps(x + i))));
  for (; i < n; ++i) acc[i] += static_cast<double>(x[i]);
}

// The sum of x[i] for i < n in double, in 32 lanes (four of 8).
__attribute__((target("avx512f"))) double SumWidenedAvx512(const float* x, int64_t n) {
  __m512d lanes[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(),
                      _mm512_setzero_pd()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; ++l)
      lanes[l] =
          _mm512_add_pd(lanes[l], _mm512_maskz_cvtps_pd(0xff, _mm256_loadu_ps(x + i + 8 * l)));
  double s = 0;
  for (; i < n; ++i) s += static_cast<double>(x[i]);
  alignas(64) double sums[8];
  _mm512_store_pd(
      sums, _mm512_add_pd(_mm512_add_pd(lanes[0], lanes[1]), _mm512_add_pd(lanes[2], lanes[3])));
  for (double l : sums) s += l;
  return s;
}

class ReduceSumStep : public StepRunner {
 public:
  ReduceSumStep(int in, int out, DType dtype, std::vector<int64_t> sizes, std::vector<bool> reduced,
                double scale)
      : in_(in),
        out_(out),
        dtype_(dtype),
        sizes_(std::move(sizes)),
        reduced_(std::move(reduced)),
        scale_(scale) {
    const int groups = static_cast<int>(sizes_.size());
    in_strides_.assign(groups, 1);
    out_strides_.assign(groups, 0);
    int64_t out_stride = 1;
    for (int g = groups - 1; g >= 0; --g) {
      if (g + 1 < groups) in_strides_[g] = in_strides_[g + 1] * sizes_[g + 1];
      if (!reduced_[g]) {
        out_strides_[g] = out_stride;
        out_stride *= sizes_[g];
      }
    }
    out_count_ = out_stride;
  }

  Status Run(StepEnv& env) const override {
    if (dtype_ == f32)
      Accumulate(static_cast<const float*>(env.data[in_]), env.data[out_], env.threads);
    else
      Accumulate(static_cast<const double*>(env.data[in_]), env.data[out_], env.threads);
    return OkStatus();
  }

 private:
  template <typename T>
  void Accumulate(const T* x, void* out, int threads) const {
    bool empty = sizes_.empty();
    int64_t total = 1;
    for (int64_t s : sizes_) {
      empty = empty || s == 0;
      total *= s;
    }
    const int64_t outer = empty ? 0 : sizes_[0];
    const int parts = total >= (int64_t{1} << 16) && outer >= threads ? threads : 1;
    partial_.assign(static_cast<size_t>(parts), std::vector<double>());
#pragma omp parallel for num_threads(parts) schedule(static, 1)
    for (int part = 0; part < parts; ++part) {
      std::vector<double>& acc = partial_[part];
      acc.assign(static_cast<size_t>(out_count_), 0.0);
      for (int64_t i = outer * part / parts; i < outer * (part + 1) / parts; ++i)
        Walk(x, 1, i * in_strides_[0], i * out_strides_[0], acc.data());
    }
    T* y = static_cast<T*>(out);
    for (int64_t i = 0; i < out_count_; ++i) {
      double sum = 0;
      for (const std::vector<double>& acc : partial_) sum += acc[i];
      y[i] = static_cast<T>(sum * scale_);
    }
  }

  // Adds the block of x at `in` (dims g and after) into acc at `out`; g == size: one element.
  template <typename T>
  void Walk(const T* x, int g, int64_t in, int64_t out, double* acc) const {
    const int groups = static_cast<int>(sizes_.size());
    if (g == groups) {  // the innermost group was dim 0 alone
      acc[out] += static_cast<double>(x[in]);
      return;
    }
    const int64_t n = sizes_[g];
    if (g + 1 == groups) {  // contiguous innermost run
      if constexpr (std::is_same_v<T, float>) {
        if (HasAvx512()) {
          if (reduced_[g])
            acc[out] += SumWidenedAvx512(x + in, n);
          else
            AddWidenedAvx512(x + in, acc + out, n);
          return;
        }
      }
      if (reduced_[g]) {
        double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
          for (int l = 0; l < 8; ++l) lanes[l] += static_cast<double>(x[in + i + l]);
        double s = 0;
        for (; i < n; ++i) s += static_cast<double>(x[in + i]);
        for (double l : lanes) s += l;
        acc[out] += s;
      } else {
        for (int64_t i = 0; i < n; ++i) acc[out + i] += static_cast<double>(x[in + i]);
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      Walk(x, g + 1, in + i * in_strides_[g], out + i * out_strides_[g], acc);
  }

  int in_, out_;
  DType dtype_;
  std::vector<int64_t> sizes_;  // input dims, size-1 dims dropped and neighbours of a kind merged
  std::vector<bool> reduced_;
  double scale_;
  std::vector<int64_t> in_strides_, out_strides_;
  int64_t out_count_ = 1;
  mutable std::vector<std::vector<double>> partial_;  // per thread
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeReduceSumStep(const Step& step, const Executable& exe) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> reduced, step.attrs.GetInts("reduced"));
  KILN_ASSIGN_OR_RETURN(double scale, step.attrs.GetFloat("scale"));
  if (step.inputs.empty() || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, "reduce_sum: needs an input and one output");
  const TensorType& x = exe.buffers[step.inputs[0]].type;
  const TensorType& y = exe.buffers[step.outputs[0]].type;
  if (x.dtype != y.dtype || (x.dtype != f32 && x.dtype != f64) ||
      static_cast<int>(reduced.size()) != x.shape.rank())
    return MakeError(ErrorCode::kInternal, "reduce_sum: malformed step for ", x.ToString());
  // The input's dims in memory order (a blocked layout splits C; runtime/cpu/layouts.h allows
  // one only where the kept dims stay in their logical order).
  std::vector<int64_t> dims = x.shape.dims(), summed = reduced;
  if (const std::string& layout = exe.buffers[step.inputs[0]].layout; !layout.empty()) {
    const MemoryOrder order = LayoutMemoryOrder(layout, x.shape);
    dims = order.dims;
    summed.clear();
    for (int from : order.from) summed.push_back(reduced[from]);
  }
  ReductionGroups groups = GroupReduction(dims, summed);
  if (groups.kept != y.shape.NumElements())
    return MakeError(ErrorCode::kInternal, "reduce_sum: ", x.ToString(), " keeps ", groups.kept,
                     " elements but the output is ", y.ToString());
  return std::unique_ptr<StepRunner>(new ReduceSumStep(step.inputs[0], step.outputs[0], x.dtype,
                                                       std::move(groups.sizes),
                                                       std::move(groups.reduced), scale));
}

}  // namespace kiln::cpu
