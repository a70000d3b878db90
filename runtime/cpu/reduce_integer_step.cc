// Library step "reduce_integer": Sum, Mean, Prod, Max and Min over an integer
// tensor, computed exactly as the reference kernels compute them: max and min in the dtype itself,
// sums and products in int64 with wrap-around, a mean truncated toward zero, each result converted
// to the dtype as Tensor::SetInt converts. Attributes: "reduced" (one 0/1 per input dim, as
// reduce_sum's) and "op" (sum, mean, prod, max, min). The compiler lowers only reductions over at
// least one element (over none, max, min and the integer mean are the reference's error).
// Threads split the output elements; a reduction to a few elements of one contiguous run splits
// the run instead. Contiguous runs fold sixteen lanes at a time (no list of indices, no widened
// copy: the data is read once, at its own width).
#include <omp.h>

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/reduction_groups.h"

namespace kiln::cpu {
namespace {

enum class Fold { kSum, kMean, kProd, kMax, kMin };

int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// The accumulator of one fold over T: A is T for max and min, int64 otherwise.
template <typename T, Fold F>
struct Accumulator {
  using A = std::conditional_t<F == Fold::kMax || F == Fold::kMin, T, int64_t>;
  static A Identity() {
    if constexpr (F == Fold::kProd) return 1;
    if constexpr (F == Fold::kMax) return std::numeric_limits<T>::lowest();
    if constexpr (F == Fold::kMin) return std::numeric_limits<T>::max();
    return 0;
  }
  static A Combine(A a, A b) {
    if constexpr (F == Fold::kMax) return a > b ? a : b;
    if constexpr (F == Fold::kMin) return a < b ? a : b;
    if constexpr (F == Fold::kProd) return WrapMul(a, b);
    return WrapAdd(a, b);
  }
  static A Of(T v) { return static_cast<A>(v); }
  // Folds n contiguous elements into acc, sixteen independent lanes at a time.
  static A Run(const T* x, int64_t n, A acc) {
    A lanes[16];
    std::fill(lanes, lanes + 16, Identity());
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      for (int l = 0; l < 16; ++l) lanes[l] = Combine(lanes[l], Of(x[i + l]));
    for (; i < n; ++i) acc = Combine(acc, Of(x[i]));
    for (A l : lanes) acc = Combine(acc, l);
    return acc;
  }
};

class ReduceIntegerStep : public StepRunner {
 public:
  ReduceIntegerStep(int in, int out, DType dtype, Fold fold, ReductionGroups groups)
      : in_(in), out_(out), dtype_(dtype), fold_(fold), groups_(std::move(groups)) {
    const int n = static_cast<int>(groups_.sizes.size());
    std::vector<int64_t> strides(n, 1);
    for (int g = n - 2; g >= 0; --g) strides[g] = strides[g + 1] * groups_.sizes[g + 1];
    for (int g = 0; g < n; ++g) {
      auto& [dims, dim_strides] = groups_.reduced[g] ? reduced_ : kept_;
      dims.push_back(groups_.sizes[g]);
      dim_strides.push_back(strides[g]);
    }
    for (int64_t s : reduced_.first) count_ *= s;
  }

