// ONNX signal processing (opset 17).
// - HannWindow, HammingWindow and BlackmanWindow of a length that must be known (an initializer
//   or a Constant at import, else the node converts once the run feeds it), computed at import as
//   a constant of output_datatype (default float):
//     w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N),  N = size (periodic, the default) or
//     size - 1 (symmetric), with (a0, a1, a2) = (1/2, 1/2, 0), (25/46, 21/46, 0), (0.42, 0.5,
//     0.08).
// - DFT: products with cosine and sine matrices of the transform's length, computed at import,
//   along the transformed axis (in float64, then rounded to the input's dtype): a discrete
//   Fourier transform as matrix products (O(N^2) per signal: fine for the frame lengths of
//   audio features, no FFT), differentiable like any MatMul. Real ([..., 1]) or complex ([...,
//   2]) input; dft_length pads with zeros or cuts; onesided keeps the first N/2 + 1 bins.
// - STFT: frames gathered by a constant index table, times the window, then the DFT of each.
// - MelWeightMatrix: the triangular mel filter bank as a constant, as the ONNX reference builds
//   it (bins on the mel scale floored to DFT bins).
// Lengths, steps and MelWeightMatrix's inputs must be known values (the node converts once the run
// feeds them).
#include <cmath>
#include <numbers>
#include <optional>
#include <vector>

#include "ir/io/onnx_tensor.h"
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"

