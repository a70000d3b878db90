// The cuBLASLt call a "gemm" step becomes (runtime/cuda/matmul_call.h): the row-major to
// column-major translation and the simulated device's cuBLASLt (RunMatmulOnHost), checked
// together against a plain row-major product in double for every transpose, batch broadcast,
// epilogue and dtype the compiler emits; and the simulator's load-time range checks.
#include <catch2/catch.hpp>
#include <cmath>

#include "ir/ops/math.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/matmul_call.h"

namespace kiln {
namespace {

struct GemmCase {
  int64_t m = 3, n = 5, k = 4, batch = 1;
  bool trans_a = false, trans_b = false, broadcast_a = false, broadcast_b = false;
  bool bias = false, relu = false, gelu = false;  // gelu: Gelu(approximate = "tanh")
  DType dtype = f32, out_dtype = f32;
};

// Values exact in bf16 (multiples of 1/8 in [-2, 2)), so every dtype computes the same product.
Tensor Values(DType dtype, int64_t count, int64_t seed) {
  Tensor t = *Tensor::Create(f32, Shape{count});
  for (int64_t i = 0; i < count; ++i)
    t.data<float>()[i] = static_cast<float>((i * 7 + seed * 13) % 32 - 16) / 8.0f;
  return t.CastTo(dtype);
}

// A plan with one gemm step over feeds a, b (and bias) into arena buffer c.
Executable GemmPlan(const GemmCase& g) {
  Executable exe;
  auto add = [&](DType dtype, int64_t count, BufferDesc::Kind kind) {
    BufferDesc b;
    b.kind = kind;
    b.type = TensorType{dtype, Shape{count}};
    b.index = static_cast<int>(exe.buffers.size());
    exe.buffers.push_back(b);
    return static_cast<int>(exe.buffers.size()) - 1;
  };
  Step step;
  step.kind = Step::Kind::kLibrary;
  step.callee = "gemm";
  step.inputs = {add(g.dtype, (g.broadcast_a ? 1 : g.batch) * g.m * g.k, BufferDesc::Kind::kFeed),
                 add(g.dtype, (g.broadcast_b ? 1 : g.batch) * g.k * g.n, BufferDesc::Kind::kFeed)};
  if (g.bias) step.inputs.push_back(add(g.out_dtype, g.n, BufferDesc::Kind::kFeed));
  step.outputs = {add(g.out_dtype, g.batch * g.m * g.n, BufferDesc::Kind::kArena)};
  for (auto [key, value] :
       std::vector<std::pair<const char*, int64_t>>{{"m", g.m},
                                                    {"n", g.n},
                                                    {"k", g.k},
                                                    {"batch", g.batch},
                                                    {"stride_a", g.broadcast_a ? 0 : g.m * g.k},
                                                    {"stride_b", g.broadcast_b ? 0 : g.k * g.n},
                                                    {"trans_a", g.trans_a},
                                                    {"trans_b", g.trans_b}})
    step.attrs.Set(key, value);
  if (g.bias || g.relu || g.gelu) {
    step.attrs.Set("bias", int64_t{g.bias});
    step.attrs.Set("post_ops", g.relu   ? std::vector<int64_t>{2}
                               : g.gelu ? std::vector<int64_t>{3}
                                        : std::vector<int64_t>{});
  }
  exe.steps.push_back(step);
  return exe;
}

// Row-major op(A_i) op(B_i) (+ bias, relu) in double (the GELU is applied by the caller).
std::vector<double> Expected(const GemmCase& g, const Tensor& a, const Tensor& b,
                             const Tensor& bias) {
  std::vector<double> c(g.batch * g.m * g.n);
  for (int64_t i = 0; i < g.batch; ++i)
    for (int64_t r = 0; r < g.m; ++r)
      for (int64_t col = 0; col < g.n; ++col) {
        double sum = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const int64_t ai =
              (g.broadcast_a ? 0 : i * g.m * g.k) + (g.trans_a ? p * g.m + r : r * g.k + p);
          const int64_t bi =
              (g.broadcast_b ? 0 : i * g.k * g.n) + (g.trans_b ? col * g.k + p : p * g.n + col);
          sum += a.GetDouble(ai) * b.GetDouble(bi);
        }
        if (g.bias) sum += bias.GetDouble(col);
        if (g.relu) sum = std::max(sum, 0.0);
        c[(i * g.m + r) * g.n + col] = sum;
      }
  return c;
}

void CheckCase(const GemmCase& g) {
  Executable exe = GemmPlan(g);
  const Step& step = exe.steps[0];
  REQUIRE(cuda::IsDeviceGemm(step, exe));
  Result<cuda::MatmulCall> call = cuda::MatmulCallForGemm(step, exe);
  INFO(call.status().ToString());
  REQUIRE(call.ok());
  INFO(call->ToString());
  const Tensor a = Values(g.dtype, exe.buffers[step.inputs[0]].type.shape.NumElements(), 1);
  const Tensor b = Values(g.dtype, exe.buffers[step.inputs[1]].type.shape.NumElements(), 2);
  const Tensor bias = Values(g.out_dtype, g.n, 3);
  Tensor c = *Tensor::Create(g.out_dtype, Shape{g.batch * g.m * g.n});
  const Tensor* by_operand[] = {&a, &b, g.bias ? &bias : &c, &c};
  REQUIRE(call->d_operand == static_cast<int>(step.inputs.size()));
  cuda::RunMatmulOnHost(*call, by_operand[call->a_operand]->raw_data(),
                        by_operand[call->b_operand]->raw_data(), g.bias ? bias.raw_data() : nullptr,
                        c.raw_data(), 2);
  const std::vector<double> want = Expected(g, a, b, bias);
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i);
    // Exact inputs, sums of at most 4 products of multiples of 1/8: exact in f32, then the GELU
    // of that f32 value in f64, rounded once to f32 and once more to a 16-bit output.
    float sum = static_cast<float>(want[i]);
    if (g.gelu) sum = static_cast<float>(GeluTanhValue(sum));
    const double rounded = g.out_dtype == bf16  ? BFloat16ToFloat(FloatToBFloat16(sum))
                           : g.out_dtype == f16 ? HalfToFloat(FloatToHalf(sum))
                                                : sum;
    REQUIRE(c.GetDouble(static_cast<int64_t>(i)) == rounded);
  }
}

