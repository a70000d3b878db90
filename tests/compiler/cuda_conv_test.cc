// Convolutions on the CUDA device through cuDNN (runtime/cuda/conv_call.h): the simulated device's
// cuDNN computes each call from its descriptor, so a wrong translation of a step (its operands,
// groups, strides, dilations, asymmetric padding, its fused bias, residual and ReLU, the two
// backward convolutions) fails here; the same plans with cuDNN off run the steps' generated
// kernels, which must agree too; and a convolution the device cannot prepare falls back to its
// kernel.
#include <catch2/catch.hpp>

#include "compiler/cuda_compiler.h"
#include "ir/builder.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "passes/autodiff.h"
#include "runtime/cuda/conv_call.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/cudnn_api.h"
#include "runtime/session.h"
#include "tests/compiler/cuda_sim_testing.h"
#include "tests/testing/differential.h"
#include "tests/testing/forwarding_device.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

struct Geometry {
  std::vector<int64_t> x, w;
  Conv2DOptions options;
  bool bias, residual, relu;
};

// relu(conv(x, w) + b + r) (as the geometry has them), its gradients with respect to x and w
// through a weighted sum, in `dtype`.
struct ConvGraph {
  Graph graph;
  FeedList feeds;
  std::vector<TensorName> fetches = {"y", "dx", "dw"};
  ConvGraph(const Geometry& geo, DType dtype) {
    GraphBuilder g;
    Value x = g.Placeholder("x", dtype, Shape(geo.x));
    Value w = g.Placeholder("w", dtype, Shape(geo.w));
    Value y = Conv2D(x, w, geo.options);
    const Shape y_shape = y.type().shape;
    if (geo.bias) y = BiasAdd(y, g.Placeholder("b", dtype, Shape{geo.w[0]}));
    if (geo.residual) y = Add(y, g.Placeholder("r", dtype, y_shape));
    if (geo.relu) y = Relu(y);
    g.Output("y", y);
    Value weights = g.Placeholder("weights", dtype, y_shape);
    Result<std::vector<Value>> grads = Gradients({Sum(Mul(y, weights), {})}, {x, w});
    REQUIRE(grads.ok());
    g.Output("dx", (*grads)[0]);
    g.Output("dw", (*grads)[1]);
    Result<Graph> built = g.Build();
    INFO(built.status().ToString());
    REQUIRE(built.ok());
    graph = std::move(*built);
    auto random = [&](const Shape& shape, uint64_t seed) {
      return testing::RandomTensor(shape, seed).CastTo(dtype);
    };
    feeds = {{"x", random(Shape(geo.x), 1)},
             {"w", random(Shape(geo.w), 2)},
             {"weights", random(y_shape, 3)}};
    if (geo.bias) feeds.push_back({"b", random(Shape{geo.w[0]}, 4)});
    if (geo.residual) feeds.push_back({"r", random(y_shape, 5)});
  }
};

using testing::CompileSim;

// Runs the plan on `device` with cuDNN on or off; returns the outputs and how many convolution
// steps went through cuDNN.
std::pair<std::vector<Tensor>, int> RunOn(cuda::Device& device, const RunPlan& plan, bool cudnn) {
  cuda::ProgramOptions options;
  options.cudnn = cudnn;
  Result<std::unique_ptr<cuda::CudaProgram>> program =
      cuda::CudaProgram::Load(CompileSim(plan), device, 1, nullptr, options);
  INFO(program.status().ToString());
  REQUIRE(program.ok());
  Result<std::vector<Tensor>> feeds = FeedsOf((*program)->executable(), plan);
  REQUIRE(feeds.ok());
  VariableStore variables;
  std::map<std::string, uint64_t> counters;
  Result<std::vector<Tensor>> out = (*program)->Run(*feeds, variables, counters);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  return {*out, (*program)->cudnn_steps()};
}

void CheckClose(const std::vector<Tensor>& expected, const std::vector<Tensor>& got,
                const std::vector<TensorName>& fetches) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string why;
    INFO(fetches[i].str() << ": " << why);
    const bool close = testing::CloseForDType(expected[i], got[i], &why);
    INFO(why);
    CHECK(close);
  }
}

