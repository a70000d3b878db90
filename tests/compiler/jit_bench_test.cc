// Numbers for the report, not tests (hidden tags): JIT compile time, the speed of a 1M-element
// add+relu kernel, and the accuracy of the f32 transcendental approximations over wide ranges.
//   kiln_tests "[.jit-bench]"     kiln_tests "[.jit-accuracy]"
#include <bit>
#include <catch2/catch.hpp>
#include <cstdlib>

#include "tests/compiler/jit_testing.h"

namespace kiln::compiler::testing {
namespace {

// Numbers for the report, not a test: `kiln_tests "[.jit-bench]"`.
TEST_CASE("JIT benchmark: compile time and a 1M-element add+relu", "[.jit-bench]") {
  KernelSpec spec;
  spec.name = "add_relu";
  spec.shape = Shape{1 << 20};
  spec.inputs = {{DType::kF32, spec.shape}, {DType::kF32, spec.shape}};
  spec.ops = {{"Add", {0, 1}, {}, DType::kF32, "add"}, {"Relu", {2}, {}, DType::kF32, "relu"}};
  spec.outputs = {3};
  for (int n : {1, 10, 100}) {
    std::vector<KernelSpec> specs;
    std::mt19937_64 rng(n);
    for (int i = 0; i < n; ++i) specs.push_back(RandomFusedSpec(rng, i));
    std::string text = *EmitKernelModule(specs);
    double s = BestSeconds([&] { REQUIRE(JitModule::Compile(text).ok()); }, 2);
    WARN("compile of " << n << " random fused kernels: " << s * 1e3 << " ms");
  }
  std::unique_ptr<JitModule> jit = CompileSpecs({spec});
  std::vector<Tensor> ins = RandomInputs(spec, 1);
  std::vector<Tensor> outs = {Tensor(DType::kF32, spec.shape)};
  PackedKernel fn = *jit->Lookup("add_relu");
  double s = BestSeconds([&] { Call(fn, 0, 1 << 20, ins, outs); }, 50);
  const float* a = ins[0].data<float>();
  const float* b = ins[1].data<float>();
  float* y = outs[0].data<float>();
  double cpp = BestSeconds(
      [&] {
        for (int i = 0; i < (1 << 20); ++i) {
          float v = a[i] + b[i];
          y[i] = v > 0 || std::isnan(v) ? v : 0.0f;
        }
      },
      50);
  WARN("1M add+relu (" << jit->cpu() << "): JIT " << s * 1e6 << " us = "
                       << 12.0 * (1 << 20) / s / 1e9 << " GB/s, a C++ loop " << cpp * 1e6 << " us");
}

// Distance in float32 units in the last place.
int64_t UlpDistance(float a, float b) {
  auto key = [](float f) {
    int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::llabs(key(a) - key(b));
}

TEST_CASE("JIT accuracy of the f32 transcendental approximations", "[.jit-accuracy]") {
  struct Sweep {
    OpCase c;
    double lo, hi;
    bool log_uniform;
  };
  auto op = [](const char* name, AttrMap attrs = {}) {
    return OpCase{name, {DType::kF32}, DType::kF32, std::move(attrs)};
  };
  std::vector<Sweep> sweeps = {{op("Exp"), -87, 88, false},
                               {op("Log"), 1e-30, 1e30, true},
                               {op("Log"), 0.5, 2, false},
                               {op("Tanh"), -10, 10, false},
                               {op("Erf"), -5, 5, false},
                               {op("Sin"), -10, 10, false},
                               {op("Cos"), -10, 10, false},
                               {op("Sin"), -1000, 1000, false},
                               {op("Sigmoid"), -30, 30, false},
                               {op("Elu", Attrs({{"alpha", 1.0}})), -10, 10, false},
                               {op("Gelu", Attrs({{"approximate", "none"}})), -10, 10, false},
                               {op("Gelu", Attrs({{"approximate", "tanh"}})), -10, 10, false}};
  const int64_t n = 1 << 18;
  std::vector<KernelSpec> specs;
  for (size_t i = 0; i < sweeps.size(); ++i)
    specs.push_back(OneOpSpec("s" + std::to_string(i), sweeps[i].c, Shape{n}, {Shape{n}}));
  std::unique_ptr<JitModule> jit = CompileSpecs(specs);
  for (size_t i = 0; i < sweeps.size(); ++i) {
    const Sweep& sw = sweeps[i];
    Tensor x(DType::kF32, Shape{n});
    for (int64_t k = 0; k < n; ++k) {
      double t = (k + 0.5) / n;
      x.data<float>()[k] = static_cast<float>(
          sw.log_uniform ? std::exp(std::log(sw.lo) + t * (std::log(sw.hi) - std::log(sw.lo)))
                         : sw.lo + t * (sw.hi - sw.lo));
    }
    Tensor want = ReferenceOp(sw.c, {x});
    Tensor got = RunSpec(*jit, specs[i], {x})[0];
    double max_abs = 0, max_rel = 0;
    int64_t max_ulp = 0;
    for (int64_t k = 0; k < n; ++k) {
      float w = want.data<float>()[k], g = got.data<float>()[k];
      double err = std::fabs(double(w) - g);
      max_abs = std::max(max_abs, err);
      if (std::fabs(w) > 1e-6) max_rel = std::max(max_rel, err / std::fabs(w));
      if (std::fabs(w) > 1e-30) max_ulp = std::max(max_ulp, UlpDistance(w, g));
    }
    WARN(sw.c.Label() << " on [" << sw.lo << ", " << sw.hi << "]: max abs " << max_abs
                      << ", max rel (|y| > 1e-6) " << max_rel << ", max ulp " << max_ulp);
  }
}

}  // namespace
}  // namespace kiln::compiler::testing
