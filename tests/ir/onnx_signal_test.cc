// ONNX DFT and STFT imports (ir/onnx/convert_signal.cc) against a direct sum with std::complex in
// float64: real and complex signals, zero padding and cutting by dft_length, onesided, inverse,
// and STFT's frames and window.
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <numbers>

#include "runtime/session.h"
#include "tests/ir/onnx_model_builder.h"

using namespace kiln;
using testing::OnnxModel;
using Complex = std::complex<double>;

namespace {

// sum_t x[t] e^{-+2 pi i k t / length} (/ length when inverse), x zero-padded or cut to length.
std::vector<Complex> DirectDft(const std::vector<Complex>& x, int64_t length, bool inverse) {
  std::vector<Complex> y(static_cast<size_t>(length));
  for (int64_t k = 0; k < length; ++k)
    for (int64_t t = 0; t < std::min<int64_t>(length, static_cast<int64_t>(x.size())); ++t) {
      const double angle = (inverse ? 2 : -2) * std::numbers::pi * static_cast<double>(k * t) /
                           static_cast<double>(length);
      y[k] += x[t] * std::polar(1.0, angle) / (inverse ? static_cast<double>(length) : 1.0);
    }
  return y;
}

Tensor Run(const OnnxModel& m, const FeedList& feeds) {
  Session s(testing::Import(m), {.backend = "reference"});
  auto out = s.Run(feeds, {"y"});
  INFO((out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  return out->at(0);
}

void CheckComplex(const Tensor& y, const std::vector<Complex>& want) {
  REQUIRE(y.num_elements() == 2 * static_cast<int64_t>(want.size()));
  for (size_t k = 0; k < want.size(); ++k) {
    CHECK(y.GetDouble(2 * k) == Approx(want[k].real()).margin(1e-5));
    CHECK(y.GetDouble(2 * k + 1) == Approx(want[k].imag()).margin(1e-5));
  }
}

}  // namespace

TEST_CASE("ONNX DFT against the direct sum: real, complex, padded, onesided, inverse", "[onnx]") {
  const std::vector<Complex> signal = {{1, 0.5}, {-2, 0}, {0.25, 1}, {3, -1}, {0.5, 0.5}};
  std::vector<float> interleaved, real;
  for (const Complex& c : signal) {
    interleaved.insert(interleaved.end(),
                       {static_cast<float>(c.real()), static_cast<float>(c.imag())});
    real.push_back(static_cast<float>(c.real()));
  }
  auto model = [](int64_t channels, int64_t length, bool inverse, bool onesided) {
    OnnxModel m;
    m.Input("x", 1, {1, 5, channels}).Output("y");
    std::vector<std::string> inputs = {"x"};
    if (length > 0) {
      m.Initializer("n", Tensor::Scalar<int64_t>(length));
      inputs.push_back("n");
    }
    onnx::NodeProto* n = m.Node("DFT", inputs, {"y"});
    OnnxModel::AttrInt(n, "inverse", inverse);
    OnnxModel::AttrInt(n, "onesided", onesided);
    return m;
  };
  Tensor complex_x = Tensor::FromVector<float>({1, 5, 2}, interleaved);
  CheckComplex(Run(model(2, 0, false, false), {{"x", complex_x}}), DirectDft(signal, 5, false));
  CheckComplex(Run(model(2, 8, false, false), {{"x", complex_x}}), DirectDft(signal, 8, false));
  CheckComplex(Run(model(2, 3, false, false), {{"x", complex_x}}), DirectDft(signal, 3, false));
  CheckComplex(Run(model(2, 0, true, false), {{"x", complex_x}}), DirectDft(signal, 5, true));
  std::vector<Complex> real_signal;
  for (float r : real) real_signal.push_back({r, 0});
  std::vector<Complex> half = DirectDft(real_signal, 6, false);
  half.resize(4);  // 6 / 2 + 1 bins
  CheckComplex(Run(model(1, 6, false, true), {{"x", Tensor::FromVector<float>({1, 5, 1}, real)}}),
               half);
}

TEST_CASE("ONNX STFT: windowed frames, each transformed", "[onnx]") {
  OnnxModel m;
  m.Input("x", 1, {1, 10, 1}).Output("y");
  m.Initializer("step", Tensor::Scalar<int64_t>(3));
  m.Initializer("window", Tensor::FromVector<float>({4}, {0.5f, 1, 1, 0.5f}));
  m.Node("STFT", {"x", "step", "window"}, {"y"});
  std::vector<float> x(10);
  for (int i = 0; i < 10; ++i) x[i] = static_cast<float>(std::sin(i) + 0.1 * i);
  Tensor y = Run(m, {{"x", Tensor::FromVector<float>({1, 10, 1}, x)}});
  REQUIRE(y.shape() == Shape{1, 3, 3, 2});  // (10 - 4) / 3 + 1 frames, 4 / 2 + 1 bins
  const double window[] = {0.5, 1, 1, 0.5};
  for (int f = 0; f < 3; ++f) {
    std::vector<Complex> frame;
    for (int j = 0; j < 4; ++j) frame.push_back({window[j] * x[3 * f + j], 0});
    std::vector<Complex> want = DirectDft(frame, 4, false);
    for (int k = 0; k < 3; ++k) {
      CHECK(y.GetDouble((f * 3 + k) * 2) == Approx(want[k].real()).margin(1e-5));
      CHECK(y.GetDouble((f * 3 + k) * 2 + 1) == Approx(want[k].imag()).margin(1e-5));
    }
  }
}

TEST_CASE("ONNX DFT and STFT refuse a onesided transform of a complex signal", "[onnx]") {
  OnnxModel dft;
  dft.Input("x", 1, {1, 5, 2}).Output("y");
  OnnxModel::AttrInt(dft.Node("DFT", {"x"}, {"y"}, "dft"), "onesided", 1);
  Result<Graph> g = ImportOnnxFromBytes(dft.Bytes(), "", "dft.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().message(), Catch::Contains("a onesided DFT needs a real signal"));
  OnnxModel stft;
  stft.Input("x", 1, {1, 10, 2}).Output("y");
  stft.Initializer("step", Tensor::Scalar<int64_t>(3));
  stft.Initializer("length", Tensor::Scalar<int64_t>(4));
  stft.Node("STFT", {"x", "step", "", "length"}, {"y"}, "stft");
  g = ImportOnnxFromBytes(stft.Bytes(), "", "stft.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().message(), Catch::Contains("a onesided STFT needs a real signal"));
}
