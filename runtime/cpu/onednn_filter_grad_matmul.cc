#include "runtime/cpu/onednn_filter_grad_matmul.h"

#include <omp.h>

#include <dnnl.hpp>
#include <vector>

#include "runtime/cpu/layouts.h"
#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/onednn.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;

// The offset of element (n, c, h, w) of a rank-4 buffer in its layout (runtime/cpu/layouts.h):
// dense NCHW, "nhwc" or "nChw<b>c".
class ActivationOffsets {
 public:
  explicit ActivationOffsets(const BufferDesc& b)
      : channels_(b.type.shape[1]),
        height_(b.type.shape[2]),
        width_(b.type.shape[3]),
        nhwc_(b.layout == "nhwc"),
        block_(b.layout.empty() || nhwc_ ? 1 : LayoutChannelBlock(b.layout)) {}
  // A layout this class reads: dense, "nhwc", or channel blocks dividing the channels.
  static bool Reads(const BufferDesc& b) {
    const int block = LayoutChannelBlock(b.layout);
    return b.type.shape.rank() == 4 && block > 0 && b.type.shape[1] % block == 0;
  }
  int64_t operator()(int64_t n, int64_t c, int64_t h, int64_t w) const {
    if (nhwc_) return ((n * height_ + h) * width_ + w) * channels_ + c;
    return (((n * (channels_ / block_) + c / block_) * height_ + h) * width_ + w) * block_ +
           c % block_;
  }

 private:
  int64_t channels_, height_, width_;
  bool nhwc_;
  int64_t block_;
};

class Im2colFilterGradStep : public StepRunner {
 public:
  Im2colFilterGradStep(const ConvStep& c, ActivationOffsets x_at, ActivationOffsets dy_at,
                       dnnl::matmul primitive, memory::desc a, memory::desc b, memory::desc dw)
      : c_(c),
        x_at_(x_at),
        dy_at_(dy_at),
        primitive_(std::move(primitive)),
        a_desc_(std::move(a)),
        b_desc_(std::move(b)),
        dw_desc_(std::move(dw)),
        positions_(c.y_dims[2] * c.y_dims[3]),
        rows_(c.y_dims[0] * positions_),
        taps_(c.w_dims[1] * c.w_dims[2] * c.w_dims[3]),
        a_(static_cast<size_t>(c.y_dims[1] * rows_)),
        cols_(static_cast<size_t>(rows_ * taps_)) {}

  Status Run(StepEnv& env) const override {
    const uint16_t* x = static_cast<const uint16_t*>(env.data[c_.x]);
    const uint16_t* dy = static_cast<const uint16_t*>(env.data[c_.y]);
    PackDyTransposed(dy, env.threads);
    PackColumns(x, env.threads);
    omp_set_num_threads(env.threads);
    try {
      dnnl::stream stream(OnednnEngine());
      primitive_.execute(stream,
                         {{DNNL_ARG_SRC, memory(a_desc_, OnednnEngine(), a_.data())},
                          {DNNL_ARG_WEIGHTS, memory(b_desc_, OnednnEngine(), cols_.data())},
                          {DNNL_ARG_DST, memory(dw_desc_, OnednnEngine(), env.data[c_.w])}});
      stream.wait();
    } catch (const dnnl::error& e) {
      return MakeError(ErrorCode::kInternal,
                       "conv2d_backprop_filter: oneDNN matmul failed: ", e.what());
    }
    return OkStatus();
  }

  int64_t kept_bytes() const override {
    return static_cast<int64_t>((a_.size() + cols_.size()) * sizeof(uint16_t));
  }

