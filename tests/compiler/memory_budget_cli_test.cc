// Memory budgets on the compiled paths, as users meet them: a Session on the cpu backend, `kiln
// run`, `kiln inspect --memory`, `kiln compile`, kilnrt and the C API refuse a plan that does not
// fit before it runs, with one line naming the peak, the budget and the largest buffers, and the
// variables keep their values.
#include <catch2/catch.hpp>

#include "ir/live_tensor_bytes.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "models/digits_cnn.h"
#include "passes/optim.h"
#include "runtime/c_api/kiln_c.h"
#include "runtime/cuda/device.h"
#include "runtime/module/module.h"
#include "runtime/session.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

namespace kiln {
namespace {

using testing::CheckFails;
using testing::CommandResult;
using testing::RunCommand;

const std::string kResnet = std::string(KILN_TEST_DATA_DIR) + "/onnx/resnet";

void CheckOk(const CommandResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
}

TEST_CASE("memory budget: a training step over the budget is refused and changes nothing",
          "[memory][bad-input]") {
  GraphBuilder g;
  models::DigitsCnn net = models::BuildDigitsTraining(g);
  Result<optim::Optimizer> sgd = optim::ByName("sgd", optim::Options{});
  REQUIRE(sgd.ok());
  Value update = sgd->Minimize(net.loss);
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  Tensor images(f32, Shape{32, 1, 8, 8}), labels(i64, Shape{32});
  for (int i = 0; i < 32; ++i) labels.SetInt(i, i % 10);
  const FeedList feeds = {{"images", images}, {"labels", labels}};

  Session roomy(*graph, SessionOptions{.backend = "cpu"});
  REQUIRE(roomy.InitializeVariables().ok());
  Session tight(*graph, SessionOptions{.backend = "cpu", .memory_limit = 64 << 10});
  for (const auto& [name, value] : roomy.variables().values()) tight.variables().Set(name, value);
  const std::map<std::string, Tensor> before = tight.variables().values();

  Result<std::vector<Tensor>> refused = tight.Run(feeds, {net.loss}, {update});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code() == ErrorCode::kResourceExhausted);
  CHECK_THAT(refused.error().message(),
             Catch::StartsWith("the plan needs ") &&
                 Catch::Contains("over the memory budget of 64.0 KiB (the memory limit); largest "
                                 "buffers: "));
  for (const auto& [name, value] : before) {
    INFO(name);
    CHECK(tight.variables().Find(name)->BitwiseEquals(value));
  }
  // The same step within a budget it fits.
  REQUIRE(roomy.Run(feeds, {net.loss}, {update}).ok());
}

TEST_CASE("memory budget: live tensor bytes never drift over 10,000 training steps", "[memory]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {16, 32});
  Value labels = g.Placeholder("labels", i64, {16});
  Value w1 = Variable(g, "w1", f32, {32, 64}, Initializer::Uniform(-0.2, 0.2, 1));
  Value w2 = Variable(g, "w2", f32, {64, 10}, Initializer::Uniform(-0.2, 0.2, 1));
  Value loss = Mean(SoftmaxCrossEntropy(MatMul(Relu(MatMul(x, w1)), w2), labels)).Named("loss");
  optim::Options options;
  options.lr = 0.01;
  Result<optim::Optimizer> momentum = optim::ByName("momentum", options);
  REQUIRE(momentum.ok());
  Value update = momentum->Minimize(loss);
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  Tensor images(f32, Shape{16, 32}), classes(i64, Shape{16});
  for (int i = 0; i < 16 * 32; ++i) images.SetDouble(i, (i % 7) * 0.1);
  for (int i = 0; i < 16; ++i) classes.SetInt(i, i % 10);
  const FeedList feeds = {{"x", images}, {"labels", classes}};
  for (const auto& [backend, steps] : {std::pair<std::string, int>{"cpu", 10000},
                                       std::pair<std::string, int>{"reference", 1000}}) {
    INFO(backend);
    Session s(*graph, SessionOptions{.backend = backend});
    auto step = [&]() { REQUIRE(s.Run(feeds, {loss}, {update}).ok()); };
    step();  // the first step compiles the plan and creates the optimizer's slots
    const int64_t settled = LiveTensorBytes();
    int drifted = 0;
    for (int i = 0; i < steps; ++i) {
      step();
      drifted += LiveTensorBytes() != settled;
    }
    CHECK(drifted == 0);
    CHECK(LiveTensorBytes() == settled);
  }
}

TEST_CASE("memory budget: kiln run and inspect refuse, and name, a plan that does not fit",
          "[memory][cli][bad-input]") {
  const std::string model = kResnet + "/model.onnx", input = "x=" + kResnet + "/x.npy";
  CommandResult run =
      RunCommand(KILN_BINARY, {"run", model, "--input", input, "--memory-limit", "256K"});
  CheckFails(run, "over the memory budget of 256.0 KiB (the memory limit)");
  CHECK_THAT(run.err, Catch::Contains("the plan needs ") &&
                          Catch::Contains("largest buffers: variable 'onnx__Conv_"));
  CheckOk(RunCommand(KILN_BINARY, {"run", model, "--input", input, "--memory-limit", "64M"}));
  CheckFails(RunCommand(KILN_BINARY, {"run", model, "--input", input, "--backend", "reference",
                                      "--memory-limit", "16K"}),
             "exceed the memory budget of 16.0 KiB (the memory limit)");
  CheckFails(RunCommand(KILN_BINARY, {"run", model, "--input", input, "--memory-limit", "lots"}),
             "--memory-limit 'lots' is not a size", 2);

  CommandResult inspect = RunCommand(KILN_BINARY, {"inspect", model, "--memory", "--input",
                                                   "x=2x3x64x64", "--memory-limit", "256K"});
  CheckOk(inspect);
  CHECK_THAT(inspect.out, Catch::Contains("budget: 256.0 KiB (the memory limit): does not fit") &&
                              Catch::Contains("largest: variable 'onnx__Conv_"));
  CommandResult host =
      RunCommand(KILN_BINARY, {"inspect", model, "--memory", "--input", "x=2x3x64x64"});
  CheckOk(host);
  CHECK_THAT(host.out, Catch::Contains(": fits"));
  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--memory-limit", "1G"}),
             "--memory-limit is the budget --memory prints the plan against", 2);
}

