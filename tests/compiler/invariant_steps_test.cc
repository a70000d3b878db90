// Invariant steps (runtime/invariant_steps.h): which steps of a plan qualify, that the compiler
// marks them in cpu plans and gives their results bytes of their own
// (compiler/buffer_assignment.h), that the mark survives a module file, and that the runtime
// refuses a plan whose marks are wrong.
#include "runtime/invariant_steps.h"

#include <catch2/catch.hpp>

#include "ir/builder.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "passes/optim.h"
#include "runtime/cpu/program.h"
#include "runtime/executable_proto.h"
#include "runtime/session.h"
#include "tests/compiler/cpu_executable.h"
#include "tests/testing/differential.h"

namespace kiln {
namespace {

BufferDesc Buffer(BufferDesc::Kind kind, const std::string& tensor, int64_t offset = 0) {
  BufferDesc b;
  b.kind = kind;
  b.type = TensorType{f32, Shape{4}};
  b.tensor = tensor;
  b.offset = offset;
  return b;
}

Step MakeStep(Step::Kind kind, const std::string& callee, std::vector<int> inputs,
              std::vector<int> outputs, const std::string& node = "") {
  Step s;
  s.kind = kind;
  s.callee = callee;
  s.inputs = std::move(inputs);
  s.outputs = std::move(outputs);
  s.node.name = node.empty() ? callee : node;
  return s;
}

// variable_read w -> %0, v -> %1; %2 constant; %3 feed. Kernels: a(%0, %2) -> %4, b(%4) -> %5,
// c(%1) -> %6, d(%5, %3) -> %7; assign of v.
Executable HandMade() {
  using K = BufferDesc::Kind;
  Executable exe;
  exe.buffers = {Buffer(K::kVariable, "w:0"),        Buffer(K::kVariable, "v:0"),
                 Buffer(K::kConstant, "c:0"),        Buffer(K::kFeed, "x:0"),
                 Buffer(K::kArena, "a:0", 0),        Buffer(K::kArena, "b:0", 64),
                 Buffer(K::kArena, "c_of_v:0", 128), Buffer(K::kArena, "d:0", 192)};
  exe.buffers[2].index = 0;
  exe.constants = {Tensor::FromVector<float>(Shape{4}, {1, 2, 3, 4})};
  exe.buffers[3].index = 0;
  exe.feeds = {TensorRef{"x", 0}};
  exe.arena_bytes = 256;
  Step assign = MakeStep(Step::Kind::kLibrary, "assign", {1, 6}, {1}, "assign_v");
  assign.node.inputs = {TensorRef{"v", 0}, TensorRef{"c_of_v", 0}};
  exe.steps = {MakeStep(Step::Kind::kLibrary, "variable_read", {}, {0}, "w"),
               MakeStep(Step::Kind::kLibrary, "variable_read", {}, {1}, "v"),
               MakeStep(Step::Kind::kKernel, "a", {0, 2}, {4}),
               MakeStep(Step::Kind::kKernel, "b", {4}, {5}),
               MakeStep(Step::Kind::kKernel, "c", {1}, {6}),
               MakeStep(Step::Kind::kKernel, "d", {5, 3}, {7}),
               std::move(assign)};
  exe.fetches = {7};
  return exe;
}

TEST_CASE("steps that read only constants and unassigned variables are invariant", "[cpu]") {
  Executable exe = HandMade();
  // a reads w and a constant, b reads a's result; c reads v, which the plan assigns; d a feed.
  CHECK(InvariantSteps(exe) == std::vector<bool>{false, false, true, true, false, false, false});
  CHECK(KeptAcrossRuns(exe, 0));
  CHECK_FALSE(KeptAcrossRuns(exe, 1));
  CHECK(KeptAcrossRuns(exe, 2));
  CHECK_FALSE(KeptAcrossRuns(exe, 3));
  exe.steps[2].invariant = exe.steps[3].invariant = true;
  CHECK(CheckInvariantSteps(exe).ok());
  CHECK(InvariantRoots(exe, 3) == std::vector<int>{0});

  SECTION("a marked step that reads what changes is refused") {
    exe.steps[4].invariant = true;
    CHECK_THAT(CheckInvariantSteps(exe).ToString(), Catch::Contains("step 4 (c)"));
  }
  SECTION("a marked result that shares bytes is refused") {
    exe.buffers[7].offset = 64;  // d's result on b's bytes
    CHECK_THAT(CheckInvariantSteps(exe).ToString(),
               Catch::Contains("the result of an invariant step, shares bytes with buffer %7"));
  }
  SECTION("the mark survives the executable's protobuf form") {
    Result<Executable> back = ExecutableFromProto(ExecutableToProto(exe));
    REQUIRE(back.ok());
    std::vector<bool> marks;
    for (const Step& s : back->steps) marks.push_back(s.invariant);
    CHECK(marks == std::vector<bool>{false, false, true, true, false, false, false});
  }
}

// x [2, 8] @ w [8, 8] in bf16 (inference: w's bf16 copy is invariant) or with an SGD step.
struct Net {
  Graph graph;
  std::string train;
};
Net Dense(bool train) {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 8});
  Value w = Variable(g, "w", f32, {8, 8}, Initializer::GlorotUniform(3));
  Value y = Relu(MatMul(x, w));
  g.Output("y", y);
  Net net;
  if (train) net.train = optim::SGD({.lr = 0.1}).Minimize(Mean(Mul(y, y))).name();
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  net.graph = std::move(*graph);
  return net;
}

// The cpu plan's executable in bf16.
Executable CpuPlan(const Graph& graph, const std::vector<TensorName>& fetches,
                   const std::vector<TensorName>& targets) {
  const FeedList feeds = {{"x", Tensor::FromDoubles(f32, Shape{2, 8}, std::vector<double>(16, 1))}};
  return testing::CpuExecutable(
      graph, feeds, fetches, targets,
      SessionOptions{.backend = "reference", .precision = {.compute = bf16}});
}

TEST_CASE("a bf16 inference plan computes its weights' bf16 copy once per version", "[cpu]") {
  if (testing::CompiledBackends().empty()) return;
  Net inference = Dense(false);
  const Executable exe = CpuPlan(inference.graph, {"y"}, {});
  INFO(exe.ToString());
  int invariant = 0;
  for (const Step& s : exe.steps) invariant += s.invariant;
  CHECK(invariant == 1);  // the Cast of w
  CHECK(CheckInvariantSteps(exe).ok());

  Net training = Dense(true);
  const Executable train_exe = CpuPlan(training.graph, {"y"}, {training.train});
  for (const Step& s : train_exe.steps) CHECK_FALSE(s.invariant);
}

}  // namespace
}  // namespace kiln