TEST_CASE(
    "cuda-sim: convolutions and their gradients run through cuDNN calls, and match the "
    "reference and the generated kernels",
    "[cuda][cudnn]") {
  const Geometry geometry =
      GENERATE(Geometry{{2, 3, 7, 6}, {4, 3, 3, 3}, {.pads = {1, 1, 1, 1}}, true, false, true},
               Geometry{{2, 4, 9, 8},
                        {6, 2, 3, 2},
                        {.strides = {2, 1}, .pads = {0, 1, 2, 0}, .dilations = {2, 1}, .groups = 2},
                        true,
                        true,
                        true},
               Geometry{{1, 6, 5, 5},
                        {6, 1, 3, 3},
                        {.strides = {1, 2}, .pads = {1, 1, 1, 1}, .groups = 6},
                        false,
                        false,
                        false},
               Geometry{{2, 8, 6, 6}, {5, 8, 1, 1}, {.strides = {2, 2}}, false, true, false});
  const DType dtype = GENERATE(f32, bf16, f16);
  INFO("x " << Shape(geometry.x).ToString() << ", w " << Shape(geometry.w).ToString() << ", "
            << DTypeName(dtype));
  ConvGraph conv(geometry, dtype);
  Session reference(conv.graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(conv.feeds, conv.fetches);
  REQUIRE(expected.ok());
  Result<RunPlan> plan = reference.Plan(conv.feeds, conv.fetches);
  REQUIRE(plan.ok());
  std::unique_ptr<cuda::Device> device = cuda::MakeSimulatedDevice(2);
  auto [with_cudnn, cudnn_steps] = RunOn(*device, *plan, /*cudnn=*/true);
  auto [with_kernels, no_steps] = RunOn(*device, *plan, /*cudnn=*/false);
  CHECK(cudnn_steps == 3);  // the forward convolution and both gradients
  CHECK(no_steps == 0);
  if (dtype == f32) {
    CheckClose(*expected, with_cudnn, conv.fetches);
    CheckClose(*expected, with_kernels, conv.fetches);
  } else {
    // In 16 bits the reference rounds after every op, the device once per fused step: compare
    // the two device paths, which round alike.
    CheckClose(with_kernels, with_cudnn, conv.fetches);
  }
}

// A device whose cuDNN cannot run any convolution (as a GPU without cuDNN, or with too old a one).
class NoCudnn : public testing::ForwardingDevice {
 public:
  Result<std::shared_ptr<cuda::PreparedConv>> PrepareConv(const cuda::ConvCall& call,
                                                          const cuda::ConvOperands&) override {
    return MakeError(ErrorCode::kFailedPrecondition, "no cuDNN here (the test's device)");
  }
};

TEST_CASE("cuda-sim: a convolution the device cannot run through cuDNN runs its generated kernel",
          "[cuda][cudnn]") {
  ConvGraph conv(Geometry{{2, 3, 7, 6}, {4, 3, 3, 3}, {.pads = {1, 1, 1, 1}}, true, true, true},
                 f32);
  Session reference(conv.graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(conv.feeds, conv.fetches);
  REQUIRE(expected.ok());
  Result<RunPlan> plan = reference.Plan(conv.feeds, conv.fetches);
  REQUIRE(plan.ok());
  NoCudnn device;
  cuda::ProgramOptions options;
  Result<std::unique_ptr<cuda::CudaProgram>> program =
      cuda::CudaProgram::Load(CompileSim(*plan), device, 1, nullptr, options);
  REQUIRE(program.ok());
  CHECK((*program)->cudnn_steps() == 0);
  REQUIRE((*program)->cudnn_fallbacks().size() == 3);
  CHECK_THAT((*program)->cudnn_fallbacks()[0], Catch::Contains("no cuDNN here"));
  Result<std::vector<Tensor>> feeds = FeedsOf((*program)->executable(), *plan);
  REQUIRE(feeds.ok());
  VariableStore variables;
  std::map<std::string, uint64_t> counters;
  Result<std::vector<Tensor>> out = (*program)->Run(*feeds, variables, counters);
  REQUIRE(out.ok());
  CheckClose(*expected, *out, conv.fetches);
}

TEST_CASE(
    "cuDNN: a library of the same major version and at least the headers' minor one is "
    "usable",
    "[cudnn]") {
  CHECK(cuda::CudnnVersionUsable(91900, 91900));
  CHECK(cuda::CudnnVersionUsable(91900, 92003));
  CHECK_FALSE(cuda::CudnnVersionUsable(91900, 91302));   // older than the headers
  CHECK_FALSE(cuda::CudnnVersionUsable(91900, 100100));  // another major version
  CHECK(cuda::CudnnVersionString(91302) == "9.13.2");
  // kiln's calls need only the 9.0 API: PyTorch's older 9.x wheels serve.
  CHECK(cuda::CudnnVersionUsable(cuda::kCudnnApiVersion, 91302));
  CHECK_FALSE(cuda::CudnnVersionUsable(cuda::kCudnnApiVersion, 81000));
}

}  // namespace
}  // namespace kiln
