// CUDA graphs (runtime/cuda/graph_capture.h, CudaProgram): a capturable plan is warmed up,
// captured, then replayed, and gives bitwise what the step-by-step run gives, run after run, with
// new feeds and variables each time; a plan with a host step between device steps is not captured
// and says why; a refused capture leaves the program running step by step; and the simulated
// device holds captures to what a GPU allows (no synchronous copy or wait inside, only pinned host
// memory in asynchronous copies, a replay reading memory as it is then), and runs its stream only
// when the host waits for it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "compiler/cuda_compiler.h"
#include "ir/builder.h"
#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/state.h"
#include "passes/optim.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/graph_capture.h"
#include "runtime/session.h"
#include "tests/compiler/cuda_sim_testing.h"
#include "tests/testing/differential.h"
#include "tests/testing/forwarding_device.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

using testing::CompileSim;

// One Adam step of a two-layer classifier: MatMul (cuBLASLt), bias and Relu (generated kernels),
// cross-entropy (device row kernels, its fed labels checked on the host when the run starts), the
// gradients and the updates of every variable on the device.
struct TrainingStep {
  Graph graph;
  std::string loss, train;
  TrainingStep() {
    GraphBuilder g;
    Value x = g.Placeholder("x", f32, {16, 12});
    Value labels = g.Placeholder("labels", i64, {16});
    Value w1 = Variable(g, "w1", f32, {12, 40}, Initializer::GlorotUniform(1));
    Value b1 = Variable(g, "b1", f32, {40}, Initializer::Zeros());
    Value w2 = Variable(g, "w2", f32, {40, 5}, Initializer::GlorotUniform(2));
    Value logits = MatMul(Relu(BiasAdd(MatMul(x, w1), b1)), w2);
    Value l = SoftmaxCrossEntropy(logits, labels).Named("xent");
    optim::Options adam;
    adam.lr = 0.01;
    Value t = optim::Adam(adam).Minimize(l);
    Result<Graph> built = g.Build();
    REQUIRE(built.ok());
    graph = std::move(*built);
    loss = l.name();
    train = t.node_name();
  }
  FeedList Batch(uint64_t seed, int64_t bad_label = -1) const {
    Tensor x = testing::RandomTensor(Shape{16, 12}, seed).CastTo(f32);
    std::vector<int64_t> labels(16);
    for (int64_t i = 0; i < 16; ++i) labels[i] = (i * 3 + static_cast<int64_t>(seed)) % 5;
    if (bad_label >= 0) labels[7] = bad_label;
    return {{"x", x}, {"labels", Tensor::FromVector(Shape{16}, labels)}};
  }
};

// A program loaded on its own device, with its own variables.
struct Loaded {
  std::unique_ptr<cuda::Device> device;
  std::unique_ptr<cuda::CudaProgram> program;
  VariableStore variables;
  std::map<std::string, uint64_t> counters;

  Loaded(const RunPlan& plan, bool graphs, std::unique_ptr<cuda::Device> on = nullptr)
      : device(on ? std::move(on) : cuda::MakeSimulatedDevice(1)) {
    cuda::ProgramOptions options;
    options.cuda_graphs = graphs;
    Result<std::unique_ptr<cuda::CudaProgram>> loaded =
        cuda::CudaProgram::Load(CompileSim(plan), *device, 1, nullptr, options);
    INFO(loaded.status().ToString());
    REQUIRE(loaded.ok());
    program = std::move(*loaded);
  }
  // Runs the program on the feeds of `plan` (a plan of the same nodes and shapes).
  Result<std::vector<Tensor>> Run(const RunPlan& plan) {
    Result<std::vector<Tensor>> bound = FeedsOf(program->executable(), plan);
    if (!bound.ok()) return bound.error();
    return program->Run(*bound, variables, counters);
  }
};

RunPlan PlanOf(const Session& planner, const TrainingStep& step, const FeedList& feeds) {
  Result<RunPlan> plan = planner.Plan(feeds, {step.loss}, {step.train});
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return *plan;
}