namespace kiln::onnx_import {
namespace {

struct Cosines {
  double a0, a1, a2;
};

Status ConvertWindow(OnnxNode& n, Cosines c) {
  if (!n.known(0)) return n.NotKnownYet("needs its size known at import");
  KILN_ASSIGN_OR_RETURN(double given, n.ConstScalar(0));
  KILN_ASSIGN_OR_RETURN(int64_t periodic, n.Int("periodic", 1));
  KILN_ASSIGN_OR_RETURN(int64_t onnx_type, n.Int("output_datatype", 1));
  const std::optional<DType> dtype = DTypeOfOnnx(static_cast<int32_t>(onnx_type));
  if (!dtype) return n.Unsupported("output_datatype ", onnx_type, " is not a kiln dtype");
  if (given < 0 || given > (1 << 24) || given != std::floor(given))
    return n.Fail("size is ", given, "; expected a whole number in [0, 2^24]");
  const auto size = static_cast<int64_t>(given);
  const double period = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    const double x = period > 0 ? 2 * std::numbers::pi * static_cast<double>(i) / period : 0;
    w[static_cast<size_t>(i)] = c.a0 - c.a1 * std::cos(x) + c.a2 * std::cos(2 * x);
  }
  n.SetOutput(0, n.g().Constant(Tensor::FromDoubles(*dtype, Shape{size}, w)));
  return OkStatus();
}

Status ConvertHann(OnnxNode& n) { return ConvertWindow(n, {0.5, 0.5, 0}); }
Status ConvertHamming(OnnxNode& n) { return ConvertWindow(n, {25.0 / 46, 21.0 / 46, 0}); }
Status ConvertBlackman(OnnxNode& n) { return ConvertWindow(n, {0.42, 0.5, 0.08}); }

// The longest transform: its two matrices take 2 x 8192^2 x 8 bytes = 1 GiB.
constexpr int64_t kMaxDftLength = 8192;

// A known scalar input as a whole number in [low, 2^24].
Result<int64_t> KnownCount(OnnxNode& n, int i, const char* what, int64_t low) {
  KILN_ASSIGN_OR_RETURN(double v, n.ConstScalar(i));
  if (v < static_cast<double>(low) || v > (1 << 24) || v != std::floor(v))
    return n.Fail(what, " is ", v, "; expected a whole number in [", low, ", 2^24]");
  return static_cast<int64_t>(v);
}

// The discrete Fourier transform of x [..., N at `axis`, ..., 1 or 2 (real, imaginary)] over
// `length` points along `axis` (x cut or padded with zeros to it): [..., K, ..., 2] with K =
// length / 2 + 1 when onesided, else length. inverse: e^{+i...} / length instead of e^{-i...}.
// The matrices are built at import: a length whose matrices exceed kiln's largest tensor is
// refused.
Result<Value> Dft(const OnnxNode& n, Value x, int axis, int64_t length, bool inverse,
                  bool onesided) {
  GraphBuilder& g = n.g();
  const int rank = x.rank();
  if (rank < 2 || axis >= rank - 1)  // (a signal the builder refused: the build reports it)
    return n.Fail("cannot transform ", x.type().ToString(), " along axis ", axis);
  const int64_t points = x.shape()[axis];
  const int64_t bins = onesided ? length / 2 + 1 : length;
  if (length > kMaxDftLength)
    return n.Unsupported("a DFT of ", length, " points (at most ", kMaxDftLength,
                         ": the transform is a product with two length x length matrices)");
  // The signal's real and imaginary parts, the transformed axis last, in float64.
  std::vector<int64_t> perm;
  for (int d = 0; d < rank - 1; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  std::vector<int64_t> back(rank - 1);
  for (int d = 0; d < rank - 1; ++d) back[perm[d]] = d;
  auto part = [&](int64_t c) {
    Value v = Transpose(Squeeze(Slice(x, {c}, {c + 1}, {rank - 1}), {rank - 1}), perm);
    v = Cast(v, f64);
    if (length < points) return Slice(v, {0}, {length}, {rank - 2});
    if (length > points) {
      std::vector<int64_t> pads(2 * (rank - 1), 0);
      pads[2 * (rank - 1) - 1] = length - points;  // the end of the last dim
      return Pad(v, pads);
    }
    return v;
  };
  // cos[t, k] = cos(2 pi k t / length), sin likewise: y[k] = sum_t x[t] e^{-+ 2 pi i k t / length}.
  KILN_ASSIGN_OR_RETURN(Tensor cosines, NewTensor(n, f64, Shape{length, bins}));
  KILN_ASSIGN_OR_RETURN(Tensor sines, NewTensor(n, f64, Shape{length, bins}));
  double* cos_at = cosines.data<double>();
  double* sin_at = sines.data<double>();
  const double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  for (int64_t t = 0; t < length; ++t)
    for (int64_t k = 0; k < bins; ++k) {
      const double angle = 2 * std::numbers::pi * static_cast<double>((k * t) % length) /
                           static_cast<double>(length);
      cos_at[t * bins + k] = scale * std::cos(angle);
      sin_at[t * bins + k] = scale * std::sin(angle) * (inverse ? 1 : -1);
    }
  Value cos_m = g.Constant(cosines);
  Value sin_m = g.Constant(sines);
  // (a + ib)(c + is) = (ac - bs) + i(as + bc) per term.
  Value re = part(0);
  Value real = MatMul(re, cos_m), imag = MatMul(re, sin_m);
  if (x.shape()[rank - 1] == 2) {
    Value im = part(1);
    real = real - MatMul(im, sin_m);
    imag = imag + MatMul(im, cos_m);
  }
  auto place = [&](Value v) { return Unsqueeze(Cast(Transpose(v, back), x.dtype()), {rank - 1}); };
  return Concat({place(real), place(imag)}, rank - 1);
}

// The complex-or-real signal layout every transform input has: rank >= 2, last dim 1 or 2.
Status CheckSignal(OnnxNode& n, const Value& x) {
  if (x.rank() < 2 || (x.shape()[x.rank() - 1] != 1 && x.shape()[x.rank() - 1] != 2))
    return n.Fail("the signal must be [..., 1] (real) or [..., 2] (complex), got ",
                  x.type().ToString());
  if (!IsFloat(x.dtype())) return n.Fail("the signal must be floats, got ", x.type().ToString());
  return OkStatus();
}

Status ConvertDft(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_RETURN_IF_ERROR(CheckSignal(n, x));
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 1));
  KILN_ASSIGN_OR_RETURN(int64_t inverse, n.Int("inverse", 0));
  KILN_ASSIGN_OR_RETURN(int64_t onesided, n.Int("onesided", 0));
  const int rank = x.rank();
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank - 1)
    return n.Fail("axis ", axis, " is not a signal axis of ", x.type().ToString());
  if (inverse && onesided) return n.Unsupported("an inverse onesided DFT is not supported");
  const int64_t n_points = x.shape()[axis];
  if (n_points < 0) return n.NotKnownYet("needs the transformed dim known");
  int64_t length = n_points;
  if (n.has_input(1)) {
    if (!n.known(1)) return n.NotKnownYet("needs dft_length known");
    KILN_ASSIGN_OR_RETURN(length, KnownCount(n, 1, "dft_length", 1));
  }
  if (length < 1) return n.Fail("the transform needs at least one point, got ", length);
  if (onesided && x.shape()[rank - 1] == 2)
    return n.Fail("a onesided DFT needs a real signal [..., 1], got ", x.type().ToString());
  KILN_ASSIGN_OR_RETURN(Value y,
                        Dft(n, x, static_cast<int>(axis), length, inverse != 0, onesided != 0));
  n.SetOutput(0, y);
  return OkStatus();
}