TEST_CASE("cuBLASLt calls for gemm steps compute the row-major product", "[cuda][matmul]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int layout = 0; layout < 4; ++layout) {
        GemmCase g;
        g.trans_a = ta;
        g.trans_b = tb;
        g.batch = layout == 0 ? 1 : 3;
        g.broadcast_a = layout == 2;
        g.broadcast_b = layout == 3;
        g.bias = layout % 2 == 1;
        g.relu = layout >= 2;
        CheckCase(g);
        g.relu = false;
        g.gelu = true;
        CheckCase(g);
      }
  for (auto [in, out] :
       std::vector<std::pair<DType, DType>>{{bf16, f32}, {bf16, bf16}, {f16, f32}, {f16, f16}}) {
    GemmCase g;
    g.dtype = in;
    g.out_dtype = out;
    g.batch = 2;
    g.trans_b = true;
    g.bias = true;
    g.relu = true;
    CheckCase(g);
    g.relu = false;
    g.gelu = true;
    CheckCase(g);
  }
}

// 1 + f, f among 0, a quarter, a half and three quarters of TF32's last place (2^-10), every fifth
// negative: TF32 keeps 1, 1, 1 + 2^-10 (a tie, away from zero) and 1 + 2^-10.
double Tf32Probe(int64_t i) {
  const double f = static_cast<double>(i % 4) * std::ldexp(1.0, -12);
  return (i % 5 ? 1.0 : -1.0) * (1.0 + f);
}
double Tf32Rounded(int64_t i) {
  return (i % 5 ? 1.0 : -1.0) * (1.0 + (i % 4 >= 2 ? std::ldexp(1.0, -10) : 0.0));
}

