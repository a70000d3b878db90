// The cuda backends: the placement pass on hand-made plans, the simulated device (generated
// kernels, cuBLASLt, host steps) against the reference executor, and what the simulator must catch
// (a missing copy reads poisoned memory, a launch argument outside its buffer, a kernel given host
// memory). The whole op suite and the training tests also run on cuda-sim through
// tests/testing/differential.h.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "compiler/cpu_compiler.h"
#include "compiler/cuda_compiler.h"
#include "compiler/mlir/jit.h"
#include "compiler/placement.h"
#include "ir/builder.h"
#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "passes/autodiff.h"
#include "runtime/checkpoint.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/cuda/matmul_call.h"
#include "runtime/executable_proto.h"
#include "runtime/session.h"
#include "tests/compiler/cuda_sim_testing.h"
#include "tests/testing/differential.h"
#include "tests/testing/forwarding_device.h"
#include "tests/testing/gradcheck_op.h"
#include "tests/testing/temp_path.h"

namespace kiln {
namespace {

Tensor Random(Shape shape, uint64_t seed) { return testing::RandomTensor(shape, seed).CastTo(f32); }

// x -> 2x + b -> relu (a device kernel) -> MatMul w (cuBLASLt on the device) -> max pooling over
// pairs of columns (a generated kernel on the device) -> rows in the order computed from a feed
// (299 - order, a device kernel; a Gather of computed indices: a host step) -> softmax (a device
// row reduction); fetches y (the relu) and s.
struct MixedGraph {
  Graph graph;
  FeedList feeds;
  MixedGraph() {
    GraphBuilder g;
    Value x = g.Placeholder("x", f32, {-1, 8});
    Value b = g.Placeholder("b", f32, {8});
    Value w = g.Placeholder("w", f32, {8, 5});
    Value y = Relu(Add(Mul(x, g.Scalar(2.0)), b));
    g.Output("y", y);
    Pool2DOptions pairs;
    pairs.kernel = {2, 1};
    pairs.strides = {1, 1};
    Value pooled = MaxPool2D(Reshape(MatMul(y, w), {-1, 1, 5, 1}), pairs);
    Value order = g.Placeholder("order", i64, {300});
    Value rows = Sub(g.Scalar(299, i64), order);
    g.Output("s", Softmax(Gather(Reshape(pooled, {-1, 4}), rows)));
    graph = *g.Build();
    std::vector<int64_t> ascending(300);
    for (int64_t i = 0; i < 300; ++i) ascending[i] = i;
    feeds = {{"x", Random(Shape{300, 8}, 1)},
             {"b", Random(Shape{8}, 2)},
             {"w", Random(Shape{8, 5}, 3)},
             {"order", Tensor::FromVector(Shape{300}, ascending)}};
    planner = std::make_unique<Session>(graph, SessionOptions{.backend = "reference"});
  }
  std::unique_ptr<Session> planner;  // its plans point into its graph
  RunPlan Plan() const {
    Result<RunPlan> plan = planner->Plan(feeds, {"y", "s"});
    REQUIRE(plan.ok());
    return *plan;
  }
  std::vector<Tensor> Expected() const {
    Session reference(graph, SessionOptions{.backend = "reference"});
    Result<std::vector<Tensor>> out = reference.Run(feeds, {"y", "s"});
    REQUIRE(out.ok());
    return *out;
  }
};

using testing::CompileSim;

// The simulated device's values of `fetches` against `oracle`'s (another backend), each within
// its dtype's tolerance.
void CheckSimAgainst(const std::string& oracle, const Graph& graph, const FeedList& feeds,
                     const std::vector<TensorName>& fetches) {
  Session want_session(graph, SessionOptions{.backend = oracle});
  Session sim(graph, SessionOptions{.backend = "cuda-sim"});
  Result<std::vector<Tensor>> want = want_session.Run(feeds, fetches);
  Result<std::vector<Tensor>> got = sim.Run(feeds, fetches);
  INFO(want.status().ToString() << " / " << got.status().ToString());
  REQUIRE(want.ok());
  REQUIRE(got.ok());
  for (size_t i = 0; i < fetches.size(); ++i) {
    std::string why;
    const bool close = testing::CloseForDType((*want)[i], (*got)[i], &why);
    INFO(fetches[i].str() << ": " << why);
    CHECK(close);
  }
}

std::vector<Tensor> Feeds(const Executable& exe, const RunPlan& plan) {
  Result<std::vector<Tensor>> feeds = FeedsOf(exe, plan);
  REQUIRE(feeds.ok());
  return *feeds;
}

// Loads `compiled` on a fresh simulated device and runs it once on `plan`'s feeds.
std::vector<Tensor> RunOnSimulator(CompiledPlan compiled, const RunPlan& plan) {
  std::unique_ptr<cuda::Device> device = cuda::MakeSimulatedDevice(1);
  Result<std::unique_ptr<cuda::CudaProgram>> program =
      cuda::CudaProgram::Load(std::move(compiled), *device, 1);
  INFO(program.status().ToString());
  REQUIRE(program.ok());
  VariableStore variables;
  std::map<std::string, uint64_t> counters;
  Result<std::vector<Tensor>> out =
      (*program)->Run(Feeds((*program)->executable(), plan), variables, counters);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  return *out;
}

// The error of loading `compiled` on the simulated device, which must refuse it.
std::string LoadError(CompiledPlan compiled) {
  std::unique_ptr<cuda::Device> device = cuda::MakeSimulatedDevice(1);
  Result<std::unique_ptr<cuda::CudaProgram>> program =
      cuda::CudaProgram::Load(std::move(compiled), *device, 1);
  REQUIRE_FALSE(program.ok());
  return program.error().message();
}

TEST_CASE("placement: a copy before each read on the other side, fetches back on the host",
          "[cuda]") {
  Executable exe;
  auto buffer = [&](BufferDesc::Kind kind, const std::string& name) {
    BufferDesc b;
    b.kind = kind;
    b.type = TensorType{f32, Shape{4}};
    b.index = 0;
    b.tensor = name;
    exe.buffers.push_back(b);
    return static_cast<int>(exe.buffers.size()) - 1;
  };
  const int feed = buffer(BufferDesc::Kind::kFeed, "x");
  const int constant = buffer(BufferDesc::Kind::kConstant, "c");
  const int a = buffer(BufferDesc::Kind::kArena, "a");
  const int m = buffer(BufferDesc::Kind::kArena, "m");
  const int z = buffer(BufferDesc::Kind::kArena, "z");
  auto step = [&](Step::Kind kind, const std::string& callee, std::vector<int> in, int out) {
    Step s;
    s.kind = kind;
    s.callee = callee;
    s.inputs = std::move(in);
    s.outputs = {out};
    exe.steps.push_back(s);
  };
  step(Step::Kind::kKernel, "k0", {feed, constant}, a);  // device: x up, c already there
  step(Step::Kind::kLibrary, "conv2d", {a, a}, m);       // host: a down (once)
  step(Step::Kind::kKernel, "k1", {m, a}, z);            // device: m up, a still valid there
  exe.fetches = {z, a};                                  // z down; a valid on both sides
  compiler::PlacementStats stats = compiler::PlaceSteps(exe, compiler::PlaceOnDevice);
  CHECK(stats.device_steps == 2);
  CHECK(stats.host_steps == 1);
  CHECK(stats.copies == 4);
  CHECK(stats.copy_bytes == 4 * 16);
  std::string listing;
  for (const Step& s : exe.steps)
    listing += std::string(s.on_device ? "device " : "") + s.callee + " %" +
               std::to_string(s.inputs.empty() ? -1 : s.inputs[0]) + "\n";
  CHECK(listing ==
        "to_device %0\n"
        "device k0 %0\n"
        "to_host %2\n"
        "conv2d %2\n"
        "to_device %3\n"
        "device k1 %3\n"
        "to_host %4\n");
}

TEST_CASE(
    "cuda-sim: kernels, pooling and a cuBLASLt MatMul on the device, a Gather on the host, "
    "copies between",
    "[cuda]") {
  MixedGraph m;
  RunPlan plan = m.Plan();
  CompiledPlan compiled = CompileSim(plan);
  const Executable& exe = compiled.executable;
  INFO(exe.ToString());
  int kernels = 0, copies = 0;
  std::string where;
  for (const Step& s : exe.steps) {
    kernels += s.on_device && s.kind == Step::Kind::kKernel;
    copies += s.callee == "to_device" || s.callee == "to_host";
    if (s.callee == "gemm" || s.callee == "Gather" || s.callee.rfind("max_pool2d", 0) == 0)
      where += s.callee.substr(0, 10) + (s.on_device ? " device\n" : " host\n");
  }
  CHECK(where == "gemm device\nmax_pool2d device\nGather host\n");
  CHECK(kernels == 4);  // the two elementwise kernels, the pooling and the softmax
  CHECK(copies >= 4);   // x and b up, the pooled down, the gathered up, y and s down
  REQUIRE(exe.device_kernels.size() == 4);
  for (const DeviceKernel& k : exe.device_kernels) CHECK(!k.launches.empty());
  // The relu's kernel over 300 x 8 elements: one dimension, 256 threads a block.
  const DeviceKernel* relu = nullptr;
  for (const Step& s : exe.steps)
    if (s.kind == Step::Kind::kKernel && s.node.name.find("Relu") != std::string::npos)
      relu = exe.FindDeviceKernel(s.callee);
  REQUIRE(relu);
  const KernelLaunch& first = relu->launches[0];
  CHECK(first.block[0] == 256);
  CHECK(first.grid[0] == (300 * 8 + 255) / 256);

  std::vector<Tensor> expected = m.Expected();
  Session session(m.graph, SessionOptions{.backend = "cuda-sim"});
  for (int run = 0; run < 2; ++run) {  // the second run reuses the loaded program
    Result<std::vector<Tensor>> out = session.Run(m.feeds, {"y", "s"});
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    for (size_t i = 0; i < expected.size(); ++i) {
      std::string why;
      const bool close = testing::CloseForDType(expected[i], (*out)[i], &why);
      INFO(why);
      CHECK(close);
    }
  }
}

TEST_CASE("cuda-sim: a missing copy to the device reads poisoned memory (NaN)", "[cuda]") {
  MixedGraph m;
  RunPlan plan = m.Plan();
  CompiledPlan compiled = CompileSim(plan);
  std::vector<Step>& steps = compiled.executable.steps;
  const size_t before = steps.size();
  // Drop the upload of the feed x: the first kernel then reads its device twin, never written.
  REQUIRE(steps[0].callee == "to_device");
  REQUIRE(compiled.executable.buffers[steps[0].inputs[0]].tensor == "x:0");
  steps.erase(steps.begin());
  REQUIRE(steps.size() == before - 1);
  std::vector<Tensor> out = RunOnSimulator(std::move(compiled), plan);
  for (const Tensor& t : out)  // y = relu(2x + b) and everything after it
    for (int64_t i = 0; i < t.num_elements(); ++i) REQUIRE(std::isnan(t.GetDouble(i)));
}

TEST_CASE("cuda-sim: a placed plan round-trips through its proto and runs bitwise the same",
          "[cuda]") {
  MixedGraph m;
  RunPlan plan = m.Plan();
  CompiledPlan compiled = CompileSim(plan);
  std::string bytes;
  REQUIRE(ExecutableToProto(compiled.executable).SerializeToString(&bytes));
  proto::ExecutableProto parsed;
  REQUIRE(parsed.ParseFromString(bytes));
  Result<Executable> back = ExecutableFromProto(parsed);
  REQUIRE(back.ok());
  CHECK(back->ToString() == compiled.executable.ToString());
  CHECK(back->ToString().find("launch ") != std::string::npos);
  std::vector<std::vector<Tensor>> outs;
  for (CompiledPlan p : {compiled, CompiledPlan{*back, compiled.kernels, ""}})
    outs.push_back(RunOnSimulator(std::move(p), plan));
  for (size_t i = 0; i < outs[0].size(); ++i) CHECK(outs[0][i].BitwiseEquals(outs[1][i]));
}

TEST_CASE("cuda-sim: a launch argument larger than its buffer is refused at load", "[cuda]") {
  MixedGraph m;
  CompiledPlan compiled = CompileSim(m.Plan());
  KernelLaunch& launch = compiled.executable.device_kernels[0].launches[0];
  for (KernelLaunch::Arg& arg : launch.args)
    if (arg.operand >= 0) {
      arg.dims[0] *= 2;
      break;
    }
  CHECK_THAT(LoadError(std::move(compiled)), Catch::Contains("spans"));
}

TEST_CASE("cuda-sim: a launch outside CUDA's grid and block limits is refused at load", "[cuda]") {
  MixedGraph m;
  for (int64_t bad : {int64_t{2048}, int64_t{0}}) {
    CompiledPlan compiled = CompileSim(m.Plan());
    compiled.executable.device_kernels[0].launches[0].block[0] = bad;
    CHECK_THAT(LoadError(std::move(compiled)), Catch::Contains("outside CUDA's limits"));
  }
}

TEST_CASE("cuda-sim: a kernel given host memory, or a copy out of range, fails", "[cuda]") {
  MixedGraph m;
  CompiledPlan compiled = CompileSim(m.Plan());
  std::unique_ptr<cuda::Device> device = cuda::MakeSimulatedDevice(1);
  Result<std::shared_ptr<cuda::DeviceCode>> code = device->Load(compiled);
  REQUIRE(code.ok());
  const KernelLaunch& launch = compiled.executable.device_kernels[0].launches[0];
  std::vector<float> host(4096);
  std::vector<cuda::LaunchOperand> operands(8,
                                            {reinterpret_cast<cuda::DevicePtr>(host.data()), 16});
  Status st = device->Launch(**code, launch, operands);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message().find("not inside one allocation") != std::string::npos);
  Result<cuda::DevicePtr> p = device->Allocate(64);
  REQUIRE(p.ok());
  CHECK(device->ToDevice(*p, host.data(), 64).ok());
  CHECK_FALSE(device->ToDevice(*p + 32, host.data(), 64).ok());
  CHECK_FALSE(device->ToHost(host.data(), *p, 65).ok());
  device->Free(*p);
  CHECK_FALSE(device->ToHost(host.data(), *p, 4).ok());
}

TEST_CASE("cuda-sim: wide rows reduce across a block (one per row) and match the reference",
          "[cuda]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 700});
  Value scale = g.Placeholder("scale", f32, {700});
  g.Output("softmax", Softmax(x));
  g.Output("layernorm", LayerNorm(x, scale, scale));
  g.Output("max", Max(x, {1}));
  g.Output("min", Min(x, {1}));
  Graph graph = *g.Build();
  Tensor xs = Random(Shape{3, 700}, 4);
  xs.data<float>()[700 + 333] = std::nanf("");  // NaN wins max and min of row 1
  FeedList feeds = {{"x", xs}, {"scale", Random(Shape{700}, 5)}};
  const std::vector<TensorName> fetches = {"softmax", "layernorm", "max", "min"};
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, fetches);
  REQUIRE(expected.ok());
  Session session(graph, SessionOptions{.backend = "cuda-sim"});
  Result<std::vector<Tensor>> out = session.Run(feeds, fetches);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  for (size_t i = 0; i < fetches.size(); ++i) {
    std::string why;
    const bool close = testing::CloseForDType((*expected)[i], (*out)[i], &why);
    INFO("fetch " << i << ": " << why);
    CHECK(close);
  }
  CHECK(std::isnan((*out)[2].GetDouble(1)));
  CHECK(std::isnan((*out)[3].GetDouble(1)));
  // Each row kernel: one block of 256 threads per row.
  Result<RunPlan> plan = reference.Plan(feeds, fetches);
  REQUIRE(plan.ok());
  CompiledPlan compiled = CompileSim(*plan);
  int row_kernels = 0;
  for (const DeviceKernel& k : compiled.executable.device_kernels)
    for (const KernelLaunch& l : k.launches)
      if (l.grid[0] == 3 && l.block[0] == 256) ++row_kernels;
  CHECK(row_kernels == 4);  // softmax, layernorm, max and min
}

