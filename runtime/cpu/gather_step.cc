// Library steps "gather" and "gather_grad": kiln's Gather (any dtype) and GatherGrad (f32, f64)
// with i32/i64 indices of any shape, as the reference kernels compute them.
//   gather       inputs (data, indices), output y: y[o, k, i] = data[o, idx[k], i] for the outer
//                dims before `axis`, the indices (flattened) and the inner dims after it.
//   gather_grad  inputs (dy, indices, data_like), output dx of data_like's type: dx = 0, then
//                dx[o, idx[k], i] += dy[o, k, i] in index order (a repeated index sums its rows
//                in that order, bit for bit the reference's f32 sums).
// Attribute: axis (normalized, of data / dx). Negative indices count from the axis's end; an index
// outside [-n, n) fails the step naming the node, before anything is written. Rows are copied
// (added) whole; the work is split over the session's threads by outer index, or by columns of
// the inner rows when there is one outer index (an embedding: outer 1, rows of the model width).
#include <cstring>

#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/parallel_ranges.h"

namespace kiln::cpu {
namespace {

struct GatherShape {
  int64_t outer = 1, axis_size = 0, count = 0, inner = 1;
};

int64_t IndexAt(const void* indices, DType dtype, int64_t k, int64_t n) {
  const int64_t v = dtype == i32 ? static_cast<const int32_t*>(indices)[k]
                                 : static_cast<const int64_t*>(indices)[k];
  return v < 0 ? v + n : v;
}

class GatherStep : public StepRunner {
 public:
  GatherStep(const Step& step, GatherShape shape, int64_t axis, Shape data, DType index,
             DType value, bool grad)
      : step_(step),
        s_(shape),
        axis_(axis),
        data_(std::move(data)),
        index_(index),
        value_(value),
        grad_(grad) {}

  Status Run(StepEnv& env) const override {
    const void* indices = env.data[step_.inputs[1]];
    KILN_RETURN_IF_ERROR(CheckGatherIndices(step_, indices, index_, s_.count, axis_, data_));
    if (!grad_) {
      const int64_t row = s_.inner * DTypeSize(value_);
      const char* data = static_cast<const char*>(env.data[step_.inputs[0]]);
      char* y = static_cast<char*>(env.data[step_.outputs[0]]);
      ForEachRange(s_.outer * s_.count, s_.outer * s_.count * s_.inner, env.threads,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t r = begin; r < end; ++r) {
                       const int64_t o = r / s_.count, k = r % s_.count;
                       const int64_t v = IndexAt(indices, index_, k, s_.axis_size);
                       std::memcpy(y + r * row, data + (o * s_.axis_size + v) * row, row);
                     }
                   });
      return OkStatus();
    }
    if (value_ == f32)
      Sum(static_cast<const float*>(env.data[step_.inputs[0]]), indices,
          static_cast<float*>(env.data[step_.outputs[0]]), env.threads);
    else
      Sum(static_cast<const double*>(env.data[step_.inputs[0]]), indices,
          static_cast<double*>(env.data[step_.outputs[0]]), env.threads);
    return OkStatus();
  }

 private:
  // dx = 0; dx[o, idx[k], :] += dy[o, k, :], k in order. Threads take outer indices, or column
  // ranges [c0, c1) of every row when there is a single outer index.
  template <typename T>
  void Sum(const T* dy, const void* indices, T* dx, int threads) const {
    const bool by_columns = s_.outer == 1;
    const int64_t parts = by_columns ? s_.inner : s_.outer;
    ForEachRange(parts, s_.outer * (s_.axis_size + s_.count) * s_.inner, threads,
                 [&](int64_t begin, int64_t end) {
                   const int64_t o0 = by_columns ? 0 : begin, o1 = by_columns ? 1 : end;
                   const int64_t c0 = by_columns ? begin : 0, c1 = by_columns ? end : s_.inner;
                   for (int64_t o = o0; o < o1; ++o) {
                     T* out = dx + o * s_.axis_size * s_.inner;
                     for (int64_t a = 0; a < s_.axis_size; ++a)
                       std::fill(out + a * s_.inner + c0, out + a * s_.inner + c1, T(0));
                     for (int64_t k = 0; k < s_.count; ++k) {
                       T* to = out + IndexAt(indices, index_, k, s_.axis_size) * s_.inner;
                       const T* from = dy + (o * s_.count + k) * s_.inner;
                       for (int64_t c = c0; c < c1; ++c) to[c] += from[c];
                     }
                   }
                 });
  }

  const Step& step_;
  GatherShape s_;
  int64_t axis_;
  Shape data_;
  DType index_, value_;
  bool grad_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeGatherStep(const Step& step, const Executable& exe) {
  const bool grad = step.callee == "gather_grad";
  if (step.inputs.size() != (grad ? 3u : 2u) || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, step.callee, " takes ", grad ? 3 : 2,
                     " inputs and 1 output");
  const TensorType& indices = exe.buffers[step.inputs[1]].type;
  const TensorType& data = exe.buffers[grad ? step.outputs[0] : step.inputs[0]].type;
  const TensorType& rows = exe.buffers[grad ? step.inputs[0] : step.outputs[0]].type;
  KILN_ASSIGN_OR_RETURN(int64_t axis, step.attrs.GetInt("axis"));
  const bool dtypes_ok = (indices.dtype == i32 || indices.dtype == i64) &&
                         data.dtype == rows.dtype &&
                         (!grad || data.dtype == f32 || data.dtype == f64);
  if (!dtypes_ok || axis < 0 || axis >= data.shape.rank())
    return MakeError(ErrorCode::kInternal, step.callee, ": i32/i64 indices into axis ", axis,
                     " of ", data.ToString(), (grad ? " (f32 or f64)" : ""), ", got indices ",
                     indices.ToString(), " and rows ", rows.ToString());
  GatherShape s;
  for (int d = 0; d < data.shape.rank(); ++d) {
    if (d < axis) s.outer *= data.shape[d];
    if (d > axis) s.inner *= data.shape[d];
  }
  s.axis_size = data.shape[static_cast<int>(axis)];
  s.count = indices.shape.NumElements();
  if (rows.shape.NumElements() != s.outer * s.count * s.inner)
    return MakeError(ErrorCode::kInternal, step.callee, ": ", rows.ToString(), " is not ", s.outer,
                     " x ", s.count, " x ", s.inner, " rows of ", data.ToString());
  return std::unique_ptr<StepRunner>(
      new GatherStep(step, s, axis, data.shape, indices.dtype, data.dtype, grad));
}

}  // namespace kiln::cpu