  Status Run(StepEnv& env) const override {
    const void* x = env.data[in_];
    void* y = env.data[out_];
    switch (dtype_) {
      case DType::kI8:
        return ByFold(static_cast<const int8_t*>(x), static_cast<int8_t*>(y), env.threads);
      case DType::kU8:
        return ByFold(static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y), env.threads);
      case DType::kI32:
        return ByFold(static_cast<const int32_t*>(x), static_cast<int32_t*>(y), env.threads);
      case DType::kI64:
        return ByFold(static_cast<const int64_t*>(x), static_cast<int64_t*>(y), env.threads);
      case DType::kI16:
        return ByFold(static_cast<const int16_t*>(x), static_cast<int16_t*>(y), env.threads);
      case DType::kU16:
        return ByFold(static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), env.threads);
      case DType::kU32:
        return ByFold(static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y), env.threads);
      default:
        return MakeError(ErrorCode::kInternal, "reduce_integer over ", DTypeName(dtype_));
    }
  }

 private:
  using Dims = std::pair<std::vector<int64_t>, std::vector<int64_t>>;  // sizes, strides

  template <typename T>
  Status ByFold(const T* x, T* y, int threads) const {
    switch (fold_) {
      case Fold::kSum:
        return Reduce<T, Fold::kSum>(x, y, threads);
      case Fold::kMean:
        return Reduce<T, Fold::kMean>(x, y, threads);
      case Fold::kProd:
        return Reduce<T, Fold::kProd>(x, y, threads);
      case Fold::kMax:
        return Reduce<T, Fold::kMax>(x, y, threads);
      case Fold::kMin:
        return Reduce<T, Fold::kMin>(x, y, threads);
    }
    return OkStatus();
  }

  template <typename T, Fold F>
  Status Reduce(const T* x, T* y, int threads) const {
    using Acc = Accumulator<T, F>;
    using A = typename Acc::A;
    const int64_t outputs = groups_.kept;
    if (outputs == 0) return OkStatus();
    auto finish = [&](A acc) {
      if constexpr (F == Fold::kMean) acc = count_ > 0 ? acc / count_ : 0;
      return static_cast<T>(acc);
    };
    const bool contiguous = !groups_.reduced.empty() && groups_.reduced.back();
    const int64_t run = contiguous ? reduced_.first.back() : 1;
    // Few outputs, each one contiguous run: the threads split every run.
    if (contiguous && reduced_.first.size() == 1 && outputs < threads &&
        run >= (int64_t{1} << 16)) {
      for (int64_t o = 0; o < outputs; ++o) {
        const T* row = x + KeptOffset(o);
        std::vector<A> part(static_cast<size_t>(threads), Acc::Identity());
#pragma omp parallel for num_threads(threads) schedule(static, 1)
        for (int t = 0; t < threads; ++t)
          part[t] = Acc::Run(row + run * t / threads, run * (t + 1) / threads - run * t / threads,
                             Acc::Identity());
        A acc = Acc::Identity();
        for (A p : part) acc = Acc::Combine(acc, p);
        y[o] = finish(acc);
      }
      return OkStatus();
    }
    const int64_t work = outputs * count_;
#pragma omp parallel for num_threads(threads) schedule(static) if (work >= (int64_t{1} << 16))
    for (int64_t o = 0; o < outputs; ++o) {
      // The reduced elements of output o, the contiguous run innermost.
      const int outer = static_cast<int>(reduced_.first.size()) - (contiguous ? 1 : 0);
      std::vector<int64_t> at(static_cast<size_t>(outer), 0);
      int64_t offset = KeptOffset(o);
      A acc = Acc::Identity();
      for (int64_t done = 0; done < count_; done += run) {
        acc = contiguous ? Acc::Run(x + offset, run, acc) : Acc::Combine(acc, Acc::Of(x[offset]));
        for (int d = outer - 1; d >= 0; --d) {  // the next position of the outer reduced dims
          offset += reduced_.second[d];
          if (++at[d] < reduced_.first[d]) break;
          offset -= reduced_.second[d] * reduced_.first[d];
          at[d] = 0;
        }
      }
      y[o] = finish(acc);
    }
    return OkStatus();
  }

  // Where output o's elements start: its position in the kept dims (last fastest).
  int64_t KeptOffset(int64_t o) const {
    int64_t offset = 0;
    for (int d = static_cast<int>(kept_.first.size()) - 1; d >= 0; --d) {
      offset += (o % kept_.first[d]) * kept_.second[d];
      o /= kept_.first[d];
    }
    return offset;
  }

  int in_, out_;
  DType dtype_;
  Fold fold_;
  ReductionGroups groups_;
  Dims kept_, reduced_;
  int64_t count_ = 1;  // elements reduced into each output
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeReduceIntegerStep(const Step& step, const Executable& exe) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> reduced, step.attrs.GetInts("reduced"));
  KILN_ASSIGN_OR_RETURN(std::string op, step.attrs.GetString("op"));
  if (step.inputs.size() != 1 || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, "reduce_integer: needs one input and one output");
  const BufferDesc& x = exe.buffers[step.inputs[0]];
  const BufferDesc& y = exe.buffers[step.outputs[0]];
  const DType dtype = x.type.dtype;
  if (dtype != y.type.dtype || !IsInteger(dtype) ||
      static_cast<int>(reduced.size()) != x.type.shape.rank() || !x.layout.empty())
    return MakeError(ErrorCode::kInternal, "reduce_integer: malformed step for ",
                     x.type.ToString());
  static const std::map<std::string, Fold> kFolds = {{"sum", Fold::kSum},
                                                     {"mean", Fold::kMean},
                                                     {"prod", Fold::kProd},
                                                     {"max", Fold::kMax},
                                                     {"min", Fold::kMin}};
  auto fold = kFolds.find(op);
  if (fold == kFolds.end())
    return MakeError(ErrorCode::kInternal, "reduce_integer: unknown op '", op, "'");
  ReductionGroups groups = GroupReduction(x.type.shape.dims(), reduced);
  if (groups.kept != y.type.shape.NumElements())
    return MakeError(ErrorCode::kInternal, "reduce_integer: ", x.type.ToString(), " keeps ",
                     groups.kept, " elements but the output is ", y.type.ToString());
  int64_t count = 1;
  for (size_t g = 0; g < groups.sizes.size(); ++g)
    if (groups.reduced[g]) count *= groups.sizes[g];
  const bool needs_element = fold->second != Fold::kSum && fold->second != Fold::kProd;
  if (count == 0 && needs_element && groups.kept > 0)
    return MakeError(ErrorCode::kInternal, "reduce_integer: ", op, " over zero elements");
  return std::unique_ptr<StepRunner>(new ReduceIntegerStep(step.inputs[0], step.outputs[0], dtype,
                                                           fold->second, std::move(groups)));
}

}  // namespace kiln::cpu