TEST_CASE("cuda-sim: sums over trailing dims and BatchNorm statistics reduce across a block",
          "[cuda]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3, 10, 10});
  Value c = g.Placeholder("c", f32, {3});
  g.Output("pooled", GlobalAvgPool(x));
  g.Output("total", Sum(x, {}));
  g.Output("normalized", BatchNorm(x, c, c, c, c, 1e-5, /*training=*/true)[0]);
  Graph graph = *g.Build();
  FeedList feeds = {{"x", Random(Shape{2, 3, 10, 10}, 6)}, {"c", Random(Shape{3}, 7)}};
  const std::vector<TensorName> fetches = {"pooled", "total", "normalized"};
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, fetches);
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(graph, feeds, fetches, *expected);  // cpu and cuda-sim
  // GlobalAvgPool: 6 rows of 100; Sum: 1 row of 600; BatchNorm's statistics: 3 rows of 200.
  Result<RunPlan> plan = reference.Plan(feeds, fetches);
  REQUIRE(plan.ok());
  CompiledPlan compiled = CompileSim(*plan);
  std::multiset<std::pair<int64_t, int64_t>> blocks;
  for (const DeviceKernel& k : compiled.executable.device_kernels)
    for (const KernelLaunch& l : k.launches) blocks.insert({l.grid[0], l.block[0]});
  CHECK(blocks.count({6, 128}) == 1);
  CHECK(blocks.count({1, 256}) == 1);
  CHECK(blocks.count({3, 224}) == 1);
}