TEST_CASE(
    "cuda-sim: a training step is captured on its second run and replayed, bitwise as step "
    "by step",
    "[cuda]") {
  TrainingStep step;
  Session planner(step.graph, SessionOptions{.backend = "reference"});
  const RunPlan plan = PlanOf(planner, step, step.Batch(0));
  Loaded graphs(plan, /*graphs=*/true), stepwise(plan, /*graphs=*/false);
  const cuda::GraphCapture& capture = graphs.program->capture();
  INFO(capture.why_not);
  REQUIRE(capture.capturable);
  CHECK(capture.operations > 10);
  for (int run = 1; run <= 5; ++run) {
    INFO("run " << run);
    const RunPlan batch = PlanOf(planner, step, step.Batch(run));
    Result<std::vector<Tensor>> got = graphs.Run(batch);
    Result<std::vector<Tensor>> want = stepwise.Run(batch);
    INFO(got.status().ToString() << " / " << want.status().ToString());
    REQUIRE(got.ok());
    REQUIRE(want.ok());
    CHECK((*got)[0].BitwiseEquals((*want)[0]));
    for (const std::string name : {"w1", "b1", "w2"}) {
      INFO(name);
      REQUIRE(graphs.variables.Find(name));
      CHECK(graphs.variables.Find(name)->BitwiseEquals(*stepwise.variables.Find(name)));
    }
    CHECK(graphs.program->replays() == std::max(0, run - 1));  // run 1 warms up
    CHECK(stepwise.program->replays() == 0);
  }
  CHECK(graphs.program->capture_error().empty());

  // A bad label fails the run before the graph is replayed, naming the node, and changes nothing;
  // the next run replays again.
  const Tensor w1_before = *graphs.variables.Find("w1");
  Result<std::vector<Tensor>> bad = graphs.Run(PlanOf(planner, step, step.Batch(6, 9)));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message(), Catch::Contains("xent") && Catch::Contains("label 9"));
  CHECK(graphs.variables.Find("w1")->BitwiseEquals(w1_before));
  CHECK(graphs.program->replays() == 4);
  const RunPlan last = PlanOf(planner, step, step.Batch(7));
  Result<std::vector<Tensor>> got = graphs.Run(last);
  Result<std::vector<Tensor>> want = stepwise.Run(last);
  REQUIRE(got.ok());
  REQUIRE(want.ok());
  CHECK((*got)[0].BitwiseEquals((*want)[0]));
  CHECK(graphs.program->replays() == 5);
}

TEST_CASE(
    "cuda-sim: a host step between device steps keeps a plan from being captured, and says "
    "which",
    "[cuda]") {
  // Gather with indices computed on the device is a host step; its input comes from the device
  // (Relu) and its output goes back (Softmax).
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {6, 40});
  Value order = g.Placeholder("order", i64, {6});
  g.Output("s", Softmax(Gather(Relu(x), Sub(g.Scalar(5, i64), order)).Named("reorder")));
  Graph graph = *g.Build();
  FeedList feeds = {{"x", testing::RandomTensor(Shape{6, 40}, 3).CastTo(f32)},
                    {"order", Tensor::FromVector<int64_t>({6}, {0, 1, 2, 3, 4, 5})}};
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = reference.Plan(feeds, {"s"});
  REQUIRE(plan.ok());
  Loaded loaded(*plan, /*graphs=*/true);
  const cuda::GraphCapture& capture = loaded.program->capture();
  CHECK_FALSE(capture.capturable);
  CHECK_THAT(capture.why_not, Catch::Contains("reorder") &&
                                  Catch::Contains("runs on the host between device steps"));
  Result<std::vector<Tensor>> expected = reference.Run(feeds, {"s"});
  REQUIRE(expected.ok());
  for (int run = 0; run < 3; ++run) {
    Result<std::vector<Tensor>> out = loaded.Run(*plan);
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    std::string why;
    CHECK(testing::CloseForDType((*expected)[0], (*out)[0], &why));
  }
  CHECK(loaded.program->replays() == 0);
}

// A device whose captures fail (as a GPU's would if a library call could not be captured).
class RefusingCapture : public testing::ForwardingDevice {
 public:
  Status BeginCapture() override {
    return MakeError(ErrorCode::kInternal, "cuStreamBeginCapture failed: refused for the test");
  }
};