TEST_CASE("cuBLASLt calls with TF32 multiply inputs rounded to 10 mantissa bits",
          "[cuda][matmul]") {
  GemmCase g;
  Executable exe = GemmPlan(g);
  exe.steps[0].attrs.Set("tf32", int64_t{1});
  Result<cuda::MatmulCall> call = cuda::MatmulCallForGemm(exe.steps[0], exe);
  REQUIRE(call.ok());
  CHECK(call->tf32);
  CHECK(call->ToString().find(" tf32") != std::string::npos);
  Tensor a = *Tensor::Create(f32, Shape{g.m * g.k}), b = *Tensor::Create(f32, Shape{g.k * g.n});
  Tensor rounded_a = *Tensor::Create(f32, Shape{g.m * g.k});
  Tensor rounded_b = *Tensor::Create(f32, Shape{g.k * g.n});
  for (int64_t i = 0; i < g.m * g.k; ++i) {
    a.SetDouble(i, Tf32Probe(i));
    rounded_a.SetDouble(i, Tf32Rounded(i));
  }
  for (int64_t i = 0; i < g.k * g.n; ++i) {
    b.SetDouble(i, Tf32Probe(i + 1));
    rounded_b.SetDouble(i, Tf32Rounded(i + 1));
  }
  Tensor c = *Tensor::Create(f32, Shape{g.m * g.n});
  cuda::RunMatmulOnHost(*call, b.raw_data(), a.raw_data(), nullptr, c.raw_data(), 1);
  // The rounded products and their sums are exact in f32.
  const std::vector<double> want = Expected(g, rounded_a, rounded_b, Tensor());
  const std::vector<double> exact = Expected(g, a, b, Tensor());
  int differs = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i);
    REQUIRE(c.GetDouble(static_cast<int64_t>(i)) == want[i]);
    differs += static_cast<float>(exact[i]) != static_cast<float>(want[i]);
  }
  CHECK(differs > 0);  // without TF32 the products would differ
  // 16-bit operands have no TF32: the attribute is ignored.
  g.dtype = bf16;
  Executable bf16_exe = GemmPlan(g);
  bf16_exe.steps[0].attrs.Set("tf32", int64_t{1});
  Result<cuda::MatmulCall> bf16_call = cuda::MatmulCallForGemm(bf16_exe.steps[0], bf16_exe);
  REQUIRE(bf16_call.ok());
  CHECK_FALSE(bf16_call->tf32);
}

TEST_CASE("cuBLASLt calls: f64 and empty products stay off the device", "[cuda][matmul]") {
  GemmCase g;
  g.dtype = g.out_dtype = f64;
  Executable exe = GemmPlan(g);
  CHECK_FALSE(cuda::IsDeviceGemm(exe.steps[0], exe));
  CHECK_FALSE(cuda::MatmulCallForGemm(exe.steps[0], exe).ok());
  g = GemmCase();
  g.k = 0;
  exe = GemmPlan(g);
  CHECK_FALSE(cuda::IsDeviceGemm(exe.steps[0], exe));
}

TEST_CASE("cuda-sim: a matmul whose operand lies outside its allocation is refused", "[cuda]") {
  GemmCase g;
  g.batch = 2;
  g.bias = true;
  Executable exe = GemmPlan(g);
  Result<cuda::MatmulCall> call = cuda::MatmulCallForGemm(exe.steps[0], exe);
  REQUIRE(call.ok());
  std::unique_ptr<cuda::Device> device = cuda::MakeSimulatedDevice(1);
  auto allocate = [&](int64_t bytes) {
    Result<cuda::DevicePtr> p = device->Allocate(bytes);
    REQUIRE(p.ok());
    return *p;
  };
  cuda::MatmulOperands ops;
  ops.a = allocate(4 * g.k * g.n * g.batch);  // the step's B
  ops.b = allocate(4 * g.m * g.k * g.batch);
  ops.bias = allocate(4 * g.n);
  ops.d = allocate(4 * g.m * g.n * g.batch);
  REQUIRE(device->PrepareMatmul(*call, ops).ok());
  for (cuda::DevicePtr* p : {&ops.a, &ops.b, &ops.bias, &ops.d}) {
    cuda::MatmulOperands shifted = ops;
    *(&shifted.a + (p - &ops.a)) += 4;  // one element past its allocation's end
    Result<std::shared_ptr<cuda::PreparedMatmul>> prepared = device->PrepareMatmul(*call, shifted);
    REQUIRE_FALSE(prepared.ok());
    CHECK_THAT(prepared.error().message(), Catch::Contains("not inside one allocation") &&
                                               Catch::Contains("matmul m=5 n=3 k=4"));
  }
  cuda::MatmulCall bad = *call;
  bad.lda = 1;  // smaller than A's rows
  CHECK_FALSE(cuda::SpansOf(bad).ok());
}

}  // namespace
}  // namespace kiln