TEST_CASE("cuda-sim: BatchNorm over few wide channels splits its sums over several blocks",
          "[cuda]") {
  // 4 channels of 8 x 32 x 32 = 8192 elements: each channel's sums in 4 parts of 2048, one block
  // each (16 blocks, not 4), folded per channel, forward and gradient.
  for (DType dtype : {f32, bf16}) {
    INFO(DTypeName(dtype));
    GraphBuilder g;
    Value x = g.Placeholder("x", dtype, {8, 4, 32, 32});
    Value c = g.Placeholder("c", dtype, {4});
    Value y = BatchNorm(x, c, c, c, c, 1e-5, /*training=*/true)[0];
    Value loss = Sum(Mul(y, y), {});
    Result<std::vector<Value>> grads = Gradients({loss}, {x, c});
    REQUIRE(grads.ok());
    g.Output("y", y);
    g.Output("dx", (*grads)[0]);
    g.Output("dscale", (*grads)[1]);
    Graph graph = *g.Build();
    Tensor positive = Random(Shape{4}, 32);
    for (int64_t i = 0; i < 4; ++i) positive.SetDouble(i, std::fabs(positive.GetDouble(i)) + 0.5);
    FeedList feeds = {{"x", Random(Shape{8, 4, 32, 32}, 31).CastTo(dtype)},
                      {"c", positive.CastTo(dtype)}};
    const std::vector<TensorName> fetches = {"y", "dx", "dscale"};
    // The device against the cpu backend's widened steps (bf16's rounding, as below).
    CheckSimAgainst(dtype == f32 ? "reference" : "cpu", graph, feeds, fetches);
    Session sim(graph, SessionOptions{.backend = "cuda-sim"});
    Result<RunPlan> plan = sim.Plan(feeds, fetches);
    REQUIRE(plan.ok());
    CompiledPlan compiled = CompileSim(*plan);
    int split_sums = 0;
    for (const DeviceKernel& k : compiled.executable.device_kernels)
      for (const KernelLaunch& l : k.launches) split_sums += l.grid[0] == 16 && l.block[0] == 256;
    CHECK(split_sums == 3);  // the forward's sum and squares, the gradient's two sums
  }
}