TEST_CASE("cuda-sim: a capture the device refuses leaves the program running step by step",
          "[cuda]") {
  TrainingStep step;
  Session planner(step.graph, SessionOptions{.backend = "reference"});
  const RunPlan plan = PlanOf(planner, step, step.Batch(0));
  Loaded refusing(plan, /*graphs=*/true, std::make_unique<RefusingCapture>());
  Loaded stepwise(plan, /*graphs=*/false);
  for (int run = 1; run <= 3; ++run) {
    const RunPlan batch = PlanOf(planner, step, step.Batch(run));
    Result<std::vector<Tensor>> got = refusing.Run(batch);
    Result<std::vector<Tensor>> want = stepwise.Run(batch);
    INFO(got.status().ToString());
    REQUIRE(got.ok());
    REQUIRE(want.ok());
    CHECK((*got)[0].BitwiseEquals((*want)[0]));
  }
  CHECK(refusing.program->replays() == 0);
  CHECK_THAT(refusing.program->capture_error(), Catch::Contains("refused for the test"));
}

TEST_CASE("cuda-sim: captures hold to what a GPU allows, and a replay reads memory as it is then",
          "[cuda]") {
  std::unique_ptr<cuda::Device> device = cuda::MakeSimulatedDevice(1);
  Result<cuda::DevicePtr> buffer = device->Allocate(64);
  REQUIRE(buffer.ok());
  Result<void*> pinned = device->AllocatePinned(64);
  REQUIRE(pinned.ok());
  float* staged = static_cast<float*>(*pinned);
  std::vector<float> pageable(16, 1.0f), back(16);

  // Asynchronous copies take pinned memory only.
  Status refused = device->ToDeviceAsync(*buffer, pageable.data(), 64);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message(), Catch::Contains("not inside one pinned allocation"));

  // A wait (or a synchronous copy) inside a capture invalidates it.
  REQUIRE(device->BeginCapture().ok());
  CHECK(device->ToDeviceAsync(*buffer, staged, 64).ok());
  CHECK_FALSE(device->Synchronize().ok());
  CHECK_FALSE(device->ToHost(back.data(), *buffer, 64).ok());
  Result<std::unique_ptr<cuda::DeviceGraph>> invalid = device->EndCapture();
  REQUIRE_FALSE(invalid.ok());
  CHECK_THAT(invalid.error().message(),
             Catch::Contains("invalidated") && Catch::Contains("synchronization"));

  // A capture records without running: the device still holds its poison afterwards.
  REQUIRE(device->BeginCapture().ok());
  REQUIRE(device->ToDeviceAsync(*buffer, staged, 64).ok());
  REQUIRE(device->CopyOnDevice(*buffer + 32, *buffer, 32).ok());
  Result<std::unique_ptr<cuda::DeviceGraph>> graph = device->EndCapture();
  REQUIRE(graph.ok());
  REQUIRE(device->ToHost(back.data(), *buffer, 64).ok());
  CHECK(std::isnan(back[0]));

  // Each replay reads the pinned memory as it is when it runs.
  for (float value : {2.0f, 5.0f}) {
    for (int i = 0; i < 16; ++i) staged[i] = value + static_cast<float>(i);
    REQUIRE(device->Replay(**graph).ok());
    REQUIRE(device->Synchronize().ok());
    REQUIRE(device->ToHost(back.data(), *buffer, 64).ok());
    for (int i = 0; i < 8; ++i) {
      CHECK(back[i] == value + static_cast<float>(i));
      CHECK(back[8 + i] == value + static_cast<float>(i));  // the copy on the device
    }
  }

  // The stream runs when the host waits for it: a copy to the host has not landed before then.
  std::fill(staged, staged + 16, -1.0f);
  REQUIRE(device->ToHostAsync(staged, *buffer, 64).ok());
  CHECK(staged[3] == -1.0f);  // a host reading here, without waiting, reads the old bytes
  REQUIRE(device->Synchronize().ok());
  CHECK(staged[3] == 8.0f);

  // A replay after the memory it names was freed fails instead of touching it.
  device->Free(*buffer);
  Status stale = device->Replay(**graph);
  if (stale.ok()) stale = device->Synchronize();
  REQUIRE_FALSE(stale.ok());
  CHECK_THAT(stale.error().message(), Catch::Contains("replaying a captured graph"));
  device->FreePinned(*pinned);
}

}  // namespace
}  // namespace kiln
