#include "runtime/cpu/onednn_filter_grad_matmul.h"

#include <omp.h>

#include <dnnl.hpp>
#include <optional>
#include <type_traits>
#include <vector>

#include "runtime/cpu/layouts.h"
#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/onednn.h"
#include "runtime/cpu/packed_sgemm.h"

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
  // Element (n, c, h, w) is at Base(n, c) + h * RowStride() + w * ColumnStride().
  int64_t Base(int64_t n, int64_t c) const {
    if (nhwc_) return n * height_ * width_ * channels_ + c;
    return (n * (channels_ / block_) + c / block_) * height_ * width_ * block_ + c % block_;
  }
  int64_t RowStride() const { return width_ * ColumnStride(); }
  int64_t ColumnStride() const { return nhwc_ ? channels_ : block_; }

 private:
  int64_t channels_, height_, width_;
  bool nhwc_;
  int64_t block_;
};

// oneDNN's bf16 matmul of the packed operands, created at load.
struct OnednnProduct {
  dnnl::matmul primitive;
  memory::desc a, b, dw;
};

// E is the element: bf16's bits (uint16_t; the product on oneDNN) or float (on PackedSgemm).
template <typename E>
class Im2colFilterGradStep : public StepRunner {
 public:
  Im2colFilterGradStep(const ConvStep& c, ActivationOffsets x_at, ActivationOffsets dy_at,
                       std::optional<OnednnProduct> product)
      : c_(c),
        x_at_(x_at),
        dy_at_(dy_at),
        product_(std::move(product)),
        positions_(c.y_dims[2] * c.y_dims[3]),
        rows_(c.y_dims[0] * positions_),
        taps_(c.w_dims[1] * c.w_dims[2] * c.w_dims[3]),
        a_(static_cast<size_t>(c.y_dims[1] * rows_)),
        cols_(static_cast<size_t>(rows_ * taps_)) {}

  Status Run(StepEnv& env) const override {
    PackDyTransposed(static_cast<const E*>(env.data[c_.y]), env.threads);
    PackColumns(static_cast<const E*>(env.data[c_.x]), env.threads);
    if constexpr (std::is_same_v<E, float>) {
      SgemmProblem p;
      p.m = c_.y_dims[1], p.n = taps_, p.k = rows_;
      p.a = a_.data(), p.b = cols_.data(), p.c = static_cast<float*>(env.data[c_.w]);
      PackedSgemm(p, env.threads);
      return OkStatus();
    }
    omp_set_num_threads(env.threads);
    try {
      dnnl::stream stream(OnednnEngine());
      product_->primitive.execute(
          stream, {{DNNL_ARG_SRC, memory(product_->a, OnednnEngine(), a_.data())},
                   {DNNL_ARG_WEIGHTS, memory(product_->b, OnednnEngine(), cols_.data())},
                   {DNNL_ARG_DST, memory(product_->dw, OnednnEngine(), env.data[c_.w])}});
      stream.wait();
    } catch (const dnnl::error& e) {
      return MakeError(ErrorCode::kInternal,
                       "conv2d_backprop_filter: oneDNN matmul failed: ", e.what());
    }
    return OkStatus();
  }

  int64_t kept_bytes() const override {
    return static_cast<int64_t>((a_.size() + cols_.size()) * sizeof(E));
  }

 private:
  // a_[k, n*P + oh*OW + ow] = dy[n, k, oh, ow].
  void PackDyTransposed(const E* dy, int threads) const {
    const int64_t batch = c_.y_dims[0], channels = c_.y_dims[1];
    const int64_t out_h = c_.y_dims[2], out_w = c_.y_dims[3];
#pragma omp parallel for num_threads(threads) schedule(static) if (a_.size() > (1 << 16))
    for (int64_t k = 0; k < channels; ++k) {
      E* row = a_.data() + k * rows_;
      for (int64_t n = 0; n < batch; ++n) {
        const E* image = dy + dy_at_.Base(n, k);
        for (int64_t oh = 0; oh < out_h; ++oh)
          for (int64_t ow = 0; ow < out_w; ++ow)
            *row++ = image[oh * dy_at_.RowStride() + ow * dy_at_.ColumnStride()];
      }
    }
  }

