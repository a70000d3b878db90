// Library step "strided_copy" (compiler/copy_lowering.h: Slice, SliceGrad, constant Pad): fills
// the destination with fill_value when asked, then copies the region `dims` from the source view
// (src_offset, src_strides) to the destination view (dst_offset, dst_strides), element by element
// of any dtype, a contiguous innermost run as one memcpy. The outer positions are split over the
// session's threads. At load every element the views reach is checked to lie in its buffer.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/library_steps.h"

namespace kiln::cpu {
namespace {

struct View {
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

class StridedCopyStep : public StepRunner {
 public:
  StridedCopyStep(const Step& step, std::vector<int64_t> dims, View src, View dst,
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
    if (!fill_.empty()) Fill(dst);
    int64_t count = 1;
    for (int64_t d : dims_) count *= d;
    if (count == 0) return OkStatus();
    const int rank = static_cast<int>(dims_.size());
    const int64_t inner = rank == 0 ? 1 : dims_.back();
    const bool contiguous = rank == 0 || (src_.strides.back() == 1 && dst_.strides.back() == 1);
    const int64_t rows = count / inner;
    const int64_t e = element_;
#pragma omp parallel for num_threads(env.threads) schedule(static) if (count > (1 << 15))
    for (int64_t row = 0; row < rows; ++row) {
      // The row's position in the outer dims, as source and destination offsets.
      int64_t s = src_.offset, t = dst_.offset, rest = row;
      for (int d = rank - 2; d >= 0; --d) {
        const int64_t i = rest % dims_[d];
        rest /= dims_[d];
        s += i * src_.strides[d];
        t += i * dst_.strides[d];
      }
      if (contiguous) {
        std::memcpy(dst + t * e, src + s * e, static_cast<size_t>(inner * e));
        continue;
      }
      const int64_t ss = rank == 0 ? 0 : src_.strides.back(),
                    ts = rank == 0 ? 0 : dst_.strides.back();
      for (int64_t i = 0; i < inner; ++i)
        std::memcpy(dst + (t + i * ts) * e, src + (s + i * ss) * e, static_cast<size_t>(e));
    }
    return OkStatus();
  }

 private:
  void Fill(char* dst) const {
    const bool zero = std::all_of(fill_.begin(), fill_.end(), [](char c) { return c == 0; });
    if (zero) {
      std::memset(dst, 0, static_cast<size_t>(dst_elements_ * element_));
      return;
    }
    for (int64_t i = 0; i < dst_elements_; ++i)
      std::memcpy(dst + i * element_, fill_.data(), static_cast<size_t>(element_));
  }

  const Step& step_;
  std::vector<int64_t> dims_;
  View src_, dst_;
  std::vector<char> fill_;  // one element of the fill value; empty: no fill
  int64_t dst_elements_;
  int element_;
};

// Whether every element `view` reaches over `dims` (each >= 1) lies in [0, elements); false when
// the arithmetic would overflow (the attributes may come from a file).
bool Inside(const View& view, const std::vector<int64_t>& dims, int64_t elements) {
  int64_t lo = view.offset, hi = view.offset;
  for (size_t d = 0; d < dims.size(); ++d) {
    int64_t span = 0;
    if (__builtin_mul_overflow(dims[d] - 1, view.strides[d], &span)) return false;
    int64_t& end = span < 0 ? lo : hi;
    if (__builtin_add_overflow(end, span, &end)) return false;
  }
  return lo >= 0 && hi < elements;
}

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeStridedCopyStep(const Step& step, const Executable& exe) {
  if (step.inputs.empty() || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, "strided_copy reads input 0 and writes one output");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, step.attrs.GetInts("dims"));
  View src, dst;
  KILN_ASSIGN_OR_RETURN(src.offset, step.attrs.GetInt("src_offset"));
  KILN_ASSIGN_OR_RETURN(src.strides, step.attrs.GetInts("src_strides"));
  KILN_ASSIGN_OR_RETURN(dst.offset, step.attrs.GetInt("dst_offset"));
  KILN_ASSIGN_OR_RETURN(dst.strides, step.attrs.GetInts("dst_strides"));
  KILN_ASSIGN_OR_RETURN(int64_t fill, step.attrs.GetInt("fill"));
  KILN_ASSIGN_OR_RETURN(double fill_value, step.attrs.GetFloat("fill_value"));
  const TensorType& from = exe.buffers[step.inputs[0]].type;
  const TensorType& to = exe.buffers[step.outputs[0]].type;
  if (from.dtype != to.dtype)
    return MakeError(ErrorCode::kInternal, "strided_copy from ", from.ToString(), " to ",
                     to.ToString(), ": the dtypes differ");
  if (src.strides.size() != dims.size() || dst.strides.size() != dims.size())
    return MakeError(ErrorCode::kInternal, "strided_copy: ", dims.size(), " dims but ",
                     src.strides.size(), " and ", dst.strides.size(), " strides");
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0) return MakeError(ErrorCode::kInternal, "strided_copy: a negative extent");
    empty = empty || d == 0;
  }
  int64_t count = 1;
  for (int64_t d : dims)
    if (!empty && (__builtin_mul_overflow(count, d, &count) || count > to.shape.NumElements()))
      return MakeError(ErrorCode::kInternal, "strided_copy: more elements than ", to.ToString());
  if (!empty &&
      (!Inside(src, dims, from.shape.NumElements()) || !Inside(dst, dims, to.shape.NumElements())))
    return MakeError(ErrorCode::kInternal, "strided_copy: the views reach outside ",
                     from.ToString(), " or ", to.ToString());
  std::vector<char> fill_bytes;
  if (fill) {
    Tensor one = Tensor::FromDoubles(to.dtype, Shape{1}, {fill_value});
    const char* bytes = static_cast<const char*>(one.raw_data());
    fill_bytes.assign(bytes, bytes + DTypeSize(to.dtype));
  }
  return std::unique_ptr<StepRunner>(
      new StridedCopyStep(step, std::move(dims), std::move(src), std::move(dst),
                          std::move(fill_bytes), to.shape.NumElements(), DTypeSize(to.dtype)));
}

}  // namespace kiln::cpu