TEST_CASE("memory budget: kiln compile, kilnrt and the C API refuse a module that does not fit",
          "[memory][cli][aot][bad-input]") {
  const std::string model = kResnet + "/model.onnx", input = "x=" + kResnet + "/x.npy";
  const std::string module = testing::TempPath("budget_resnet.kmod");
  CheckFails(RunCommand(KILN_BINARY, {"compile", model, "-o", module, "--input", "x=2x3x64x64",
                                      "--memory-limit", "256K"}),
             "the module's plan needs ");
  CheckOk(RunCommand(KILN_BINARY, {"compile", model, "-o", module, "--input", "x=2x3x64x64"}));
  CheckFails(RunCommand(KILNRT_BINARY, {module, "--input", input, "--memory-limit", "256K"}),
             "its plan does not load: the plan needs ");
  CheckOk(RunCommand(KILNRT_BINARY, {module, "--input", input, "--memory-limit", "64M"}));
  CheckFails(RunCommand(KILNRT_BINARY, {module, "--memory-limit", "-5M"}), "is not a size", 2);

  Result<std::unique_ptr<Module>> tight =
      Module::Load(module, ModuleOptions{.memory_limit = 256 << 10});
  REQUIRE_FALSE(tight.ok());
  CHECK(tight.error().code() == ErrorCode::kResourceExhausted);

  kiln_status* status = nullptr;
  CHECK(kiln_module_load_within(module.c_str(), nullptr, 1, 256 << 10, &status) == nullptr);
  CHECK(kiln_status_code(status) == KILN_RESOURCE_EXHAUSTED);
  CHECK_THAT(kiln_status_message(status), Catch::Contains("largest buffers: "));
  kiln_status_free(status);
  status = nullptr;
  CHECK(kiln_module_load_within(module.c_str(), nullptr, 1, -1, &status) == nullptr);
  CHECK(kiln_status_code(status) == KILN_INVALID_ARGUMENT);
  kiln_status_free(status);
  kiln_module* loaded = kiln_module_load_within(module.c_str(), nullptr, 1, 64 << 20, nullptr);
  CHECK(loaded != nullptr);
  kiln_module_free(loaded);
}

TEST_CASE("memory budget: the simulated device has a size, and a plan over it is refused",
          "[memory][cuda][bad-input]") {
  std::unique_ptr<cuda::Device> device = cuda::MakeSimulatedDevice(1, 1 << 20);
  CHECK(device->Memory()->free == 1 << 20);
  Result<cuda::DevicePtr> half = device->Allocate(512 << 10);
  REQUIRE(half.ok());
  CHECK(device->Memory()->free == 512 << 10);
  Result<cuda::DevicePtr> over = device->Allocate(600 << 10);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().code() == ErrorCode::kResourceExhausted);
  CHECK_THAT(over.error().message(),
             Catch::Contains("600.0 KiB requested, 512.0 KiB free of 1.00 MiB"));
  device->Free(*half);
  CHECK(device->Memory()->free == 1 << 20);

  // The libraries' workspaces count once per device, from the first call prepared, as on a GPU.
  CHECK(device->WorkspaceBytesToCome(true, true) ==
        cuda::kMatmulWorkspaceBytes + cuda::kConvWorkspaceBytes);
  CHECK(device->WorkspaceBytesToCome(false, true) == cuda::kConvWorkspaceBytes);

  // A plan over the device's size is refused before anything is allocated on it.
  const std::string model = kResnet + "/model.onnx", input = "x=" + kResnet + "/x.npy";
  CommandResult run = RunCommand(KILN_BINARY, {"run", model, "--input", input, "--backend",
                                               "cuda-sim", "--memory-limit", "256K"});
  CheckFails(run, "the plan's device memory needs ");
  CHECK_THAT(run.err, Catch::Contains("over the memory budget of 256.0 KiB (free on the simulated "
                                      "CUDA device, of 256.0 KiB); largest buffers: "));
  // Its convolutions and its classifier's gemm run through the simulated cuDNN and cuBLASLt,
  // whose workspaces (64 + 32 MiB) the device must also hold: 64M is too little, 128M enough.
  CommandResult no_room = RunCommand(KILN_BINARY, {"run", model, "--input", input, "--backend",
                                                   "cuda-sim", "--memory-limit", "64M"});
  CheckFails(no_room, "the plan's device memory needs ");
  CHECK_THAT(no_room.err, Catch::Contains("workspace 96.0 MiB"));
  CheckOk(RunCommand(KILN_BINARY, {"run", model, "--input", input, "--backend", "cuda-sim",
                                   "--memory-limit", "128M"}));
  const std::string module = testing::TempPath("budget_resnet_cuda.kmod");
  CheckOk(RunCommand(
      KILN_BINARY, {"compile", model, "-o", module, "--target", "cuda", "--input", "x=2x3x64x64"}));
  CheckFails(RunCommand(KILNRT_BINARY, {module, "--input", input, "--backend", "cuda-sim",
                                        "--memory-limit", "256K"}),
             "its plan does not load: the plan's device memory needs ");
}

}  // namespace
}  // namespace kiln