  // cols_[(n, oh, ow), (c, r, s)] = x[n, c, oh*sh - pad_top + r*dh, ow*sw - pad_left + s*dw], or 0
  // where that lies in the padding.
  void PackColumns(const E* x, int threads) const {
    const int64_t channels = c_.x_dims[1], height = c_.x_dims[2], width = c_.x_dims[3];
    const int64_t out_w = c_.y_dims[3], taps_r = c_.w_dims[2], taps_s = c_.w_dims[3];
#pragma omp parallel for num_threads(threads) schedule(static) if (cols_.size() > (1 << 16))
    for (int64_t row = 0; row < rows_; ++row) {
      const int64_t n = row / positions_, oh = row % positions_ / out_w, ow = row % out_w;
      E* out = cols_.data() + row * taps_;
      const int64_t h0 = oh * c_.strides[0] - c_.pads[0], w0 = ow * c_.strides[1] - c_.pads[1];
      for (int64_t ch = 0; ch < channels; ++ch) {
        const E* image = x + x_at_.Base(n, ch);
        for (int64_t r = 0; r < taps_r; ++r) {
          const int64_t ih = h0 + r * c_.dilations[0];
          const bool row_inside = ih >= 0 && ih < height;
          for (int64_t s = 0; s < taps_s; ++s) {
            const int64_t iw = w0 + s * c_.dilations[1];
            *out++ = row_inside && iw >= 0 && iw < width
                         ? image[ih * x_at_.RowStride() + iw * x_at_.ColumnStride()]
                         : E{0};
          }
        }
      }
    }
  }

  ConvStep c_;
  ActivationOffsets x_at_, dy_at_;
  std::optional<OnednnProduct> product_;  // for bf16
  int64_t positions_, rows_, taps_;
  mutable std::vector<E> a_, cols_;  // dy^T and x's im2col
};

}  // namespace

bool SuitsIm2colFilterGrad(const Step& step, const Executable& exe) {
  Result<ConvStep> conv = ReadConvStep(step, exe);
  if (!conv.ok()) return false;
  const ConvStep& c = *conv;
  const int64_t positions = c.y_dims[2] * c.y_dims[3];
  const int64_t rows = c.y_dims[0] * positions;
  const int64_t taps = c.w_dims[1] * c.w_dims[2] * c.w_dims[3];
  return c.kind == ConvStep::Kind::kBackwardFilter && c.groups == 1 &&
         ((c.dtype == bf16 && HasNativeBf16Matmul()) || (c.dtype == f32 && HasPackedSgemm())) &&
         positions <= kMostOutputPositions && rows > 0 && taps > 0 &&
         rows <= kMostColumnElements / taps && ActivationOffsets::Reads(exe.buffers[c.x]) &&
         ActivationOffsets::Reads(exe.buffers[c.y]) && exe.buffers[c.w].layout.empty();
}

Result<std::unique_ptr<StepRunner>> MakeIm2colFilterGradStep(const Step& step,
                                                             const Executable& exe) {
  if (!SuitsIm2colFilterGrad(step, exe))
    return MakeError(ErrorCode::kUnimplemented, step.callee, " '", step.node.name,
                     "' does not suit an im2col matrix product");
  KILN_ASSIGN_OR_RETURN(ConvStep c, ReadConvStep(step, exe));
  const ActivationOffsets x_at(exe.buffers[c.x]), dy_at(exe.buffers[c.y]);
  if (c.dtype == f32)
    return std::unique_ptr<StepRunner>(
        new Im2colFilterGradStep<float>(c, x_at, dy_at, std::nullopt));
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
    return std::unique_ptr<StepRunner>(new Im2colFilterGradStep<uint16_t>(
        c, x_at, dy_at, OnednnProduct{dnnl::matmul(pd), a, b, dw}));
  } catch (const dnnl::error& e) {
    return MakeError(ErrorCode::kUnimplemented, "oneDNN has no bf16 matmul for ", k, " x ", rows,
                     " x ", taps, ": ", e.what());
  }
}

}  // namespace kiln::cpu
