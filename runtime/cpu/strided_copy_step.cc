// Library step "strided_copy" (compiler/copy_lowering.h: Slice, SliceGrad, constant Pad): fills
// the destination with fill_value when asked, then copies the region `dims` from the source view
// (src_offset, src_strides) to the destination view (dst_offset, dst_strides), element by element
// of any dtype, a contiguous innermost run as one memcpy. Dims of extent 1 are dropped and dims
// both views walk as one merged at load. The outer positions (or, when there are fewer rows than
// threads, pieces of each row) are split over the session's threads. At load every element the
// views reach is checked to lie in its buffer (runtime/cpu/strided_region.h).
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/strided_region.h"

namespace kiln::cpu {
namespace {

class StridedCopyStep : public StepRunner {
 public:
  StridedCopyStep(const Step& step, std::vector<int64_t> dims, StridedView src, StridedView dst,
                  std::vector<char> fill, int64_t dst_elements, int element)
      : step_(step),
        dims_(std::move(dims)),
        src_(std::move(src)),
        dst_(std::move(dst)),
        fill_(std::move(fill)),
        dst_elements_(dst_elements),
        element_(element) {}

  Status Run(StepEnv& env) const override {
    const char* src = static_cast<const char*>(env.data[step_.inputs[0]]);
    char* dst = static_cast<char*>(env.data[step_.outputs[0]]);
    if (!fill_.empty()) Fill(dst, env.threads);
    int64_t count = 1;
    for (int64_t d : dims_) count *= d;
    if (count == 0) return OkStatus();
    const int rank = static_cast<int>(dims_.size());
    const int64_t inner = rank == 0 ? 1 : dims_.back();
    const int64_t rows = count / inner;
    if (rows < env.threads) {  // few long rows (a strided gather along one dim): split each
      const int64_t pieces = std::min<int64_t>(env.threads, inner / 4096 + 1);
#pragma omp parallel for num_threads(env.threads) schedule(static) if (count > (1 << 15))
      for (int64_t task = 0; task < rows * pieces; ++task) {
        const int64_t row = task / pieces, piece = task % pieces;
        Position at = PositionOf(row);
        CopyRun(dst, src, at.t, at.s, inner * piece / pieces, inner * (piece + 1) / pieces);
      }
      return OkStatus();
    }
    const int threads = count > (1 << 15) ? env.threads : 1;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
      // Each thread walks its block of rows with an odometer over the outer dims.
      const int64_t parts = omp_get_num_threads(), part = omp_get_thread_num();
      const int64_t first = rows * part / parts, last = rows * (part + 1) / parts;
      Position at = PositionOf(first);
      for (int64_t row = first; row < last; ++row) {
        CopyRun(dst, src, at.t, at.s, 0, inner);
        for (int d = rank - 2; d >= 0; --d) {  // the next row
          at.s += src_.strides[d];
          at.t += dst_.strides[d];
          if (++at.index[d] < dims_[d]) break;
          at.s -= dims_[d] * src_.strides[d];
          at.t -= dims_[d] * dst_.strides[d];
          at.index[d] = 0;
        }
      }
    }
    return OkStatus();
  }

 private:
  // A row's index in the outer dims and its first element's offsets in the two views.
  struct Position {
    std::vector<int64_t> index;
    int64_t s = 0, t = 0;
  };
  Position PositionOf(int64_t row) const {
    Position at{std::vector<int64_t>(dims_.size(), 0), src_.offset, dst_.offset};
    for (int d = static_cast<int>(dims_.size()) - 2; d >= 0; --d) {
      at.index[d] = row % dims_[d];
      row /= dims_[d];
      at.s += at.index[d] * src_.strides[d];
      at.t += at.index[d] * dst_.strides[d];
    }
    return at;
  }