 private:
  // a_[k, n*P + oh*OW + ow] = dy[n, k, oh, ow].
  void PackDyTransposed(const uint16_t* dy, int threads) const {
    const int64_t batch = c_.y_dims[0], channels = c_.y_dims[1];
    const int64_t out_h = c_.y_dims[2], out_w = c_.y_dims[3];
#pragma omp parallel for num_threads(threads) schedule(static) if (a_.size() > (1 << 16))
    for (int64_t k = 0; k < channels; ++k) {
      uint16_t* row = a_.data() + k * rows_;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t oh = 0; oh < out_h; ++oh)
          for (int64_t ow = 0; ow < out_w; ++ow) *row++ = dy[dy_at_(n, k, oh, ow)];
    }
  }

  // cols_[(n, oh, ow), (c, r, s)] = x[n, c, oh*sh - pad_top + r*dh, ow*sw - pad_left + s*dw], or 0
  // where that lies in the padding.
  void PackColumns(const uint16_t* x, int threads) const {
    const int64_t channels = c_.x_dims[1], height = c_.x_dims[2], width = c_.x_dims[3];
    const int64_t out_w = c_.y_dims[3], taps_r = c_.w_dims[2], taps_s = c_.w_dims[3];
#pragma omp parallel for num_threads(threads) schedule(static) if (cols_.size() > (1 << 16))
    for (int64_t row = 0; row < rows_; ++row) {
      const int64_t n = row / positions_, oh = row % positions_ / out_w, ow = row % out_w;
      uint16_t* out = cols_.data() + row * taps_;
      for (int64_t ch = 0; ch < channels; ++ch)
        for (int64_t r = 0; r < taps_r; ++r) {
          const int64_t ih = oh * c_.strides[0] - c_.pads[0] + r * c_.dilations[0];
          for (int64_t s = 0; s < taps_s; ++s) {
            const int64_t iw = ow * c_.strides[1] - c_.pads[1] + s * c_.dilations[1];
            const bool inside = ih >= 0 && ih < height && iw >= 0 && iw < width;
            *out++ = inside ? x[x_at_(n, ch, ih, iw)] : uint16_t{0};
          }
        }
    }
  }

  ConvStep c_;
  ActivationOffsets x_at_, dy_at_;
  dnnl::matmul primitive_;
  memory::desc a_desc_, b_desc_, dw_desc_;
  int64_t positions_, rows_, taps_;
  mutable std::vector<uint16_t> a_, cols_;  // bf16 bits: dy^T and x's im2col
};

}  // namespace

bool SuitsIm2colFilterGrad(const Step& step, const Executable& exe) {
  Result<ConvStep> conv = ReadConvStep(step, exe);
  if (!conv.ok()) return false;
  const ConvStep& c = *conv;
  const int64_t positions = c.y_dims[2] * c.y_dims[3];
  const int64_t rows = c.y_dims[0] * positions;
  const int64_t taps = c.w_dims[1] * c.w_dims[2] * c.w_dims[3];
  return c.kind == ConvStep::Kind::kBackwardFilter && c.dtype == bf16 && c.groups == 1 &&
         positions <= kMostOutputPositions && rows > 0 && taps > 0 &&
         rows <= kMostColumnElements / taps && ActivationOffsets::Reads(exe.buffers[c.x]) &&
         ActivationOffsets::Reads(exe.buffers[c.y]) && exe.buffers[c.w].layout.empty() &&
         HasNativeBf16Matmul();
}

Result<std::unique_ptr<StepRunner>> MakeIm2colFilterGradStep(const Step& step,
                                                             const Executable& exe) {
  if (!SuitsIm2colFilterGrad(step, exe))
    return MakeError(ErrorCode::kUnimplemented, step.callee, " '", step.node.name,
                     "' does not suit an im2col matrix product");
  KILN_ASSIGN_OR_RETURN(ConvStep c, ReadConvStep(step, exe));
  const memory::dim k = c.y_dims[1], rows = c.y_dims[0] * c.y_dims[2] * c.y_dims[3];
  const memory::dim taps = c.w_dims[1] * c.w_dims[2] * c.w_dims[3];
  const auto bf = memory::data_type::bf16;
  memory::desc a({k, rows}, bf, memory::format_tag::ab);
  memory::desc b({rows, taps}, bf, memory::format_tag::ab);
  memory::desc dw({k, taps}, bf, memory::format_tag::ab);
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, dw), OnednnEngine());
    const std::string impl = pd.impl_info_str();
    if (impl.rfind("ref", 0) == 0)
      return MakeError(ErrorCode::kUnimplemented, "oneDNN has only its reference bf16 matmul (",
                       impl, ")");
    return std::unique_ptr<StepRunner>(
        new Im2colFilterGradStep(c, ActivationOffsets(exe.buffers[c.x]),
                                 ActivationOffsets(exe.buffers[c.y]), dnnl::matmul(pd), a, b, dw));
  } catch (const dnnl::error& e) {
    return MakeError(ErrorCode::kUnimplemented, "oneDNN has no bf16 matmul for ", k, " x ", rows,
                     " x ", taps, ": ", e.what());
  }
}

}  // namespace kiln::cpu
