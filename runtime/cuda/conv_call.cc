#include "runtime/cuda/conv_call.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "runtime/cpu/parallel_ranges.h"
#include "runtime/cuda/host_elements.h"

namespace kiln::cuda {
namespace {

// The position of buffer `id` among the step's operands (inputs, then outputs).
int OperandOf(const Step& step, int id) {
  for (size_t i = 0; i < step.inputs.size(); ++i)
    if (step.inputs[i] == id) return static_cast<int>(i);
  for (size_t i = 0; i < step.outputs.size(); ++i)
    if (step.outputs[i] == id) return static_cast<int>(step.inputs.size() + i);
  return -1;
}

const char* KindName(ConvCall::Kind kind) {
  switch (kind) {
    case ConvCall::Kind::kForward:
      return "forward";
    case ConvCall::Kind::kBackwardData:
      return "backward data";
    case ConvCall::Kind::kBackwardFilter:
      return "backward filter";
  }
  return "?";
}

int64_t Elements(const std::array<int64_t, 4>& dims) {
  return dims[0] * dims[1] * dims[2] * dims[3];
}

// The input row (or column) that output position `o` reads at filter tap `t`; outside [0, size)
// is padding.
int64_t InputAt(int64_t o, int64_t t, int64_t stride, int64_t pad, int64_t dilation) {
  return o * stride - pad + t * dilation;
}

}  // namespace

std::string ConvCall::ToString() const {
  auto dims = [](const std::array<int64_t, 4>& d) {
    return Shape(std::vector<int64_t>(d.begin(), d.end())).ToString();
  };
  std::string s = std::string("conv ") + KindName(kind) + " x=" + dims(x) + " w=" + dims(w) +
                  " y=" + dims(y) + " " + std::string(DTypeName(dtype));
  if (bias) s += " bias";
  if (residual) s += " residual";
  if (relu) s += " relu";
  return s;
}

Result<ConvCall> ConvCallForStep(const Step& step, const Executable& exe) {
  KILN_ASSIGN_OR_RETURN(cpu::ConvStep conv, cpu::ReadConvStep(step, exe));
  if (conv.clip || conv.depthwise_weights >= 0)
    return MakeError(ErrorCode::kInternal, "convolution ", step.node.name,
                     ": clip and depthwise post-ops are the cpu backend's, not cuDNN calls'");
  for (int id : {conv.x, conv.w, conv.y, conv.bias, conv.residual})
    if (id >= 0 && !exe.buffers[id].layout.empty())
      return MakeError(ErrorCode::kInvalidArgument, "convolution ", step.node.name, ": buffer ",
                       exe.buffers[id].tensor, " is in layout ", exe.buffers[id].layout,
                       ", and cuDNN calls take dense tensors only");
  if (conv.dtype != f32 && conv.dtype != bf16 && conv.dtype != f16)
    return MakeError(ErrorCode::kInvalidArgument, "convolution ", step.node.name, " of ",
                     DTypeName(conv.dtype), ": cuDNN calls take f32, bf16 or f16");
  ConvCall c;
  c.kind = conv.kind;
  c.dtype = conv.dtype;
  c.x = conv.x_dims, c.w = conv.w_dims, c.y = conv.y_dims;
  c.strides = conv.strides, c.dilations = conv.dilations;
  c.pre_pads = {conv.pads[0], conv.pads[1]};
  c.post_pads = {conv.pads[2], conv.pads[3]};
  c.bias = conv.bias >= 0, c.residual = conv.residual >= 0, c.relu = conv.relu;
  c.x_operand = OperandOf(step, conv.x);
  c.w_operand = OperandOf(step, conv.w);
  c.y_operand = OperandOf(step, conv.y);
  if (c.bias) c.bias_operand = OperandOf(step, conv.bias);
  if (c.residual) c.residual_operand = OperandOf(step, conv.residual);
  return c;
}

ConvSpans SpansOf(const ConvCall& c) {
  const int64_t size = DTypeSize(c.dtype);
  ConvSpans spans;
  spans.x = Elements(c.x) * size;
  spans.w = Elements(c.w) * size;
  spans.y = Elements(c.y) * size;
  if (c.bias) spans.bias = c.y[1] * size;
  if (c.residual) spans.residual = spans.y;
  return spans;
}

void RunConvOnHost(const ConvCall& c, void* x, void* w, void* y, const void* bias,
                   const void* residual, int threads) {
  const int64_t n_count = c.x[0], channels = c.x[1], height = c.x[2], width = c.x[3];
  const int64_t filters = c.w[0], group_channels = c.w[1], rows = c.w[2], cols = c.w[3];
  const int64_t out_h = c.y[2], out_w = c.y[3];
  const int64_t group_filters = filters / c.groups();
  auto x_at = [&](int64_t n, int64_t ch, int64_t h, int64_t v) {
    return ((n * channels + ch) * height + h) * width + v;
  };
  auto w_at = [&](int64_t k, int64_t ch, int64_t r, int64_t s) {
    return ((k * group_channels + ch) * rows + r) * cols + s;
  };
  auto y_at = [&](int64_t n, int64_t k, int64_t p, int64_t q) {
    return ((n * filters + k) * out_h + p) * out_w + q;
  };
  // The element that the output, gradient or weight update computes, by flat index.
  std::function<double(int64_t)> element;
  void* out = nullptr;
  int64_t count = 0, per_element = 0;
  switch (c.kind) {
    case ConvCall::Kind::kForward:
      out = y, count = Elements(c.y), per_element = group_channels * rows * cols;
      element = [&](int64_t i) {
        const int64_t q = i % out_w, p = i / out_w % out_h, k = i / (out_w * out_h) % filters,
                      n = i / (out_w * out_h * filters);
        const int64_t first = k / group_filters * group_channels;
        double sum = 0;
        for (int64_t ch = 0; ch < group_channels; ++ch)
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t h = InputAt(p, r, c.strides[0], c.pre_pads[0], c.dilations[0]);
            if (h < 0 || h >= height) continue;
            for (int64_t s = 0; s < cols; ++s) {
              const int64_t v = InputAt(q, s, c.strides[1], c.pre_pads[1], c.dilations[1]);
              if (v < 0 || v >= width) continue;
              sum += static_cast<double>(LoadElement(x, x_at(n, first + ch, h, v), c.dtype)) *
                     LoadElement(w, w_at(k, ch, r, s), c.dtype);
            }
          }
        if (c.bias) sum += LoadElement(bias, k, c.dtype);
        if (c.residual) sum += LoadElement(residual, i, c.dtype);
        return c.relu && sum < 0 ? 0.0 : sum;
      };
      break;
    case ConvCall::Kind::kBackwardData:  // x is dx, y is dy
      out = x, count = Elements(c.x), per_element = group_filters * rows * cols;
      element = [&](int64_t i) {
        const int64_t v = i % width, h = i / width % height, ch = i / (width * height) % channels,
                      n = i / (width * height * channels);
        const int64_t g = ch / group_channels, in_group = ch % group_channels;
        double sum = 0;
        for (int64_t k = g * group_filters; k < (g + 1) * group_filters; ++k)
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t ph = h + c.pre_pads[0] - r * c.dilations[0];
            if (ph < 0 || ph % c.strides[0] || ph / c.strides[0] >= out_h) continue;
            for (int64_t s = 0; s < cols; ++s) {
              const int64_t pw = v + c.pre_pads[1] - s * c.dilations[1];
              if (pw < 0 || pw % c.strides[1] || pw / c.strides[1] >= out_w) continue;
              sum += static_cast<double>(LoadElement(
                         y, y_at(n, k, ph / c.strides[0], pw / c.strides[1]), c.dtype)) *
                     LoadElement(w, w_at(k, in_group, r, s), c.dtype);
            }
          }
        return sum;
      };
      break;
    case ConvCall::Kind::kBackwardFilter:  // w is dw, y is dy
      out = w, count = Elements(c.w), per_element = n_count * out_h * out_w;
      element = [&](int64_t i) {
        const int64_t s = i % cols, r = i / cols % rows, ch = i / (cols * rows) % group_channels,
                      k = i / (cols * rows * group_channels);
        const int64_t input_channel = k / group_filters * group_channels + ch;
        double sum = 0;
        for (int64_t n = 0; n < n_count; ++n)
          for (int64_t p = 0; p < out_h; ++p) {
            const int64_t h = InputAt(p, r, c.strides[0], c.pre_pads[0], c.dilations[0]);
            if (h < 0 || h >= height) continue;
            for (int64_t q = 0; q < out_w; ++q) {
              const int64_t v = InputAt(q, s, c.strides[1], c.pre_pads[1], c.dilations[1]);
              if (v < 0 || v >= width) continue;
              sum += static_cast<double>(LoadElement(x, x_at(n, input_channel, h, v), c.dtype)) *
                     LoadElement(y, y_at(n, k, p, q), c.dtype);
            }
          }
        return sum;
      };
      break;
  }
  cpu::ForEachRange(count, count * std::max<int64_t>(per_element, 1), threads,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t i = begin; i < end; ++i)
                        StoreElement(out, i, c.dtype, static_cast<float>(element(i)));
                    });
}

}  // namespace kiln::cuda