TEST_CASE("cuda-sim: MaxPool2DGrad sends dy to each window's first largest element", "[cuda]") {
  // Overlapping 3x3 windows (stride 2, padding 1) over values with ties and a NaN: each window's
  // gradient goes to its first largest element (a NaN winning), found once per window.
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3, 7, 6});
  Value dy = g.Placeholder("dy", f32, {2, 3, 4, 3});
  g.Output("dx", MaxPool2DGrad(x, dy, {.kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}}));
  Graph graph = *g.Build();
  Tensor xs = Random(Shape{2, 3, 7, 6}, 41);
  for (int64_t i = 0; i < xs.num_elements(); ++i)  // ties: values in steps of 0.25
    xs.SetDouble(i, std::round(xs.GetDouble(i) * 4) / 4);
  xs.SetDouble(10, std::nan(""));
  const FeedList feeds = {{"x", xs}, {"dy", Random(Shape{2, 3, 4, 3}, 42)}};
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, {"dx"});
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(graph, feeds, {"dx"}, *expected);  // cpu and cuda-sim
  Result<RunPlan> plan = reference.Plan(feeds, {"dx"});
  REQUIRE(plan.ok());
  CompiledPlan compiled = CompileSim(*plan);
  int grads = 0;
  for (const DeviceKernel& k : compiled.executable.device_kernels) {
    if (k.name.rfind("max_pool2d_grad", 0) != 0) continue;
    ++grads;
    CHECK(k.launches.size() == 2);  // the windows' argmax, then dx
  }
  CHECK(grads == 1);
}

TEST_CASE("cuda-sim: a kernel reading past its argument's end fails the launch, naming both",
          "[cuda]") {
  // out[i] = in[i + 1] for i < 8: the last thread reads in[8] of 8 elements.
  const std::string kernel = R"(
    func.func @shifted(%begin: i64, %end: i64, %in: memref<8xf32>, %out: memref<8xf32>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
        %j = arith.addi %i, %c1 : index
        %v = memref.load %in[%j] : memref<8xf32>
        memref.store %v, %out[%i] : memref<8xf32>
      }
      return
    })";
  Result<compiler::GpuKernels> gpu =
      compiler::LowerKernelsForGpu(kernel, {{"shifted", 8}}, {{}, true});
  INFO(gpu.status().ToString());
  REQUIRE(gpu.ok());
  REQUIRE(gpu->kernels.size() == 1);
  Result<std::unique_ptr<compiler::JitModule>> jit =
      compiler::JitModule::Compile(gpu->host_translation, compiler::JitOptions{.name = "oob"});
  INFO(jit.status().ToString());
  REQUIRE(jit.ok());
  CompiledPlan plan;
  plan.executable.device_kernels = gpu->kernels;
  plan.kernels = compiler::JitKernelLibrary(std::move(*jit));
  std::unique_ptr<cuda::Device> device = cuda::MakeSimulatedDevice(1);
  Result<std::shared_ptr<cuda::DeviceCode>> code = device->Load(plan);
  REQUIRE(code.ok());
  std::vector<cuda::LaunchOperand> operands;
  for (int i = 0; i < 2; ++i) {
    Result<cuda::DevicePtr> p = device->Allocate(64);  // room past 8 floats: no range error
    REQUIRE(p.ok());
    operands.push_back({*p, 64});
  }
  const KernelLaunch& launch = gpu->kernels[0].launches[0];
  REQUIRE(device->Check(**code, launch).ok());
  Status st = device->Launch(**code, launch, operands);
  if (st.ok()) st = device->Synchronize();  // the fault shows when the host waits, as on a GPU
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.error().message(), Catch::Contains("GPU function 'shifted_kernel'") &&
                                       Catch::Contains("argument 0 (step operand 0, [8])") &&
                                       Catch::Contains("outside its bounds"));
  for (const cuda::LaunchOperand& op : operands) device->Free(op.address);
}