Status ConvertStft(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value signal, n.input(0));
  KILN_RETURN_IF_ERROR(CheckSignal(n, signal));
  if (signal.rank() != 3) return n.Fail("the signal must be [batch, length, 1 or 2]");
  KILN_ASSIGN_OR_RETURN(int64_t onesided, n.Int("onesided", 1));
  if (!n.known(1) || (n.has_input(3) && !n.known(3)))
    return n.NotKnownYet("needs frame_step and frame_length known");
  KILN_ASSIGN_OR_RETURN(int64_t step, KnownCount(n, 1, "frame_step", 1));
  std::optional<Value> window;
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(window, n.input(2));
    if (window->rank() != 1 || window->shape()[0] < 0)
      return n.Fail("the window must be 1-D of a known length, got ", window->type().ToString());
  }
  int64_t frame = window ? window->shape()[0] : -1;
  if (n.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(frame, KnownCount(n, 3, "frame_length", 1));
    if (window && window->shape()[0] != frame)
      return n.Fail("the window has ", window->shape()[0], " points for frames of ", frame);
  }
  if (frame < 1) return n.Fail("needs a window or a frame_length");
  if (onesided && signal.shape()[2] == 2)
    return n.Fail("a onesided STFT needs a real signal [batch, length, 1], got ",
                  signal.type().ToString());
  const int64_t total = signal.shape()[1];
  if (total < 0) return n.NotKnownYet("needs the signal's length known");
  if (total < frame) return n.Fail("the signal has ", total, " points, less than a frame ", frame);
  const int64_t frames = (total - frame) / step + 1;
  KILN_ASSIGN_OR_RETURN(Tensor at, NewTensor(n, i64, Shape{frames, frame}));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < frame; ++j) at.data<int64_t>()[f * frame + j] = f * step + j;
  Value framed = Gather(signal, n.g().Constant(at), 1);
  if (window) framed = framed * Reshape(Cast(*window, signal.dtype()), {1, 1, frame, 1});
  KILN_ASSIGN_OR_RETURN(Value y, Dft(n, framed, 2, frame, false, onesided != 0));
  n.SetOutput(0, y);
  return OkStatus();
}

Status ConvertMelWeightMatrix(OnnxNode& n) {
  for (int i = 0; i < 5; ++i)
    if (!n.known(i)) return n.NotKnownYet("needs all five inputs known");
  KILN_ASSIGN_OR_RETURN(int64_t mels, KnownCount(n, 0, "num_mel_bins", 1));
  KILN_ASSIGN_OR_RETURN(int64_t dft_length, KnownCount(n, 1, "dft_length", 1));
  KILN_ASSIGN_OR_RETURN(int64_t rate, KnownCount(n, 2, "sample_rate", 1));
  KILN_ASSIGN_OR_RETURN(double low, n.ConstScalar(3));
  KILN_ASSIGN_OR_RETURN(double high, n.ConstScalar(4));
  if (!(low >= 0 && low < high && high <= rate / 2.0))
    return n.Fail("edges [", low, ", ", high,
                  "] Hz must satisfy 0 <= lower < upper <= ", rate / 2.0,
                  " (half the sample rate)");
  KILN_ASSIGN_OR_RETURN(int64_t onnx_type, n.Int("output_datatype", 1));
  const std::optional<DType> dtype = DTypeOfOnnx(static_cast<int32_t>(onnx_type));
  if (!dtype) return n.Unsupported("output_datatype ", onnx_type, " is not a kiln dtype");
  // mels + 2 points evenly spaced on the mel scale, mapped back to Hz, floored to DFT bins.
  auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double low_mel = to_mel(low);
  const double step = (to_mel(high) - low_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> edge(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700 * (std::pow(10, (static_cast<double>(i) * step + low_mel) / 2595) - 1);
    edge[i] = static_cast<int64_t>(
        std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate)));
  }
  const int64_t bins = dft_length / 2 + 1;
  KILN_ASSIGN_OR_RETURN(Tensor w, NewTensor(n, *dtype, Shape{bins, mels}));
  auto set = [&](int64_t bin, int64_t mel, double v) {
    if (bin >= 0 && bin < bins) w.SetDouble(bin * mels + mel, v);
  };
  for (int64_t m = 0; m < mels; ++m) {
    const int64_t left = edge[m], centre = edge[m + 1], right = edge[m + 2];
    if (centre == left) set(centre, m, 1);
    for (int64_t j = left; centre > left && j <= centre; ++j)
      set(j, m, static_cast<double>(j - left) / static_cast<double>(centre - left));
    for (int64_t j = centre; j < right; ++j)
      set(j, m, static_cast<double>(right - j) / static_cast<double>(right - centre));
  }
  n.SetOutput(0, n.g().Constant(w));
  return OkStatus();
}

}  // namespace

void AddSignalConverters(ConverterTable& t) {
  t["DFT"] = ConvertDft;
  t["STFT"] = ConvertStft;
  t["MelWeightMatrix"] = ConvertMelWeightMatrix;
  t["HannWindow"] = ConvertHann;
  t["HammingWindow"] = ConvertHamming;
  t["BlackmanWindow"] = ConvertBlackman;
}

}  // namespace kiln::onnx_import