  // Elements [begin, end) of the innermost dim of the row at element offsets s (source) and t.
  void CopyRun(char* dst, const char* src, int64_t t, int64_t s, int64_t begin, int64_t end) const {
    const int64_t ss = dims_.empty() ? 0 : src_.strides.back();
    const int64_t ts = dims_.empty() ? 0 : dst_.strides.back();
    const int64_t e = element_;
    if (ss == 1 && ts == 1 && (end - begin) * e >= 64) {
      std::memcpy(dst + (t + begin) * e, src + (s + begin) * e,
                  static_cast<size_t>((end - begin) * e));
      return;
    }
    switch (e) {  // typed steps for the common widths: one load and store per element
      case 2:
        return Strided<uint16_t>(dst, src, t, s, ts, ss, begin, end);
      case 4:
        return Strided<uint32_t>(dst, src, t, s, ts, ss, begin, end);
      case 8:
        return Strided<uint64_t>(dst, src, t, s, ts, ss, begin, end);
      default:
        if (ss == 1 && ts == 1) {
          std::memcpy(dst + (t + begin) * e, src + (s + begin) * e,
                      static_cast<size_t>((end - begin) * e));
          return;
        }
        for (int64_t i = begin; i < end; ++i)
          std::memcpy(dst + (t + i * ts) * e, src + (s + i * ss) * e, static_cast<size_t>(e));
    }
  }
  template <typename T>
  static void Strided(char* dst, const char* src, int64_t t, int64_t s, int64_t ts, int64_t ss,
                      int64_t begin, int64_t end) {
    T* to = reinterpret_cast<T*>(dst) + t;
    const T* from = reinterpret_cast<const T*>(src) + s;
    for (int64_t i = begin; i < end; ++i) to[i * ts] = from[i * ss];
  }

  // The whole destination set to the fill value, in pieces over the threads when it is large
  // (one thread's memset reaches about half of what two do).
  void Fill(char* dst, int threads) const {
    const bool zero = std::all_of(fill_.begin(), fill_.end(), [](char c) { return c == 0; });
    const int parts = dst_elements_ * element_ >= (int64_t{1} << 20) ? threads : 1;
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
    for (int part = 0; part < parts; ++part) {
      const int64_t first = dst_elements_ * part / parts, last = dst_elements_ * (part + 1) / parts;
      if (zero) {
        std::memset(dst + first * element_, 0, static_cast<size_t>((last - first) * element_));
        continue;
      }
      for (int64_t i = first; i < last; ++i)
        std::memcpy(dst + i * element_, fill_.data(), static_cast<size_t>(element_));
    }
  }

  const Step& step_;
  std::vector<int64_t> dims_;
  StridedView src_, dst_;
  std::vector<char> fill_;  // one element of the fill value; empty: no fill
  int64_t dst_elements_;
  int element_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeStridedCopyStep(const Step& step, const Executable& exe) {
  if (step.inputs.empty() || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, "strided_copy reads input 0 and writes one output");
  KILN_ASSIGN_OR_RETURN(int64_t fill, step.attrs.GetInt("fill"));
  KILN_ASSIGN_OR_RETURN(double fill_value, step.attrs.GetFloat("fill_value"));
  const TensorType& from = exe.buffers[step.inputs[0]].type;
  const TensorType& to = exe.buffers[step.outputs[0]].type;
  if (from.dtype != to.dtype)
    return MakeError(ErrorCode::kInternal, "strided_copy from ", from.ToString(), " to ",
                     to.ToString(), ": the dtypes differ");
  KILN_ASSIGN_OR_RETURN(StridedRegion region,
                        ReadStridedRegion(step, from.shape.NumElements(), to.shape.NumElements()));
  std::vector<char> fill_bytes;
  if (fill) {
    Tensor one = Tensor::FromDoubles(to.dtype, Shape{1}, {fill_value});
    const char* bytes = static_cast<const char*>(one.raw_data());
    fill_bytes.assign(bytes, bytes + DTypeSize(to.dtype));
  }
  return std::unique_ptr<StepRunner>(new StridedCopyStep(
      step, std::move(region.dims), std::move(region.src), std::move(region.dst),
      std::move(fill_bytes), to.shape.NumElements(), DTypeSize(to.dtype)));
}

}  // namespace kiln::cpu