TEST_CASE("cuda-sim: Transpose, Slice and BroadcastTo run as generated copy kernels on the device",
          "[cuda]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3, 4, 5});
  g.Output("t", Transpose(x, {0, 2, 1, 3}));
  g.Output("s", Slice(x, {3, 1}, {0, 5}, {2, 3}, {-2, 2}));  // a negative step
  g.Output("b", BroadcastTo(Slice(x, {0}, {1}, {1}, {}), {2, 2, 3, 4, 5}));
  Graph graph = *g.Build();
  FeedList feeds = {{"x", Random(Shape{2, 3, 4, 5}, 6)}};
  const std::vector<TensorName> fetches = {"t", "s", "b"};
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = reference.Plan(feeds, fetches);
  REQUIRE(plan.ok());
  CompiledPlan compiled = CompileSim(*plan);
  int copy_kernels = 0;
  for (const Step& step : compiled.executable.steps) {
    INFO(step.callee);
    CHECK((step.on_device || step.callee == "to_device" || step.callee == "to_host"));
    copy_kernels += step.callee.rfind("strided_copy", 0) == 0 && step.kind == Step::Kind::kKernel;
  }
  CHECK(copy_kernels == 4);
  Result<std::vector<Tensor>> expected = reference.Run(feeds, fetches);
  REQUIRE(expected.ok());
  std::vector<Tensor> out = RunOnSimulator(std::move(compiled), *plan);
  for (size_t i = 0; i < out.size(); ++i) CHECK(out[i].BitwiseEquals((*expected)[i]));
}

// Counts the synchronous copies to the device: a variable's upload (a feed goes up
// asynchronously, from the program's pinned staging).
class CountingDevice : public testing::ForwardingDevice {
 public:
  Status ToDevice(cuda::DevicePtr dst, const void* src, int64_t bytes) override {
    ++uploads;
    return ForwardingDevice::ToDevice(dst, src, bytes);
  }
  int uploads = 0;
};

TEST_CASE("cuda-sim: TF32 only when asked: f32 products then round their inputs to TF32",
          "[cuda]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {16, 64});
  Value w = g.Placeholder("w", f32, {64, 8});
  g.Output("y", MatMul(x, w));
  Graph graph = *g.Build();
  const FeedList feeds = {{"x", Random(Shape{16, 64}, 1)}, {"w", Random(Shape{64, 8}, 2)}};
  Session reference(graph, SessionOptions{.backend = "reference"});
  const Tensor want = (*reference.Run(feeds, {"y"}))[0];
  std::vector<Tensor> got;
  for (bool tf32 : {false, true}) {
    Session session(graph, SessionOptions{.backend = "cuda-sim", .precision = {.tf32 = tf32}});
    Result<std::vector<Tensor>> out = session.Run(feeds, {"y"});
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    got.push_back((*out)[0]);
    Result<RunPlan> plan = session.Plan(feeds, {"y"});
    REQUIRE(plan.ok());
    Result<compiler::CudaPlan> placed = compiler::PlanForCuda(*plan, tf32);
    REQUIRE(placed.ok());
    int marked = 0;
    for (const Step& step : placed->planned.lowered.executable.steps)
      marked += step.callee == "gemm" && step.attrs.Has("tf32");
    CHECK(marked == (tf32 ? 1 : 0));
  }
  std::string why;
  CHECK(testing::CloseForDType(want, got[0], &why));  // exact f32: within f32 tolerance
  bool differs = false;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double scale = 1.0 + std::abs(want.GetDouble(i));
    // TF32 inputs: relative error up to 2^-11 each, over 64 products of values in [-1, 1).
    CHECK(std::abs(got[1].GetDouble(i) - want.GetDouble(i)) <=
          64 * 2 * std::ldexp(1.0, -11) * scale);
    differs |= got[1].GetDouble(i) != got[0].GetDouble(i);
  }
  CHECK(differs);
}

TEST_CASE(
    "cuda-sim: a Gather of constant indices runs on the device, and a bad one fails as on the host",
    "[cuda]") {
  for (bool bad : {false, true}) {
    GraphBuilder g;
    Value data = g.Placeholder("data", f32, {4, 5});
    const std::vector<int32_t> picks =
        bad ? std::vector<int32_t>{1, 7} : std::vector<int32_t>{-1, 2, 0};
    Value indices =
        g.Constant(Tensor::FromVector(Shape{static_cast<int64_t>(picks.size())}, picks));
    g.Output("y", Gather(data, indices, /*axis=*/1));
    Graph graph = *g.Build();
    const FeedList feeds = {{"data", Random(Shape{4, 5}, 4)}};
    Session session(graph, SessionOptions{.backend = "cuda-sim"});
    Result<RunPlan> plan = session.Plan(feeds, {"y"});
    REQUIRE(plan.ok());
    Result<compiler::CudaPlan> placed = compiler::PlanForCuda(*plan);
    REQUIRE(placed.ok());
    int on_device = 0;
    for (const Step& step : placed->planned.lowered.executable.steps)
      on_device += step.on_device && step.node.name == "Gather";
    CHECK(on_device == (bad ? 0 : 1));
    Result<std::vector<Tensor>> out = session.Run(feeds, {"y"});
    if (bad) {
      REQUIRE_FALSE(out.ok());
      CHECK_THAT(out.error().message(), Catch::Contains("Gather") && Catch::Contains("7"));
      continue;
    }
    REQUIRE(out.ok());
    Session reference(graph, SessionOptions{.backend = "reference"});
    CHECK((*out)[0].BitwiseEquals((*reference.Run(feeds, {"y"}))[0]));
  }
}

TEST_CASE("cuda-sim: a variable stays on the device across runs, uploaded when its value changes",
          "[cuda]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 4});
  Value w = Variable(g, "w", f32, {4}, Initializer::Constant(3));
  g.Output("y", Mul(x, w));
  Graph graph = *g.Build();
  FeedList feeds = {{"x", Random(Shape{2, 4}, 1)}};
  Session planner(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = planner.Plan(feeds, {"y"});
  REQUIRE(plan.ok());
  CountingDevice device;
  VariableStore variables;
  std::vector<std::shared_ptr<cuda::CudaProgram>> programs;
  auto load = [&](std::shared_ptr<cuda::DeviceVariables> shared) {
    Result<std::unique_ptr<cuda::CudaProgram>> program =
        cuda::CudaProgram::Load(CompileSim(*plan), device, 1, shared);
    INFO(program.status().ToString());
    REQUIRE(program.ok());
    programs.push_back(std::move(*program));
    return programs.back().get();
  };
  auto shared = std::make_shared<cuda::DeviceVariables>(device);
  cuda::CudaProgram* first = load(shared);
  cuda::CudaProgram* second = load(shared);  // another plan of the same store and device
  std::map<std::string, uint64_t> counters;
  // Runs `program`; returns how many variables it uploaded, and checks y = x * w.
  auto run = [&](cuda::CudaProgram* program, float w_value) {
    const int before = device.uploads;
    Result<std::vector<Tensor>> out =
        program->Run(Feeds(program->executable(), *plan), variables, counters);
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    const Tensor& xs = feeds[0].second;
    for (int64_t i = 0; i < xs.num_elements(); ++i)
      REQUIRE((*out)[0].GetDouble(i) == static_cast<float>(xs.GetDouble(i) * w_value));
    return device.uploads - before;
  };
  CHECK(run(first, 3) == 1);  // w the first time
  CHECK(run(first, 3) == 0);
  CHECK(run(second, 3) == 0);  // the other plan finds w on the device too
  variables.Set("w", Tensor::FromVector<float>({4}, {5, 5, 5, 5}));
  CHECK(run(second, 5) == 1);  // a new value goes up once
  CHECK(run(first, 5) == 0);
  CHECK(run(first, 5) == 0);  // a replay of the captured graph
}

TEST_CASE("cuda-sim: Assign and AssignSub run on the device, the store gets the new value back",
          "[cuda]") {
  const bool subtract = GENERATE(false, true);  // Assign(w, w - x/2), or AssignSub(w, x/2)
  INFO((subtract ? "AssignSub" : "Assign"));
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {4});
  Value w = Variable(g, "w", f32, {4}, Initializer::Constant(1));
  g.Output("y", Mul(w, g.Scalar(2.0)));
  Value half = Mul(x, g.Scalar(0.5));
  (subtract ? AssignSub(w, half) : Assign(w, Sub(w, half))).Named("update");
  Graph graph = *g.Build();
  FeedList feeds = {{"x", Tensor::FromVector<float>({4}, {1, 2, 3, 4})}};
  Session planner(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = planner.Plan(feeds, {"y"}, {"update"});
  REQUIRE(plan.ok());
  CompiledPlan compiled = CompileSim(*plan);
  bool assign_on_device = false;
  for (const Step& s : compiled.executable.steps)
    assign_on_device = assign_on_device || (s.callee == "assign" && s.on_device);
  CHECK(assign_on_device);
  CountingDevice device;
  Result<std::unique_ptr<cuda::CudaProgram>> program =
      cuda::CudaProgram::Load(std::move(compiled), device, 1);
  REQUIRE(program.ok());
  VariableStore variables;
  std::map<std::string, uint64_t> counters;
  for (int run = 0; run < 3; ++run) {
    const int before = device.uploads;
    Result<std::vector<Tensor>> out =
        (*program)->Run(Feeds((*program)->executable(), *plan), variables, counters);
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    // y reads w before this run's update; the store holds w after it.
    const Tensor* stored = variables.Find("w");
    REQUIRE(stored);
    for (int64_t i = 0; i < 4; ++i) {
      const double w_before = 1 - 0.5 * (i + 1) * run;
      CHECK((*out)[0].GetDouble(i) == 2 * w_before);
      CHECK(stored->GetDouble(i) == w_before - 0.5 * (i + 1));
    }
    CHECK(device.uploads - before == (run == 0 ? 1 : 0));  // w only the first time
  }
  // Fetching the Assign's own output keeps it on the host, where the fetch reads it.
  for (const std::string backend : {"reference", "cuda-sim"}) {
    Session s(graph, SessionOptions{.backend = backend});
    Result<std::vector<Tensor>> out = s.Run(feeds, {"update"});
    INFO(backend << ": " << out.status().ToString());
    REQUIRE(out.ok());
    for (int64_t i = 0; i < 4; ++i) CHECK((*out)[0].GetDouble(i) == 1 - 0.5 * (i + 1));
  }
}

// Counts the copies from the device: synchronous ones (a variable read back for the host) and the
// bytes of asynchronous ones (the run's to_host copies and read-backs of assigned values).
class DownloadCountingDevice : public testing::ForwardingDevice {
 public:
  Status ToHost(void* dst, cuda::DevicePtr src, int64_t bytes) override {
    ++read_backs;
    return ForwardingDevice::ToHost(dst, src, bytes);
  }
  Status ToHostAsync(void* pinned_dst, cuda::DevicePtr src, int64_t bytes) override {
    async_bytes += bytes;
    return ForwardingDevice::ToHostAsync(pinned_dst, src, bytes);
  }
  int read_backs = 0;
  int64_t async_bytes = 0;
};

// A training-like step of `n` elements: y = sum(w * x) reads w (initially `initial`), then the
// target "update" makes w -= x * rate.
Graph UpdateStepGraph(int64_t n, double initial, double rate) {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {n});
  Value w = Variable(g, "w", f32, {n}, Initializer::Constant(initial));
  g.Output("y", Sum(Mul(w, x), {0}));
  AssignSub(w, Mul(x, g.Scalar(rate))).Named("update");
  return *g.Build();
}

TEST_CASE("cuda-sim: a value a device assign wrote stays on the device until the host reads it",
          "[cuda]") {
  const Graph graph = UpdateStepGraph(64, 1.0, 0.5);
  std::vector<float> ones(64, 1.0f);
  FeedList feeds = {{"x", Tensor::FromVector<float>({64}, ones)}};
  Session planner(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = planner.Plan(feeds, {"y"}, {"update"});
  REQUIRE(plan.ok());
  DownloadCountingDevice device;
  VariableStore variables;
  std::map<std::string, uint64_t> counters;
  auto shared = std::make_shared<cuda::DeviceVariables>(device);
  Result<std::unique_ptr<cuda::CudaProgram>> program =
      cuda::CudaProgram::Load(CompileSim(*plan), device, 1, shared);
  REQUIRE(program.ok());
  auto run = [&](double w_before) {
    const int64_t before = device.async_bytes;
    Result<std::vector<Tensor>> out =
        (*program)->Run(Feeds((*program)->executable(), *plan), variables, counters);
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    CHECK((*out)[0].GetDouble(0) == 64 * w_before);
    CHECK(device.async_bytes - before < 256);  // at most y: w's 256 bytes stay on the device
    CHECK(variables.HolderOf("w") == shared.get());
  };
  run(1.0);
  run(0.5);
  CHECK(device.read_backs == 0);
  // The host asks: one read-back, and the store holds w on the host again, at the same version
  // (so the next run uploads nothing).
  const uint64_t version = variables.Version("w");
  const Tensor* stored = variables.Find("w");
  REQUIRE(stored);
  CHECK(device.read_backs == 1);
  CHECK(stored->GetDouble(0) == 0.0);
  CHECK(variables.HolderOf("w") == nullptr);
  CHECK(variables.Version("w") == version);
  run(0.0);
  CHECK(device.read_backs == 1);
  // Once the device copies are gone, the value cannot be read back: an error naming the variable.
  program->reset();
  shared.reset();
  Status lost = variables.Materialize("w");
  REQUIRE_FALSE(lost.ok());
  CHECK_THAT(lost.error().message(), Catch::Contains("'w'") && Catch::Contains("closed"));
  CHECK(variables.Find("w") == nullptr);
}

TEST_CASE("cuda-sim: a session trained on the device saves the values a reference session has",
          "[cuda]") {
  const Graph graph = UpdateStepGraph(8, 2.0, 0.25);
  const FeedList feeds = {{"x", Random(Shape{8}, 3)}};
  std::vector<std::map<std::string, Tensor>> saved;
  for (const std::string backend : {"reference", "cuda-sim"}) {
    Session session(graph, SessionOptions{.backend = backend});
    for (int step = 0; step < 3; ++step) REQUIRE(session.Run(feeds, {"y"}, {"update"}).ok());
    const std::string path = testing::TempPath("device_trained_" + backend + ".ckpt");
    REQUIRE(session.SaveCheckpoint(path).ok());
    Result<std::map<std::string, Tensor>> read = ReadCheckpoint(path);
    REQUIRE(read.ok());
    saved.push_back(std::move(*read));
  }
  REQUIRE(saved[1].count("w"));
  std::string why;
  CHECK(testing::CloseForDType(saved[0].at("w"), saved[1].at("w"), &why));
}

TEST_CASE("cuda-sim: cross-entropy and its gradient run on the device, labels checked first",
          "[cuda]") {
  const int64_t classes = GENERATE(10, 300);  // a thread per row, a block per row
  const int64_t rows = GENERATE(5, 40);       // the loss' mean by one thread, by one block
  const DType label_dtype = GENERATE(i32, i64);
  // "mean": a scalar loss and dloss; "none": the row losses, one dloss per row.
  const std::string reduction = GENERATE(as<std::string>{}, "mean", "none");
  const bool per_row = reduction == "none";
  INFO(rows << " rows of " << classes << " classes, labels " << DTypeName(label_dtype) << ", "
            << reduction);
  GraphBuilder g;
  Value logits = g.Placeholder("logits", f32, {rows, classes});
  Value labels = g.Placeholder("labels", label_dtype, {rows});
  Value dloss = g.Placeholder("dloss", f32, per_row ? Shape{rows} : Shape{});
  g.Output("loss", SoftmaxCrossEntropy(logits, labels, reduction).Named("xent"));
  g.Output("dlogits", SoftmaxCrossEntropyGrad(logits, labels, dloss));
  Graph graph = *g.Build();
  std::vector<int64_t> label_values(rows);
  for (int64_t n = 0; n < rows; ++n) label_values[n] = (n * 7 + 3) % classes;
  Tensor xs = Random(Shape{rows, classes}, 11);
  for (int64_t i = 0; i < xs.num_elements(); ++i) xs.data<float>()[i] *= 6;
  FeedList feeds = {
      {"logits", xs},
      {"labels", Tensor::FromVector(Shape{rows}, label_values).CastTo(label_dtype)},
      {"dloss", per_row ? Random(Shape{rows}, 13) : Tensor::FromVector<float>({}, {0.75f})}};
  const std::vector<TensorName> fetches = {"loss", "dlogits"};
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, fetches);
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(graph, feeds, fetches, *expected);  // cpu and cuda-sim
  // Both are device kernels; the one host step checks the labels (shared by loss and gradient).
  Result<RunPlan> plan = reference.Plan(feeds, fetches);
  REQUIRE(plan.ok());
  CompiledPlan compiled = CompileSim(*plan);
  int host_steps = 0, checks = 0;
  for (const Step& s : compiled.executable.steps) {
    if (s.callee == "to_device" || s.callee == "to_host") continue;
    host_steps += !s.on_device;
    checks += s.callee == "check_labels";
    CHECK(s.callee.find("softmax_cross_entropy") ==
          (s.kind == Step::Kind::kKernel ? 0u : std::string::npos));
  }
  CHECK(host_steps == 1);
  CHECK(checks == 1);
  // A label outside [0, C) fails the run before any kernel reads with it, naming the node.
  label_values[3] = classes + 2;
  feeds[1].second = Tensor::FromVector(Shape{rows}, label_values).CastTo(label_dtype);
  Session session(graph, SessionOptions{.backend = "cuda-sim"});
  Result<std::vector<Tensor>> bad = session.Run(feeds, {"loss"});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message(),
             Catch::Contains("xent") && Catch::Contains("label " + std::to_string(classes + 2) +
                                                        " at index 3 is out of range [0, " +
                                                        std::to_string(classes) + ")"));
}

TEST_CASE("cuda-sim: an integer step counter is incremented on the device, and wraps as on the cpu",
          "[cuda]") {
  const DType dtype = GENERATE(i32, i64);
  INFO(DTypeName(dtype));
  const double start = dtype == i32 ? 2147483646.0 : 41.0;  // i32 wraps on its second increment
  GraphBuilder g;
  Value step = Variable(g, "step", dtype, {}, Initializer::Constant(start));
  Value w = Variable(g, "w", f32, {3}, Initializer::Constant(1));
  // The new count is read on the device, as an optimizer's bias correction reads it.
  Value count = AssignAdd(step, g.Scalar(1, dtype)).Named("tick");
  g.Output("scaled", Mul(w, Cast(count, f32)));
  Graph graph = *g.Build();
  Session planner(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = planner.Plan({}, {"scaled"});
  REQUIRE(plan.ok());
  CompiledPlan compiled = CompileSim(*plan);
  for (const Step& s : compiled.executable.steps) {
    INFO(s.callee);
    CHECK((s.on_device || s.callee == "variable_read" || s.callee == "to_device" ||
           s.callee == "to_host"));
  }
  for (const std::string backend : {"cpu", "cuda-sim"}) {
    Session reference(graph, SessionOptions{.backend = "reference"});
    Session session(graph, SessionOptions{.backend = backend});
    for (int run = 0; run < 3; ++run) {
      Result<std::vector<Tensor>> out = session.Run({}, {"scaled"});
      Result<std::vector<Tensor>> expected = reference.Run({}, {"scaled"});
      INFO(backend << " run " << run << ": " << out.status().ToString());
      REQUIRE(out.ok());
      REQUIRE(expected.ok());
      CHECK((*out)[0].GetDouble(2) == (*expected)[0].GetDouble(2));
    }
    Result<std::vector<Tensor>> stored = session.Run({}, {"step"});
    REQUIRE(stored.ok());
    CHECK((*stored)[0].GetDouble(0) == (dtype == i32 ? -2147483647.0 : start + 3));
  }
}

TEST_CASE(
    "cuda-sim: 16-bit convolutions, batch norms, their gradients, biases and sums run on the "
    "device",
    "[cuda]") {
  // The cpu backend's libraries take none of these in f16 (nor sums in bf16): the shared lowering
  // leaves them to reference steps, which the CUDA plan turns into generated kernels.
  const DType dtype = GENERATE(f16, bf16);
  INFO(DTypeName(dtype));
  GraphBuilder g;
  Value x = g.Placeholder("x", dtype, {2, 3, 6, 6});
  Value w = g.Placeholder("w", dtype, {4, 3, 3, 3});
  Value b = g.Placeholder("b", dtype, {4});
  Value c = g.Placeholder("c", dtype, {4});
  Value conv = BiasAdd(Conv2D(x, w, {.strides = {2, 1}, .pads = {1, 1, 1, 1}}), b);
  // Training BatchNorm: its statistics (and in the gradient dscale, dbias) kept in f32 scratch.
  Value y = BatchNorm(conv, c, b, b, c, 1e-3, /*training=*/true)[0];
  Value pooled = GlobalAvgPool(Mul(y, y));
  Value loss = Sum(pooled, {});
  Result<std::vector<Value>> grads = Gradients({loss}, {x, w, c});
  REQUIRE(grads.ok());
  g.Output("pooled", pooled);
  g.Output("mean", Mean(x, {0, 2}));  // of exact inputs: no cancellation of rounded values
  g.Output("dx", (*grads)[0]);
  g.Output("dw", (*grads)[1]);
  g.Output("dscale", (*grads)[2]);
  Graph graph = *g.Build();
  Tensor positive = Random(Shape{4}, 24);
  for (int64_t i = 0; i < 4; ++i) positive.SetDouble(i, std::fabs(positive.GetDouble(i)) + 0.5);
  FeedList feeds = {{"x", Random(Shape{2, 3, 6, 6}, 21).CastTo(dtype)},
                    {"w", Random(Shape{4, 3, 3, 3}, 22).CastTo(dtype)},
                    {"b", Random(Shape{4}, 23).CastTo(dtype)},
                    {"c", positive.CastTo(dtype)}};
  const std::vector<TensorName> fetches = {"pooled", "mean", "dx", "dw", "dscale"};
  Session reference(graph, SessionOptions{.backend = "reference"});
  if (dtype == f16) {
    Result<std::vector<Tensor>> expected = reference.Run(feeds, fetches);
    REQUIRE(expected.ok());
    testing::CheckCompiledMatchesReference(graph, feeds, fetches, *expected);  // cpu, cuda-sim
  } else {
    // bf16's 8 bits leave BatchNorm's gradient, a difference of nearly equal sums, mostly
    // rounding noise, which the reference (computing each op in f64) does not share: the device
    // must give what the cpu backend's widened steps give.
    CheckSimAgainst("cpu", graph, feeds, fetches);
  }
  Result<RunPlan> plan = reference.Plan(feeds, fetches);
  REQUIRE(plan.ok());
  CompiledPlan compiled = CompileSim(*plan);
  for (const Step& s : compiled.executable.steps) {
    INFO(s.callee << " " << s.node.name);
    CHECK((s.on_device || s.callee == "to_device" || s.callee == "to_host"));
  }
}

TEST_CASE("cuda: without a driver, the backend is refused in one line naming libcuda.so.1",
          "[cuda]") {
  if (cuda::LoadDriver().ok()) {
    WARN("SKIPPED: this machine has a CUDA driver");
    return;
  }
  MixedGraph m;
  Session session(m.graph, SessionOptions{.backend = "cuda"});
  Result<std::vector<Tensor>> out = session.Run(m.feeds, {"y"});
  REQUIRE_FALSE(out.ok());
  const std::string message = out.error().message();
  CHECK(message.find("libcuda.so.1") != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

}  // namespace
}  // namespace kiln
