// compiler/assign_folding.h on the cpu backend: an update of an f32 variable by a bf16 value
// widened through a Cast reads the bf16 value itself, with no kernel step for the Cast; an
// AssignAdd or AssignSub by a value scattered into zeros (a Pad) updates only the scattered
// region, from the Pad's input. Either way the variable ends bitwise as the reference executor
// leaves it.
#include <catch2/catch.hpp>

#include "compiler/plan_executable.h"
#include "ir/builder.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/state.h"
#include "runtime/session.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

enum class Update { kAssign, kAdd, kSub, kScaledSub };

// w (f32, shape) updated by Cast(g, f32), g fed as bf16; "cast" is the widened value's name.
Graph UpdateGraph(Update update, const Shape& shape) {
  GraphBuilder g;
  Value grad = g.Placeholder("g", bf16, shape);
  Value w = Variable(g, "w", f32, shape, Initializer::Constant(0.75));
  Value wide = Cast(grad, f32).Named("cast");
  switch (update) {
    case Update::kAssign:
      Assign(w, wide).Named("update");
      break;
    case Update::kAdd:
      AssignAdd(w, wide).Named("update");
      break;
    case Update::kSub:
      AssignSub(w, wide).Named("update");
      break;
    case Update::kScaledSub:
      AssignSub(w, wide, g.Scalar(0.01f)).Named("update");
      break;
  }
  return *g.Build();
}

// The cpu plan of `fetches` and the update.
Executable CpuPlan(const Graph& graph, const FeedList& feeds,
                   const std::vector<TensorName>& fetches) {
  Session planner(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = planner.Plan(feeds, fetches, {"update"});
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  Result<compiler::PlannedExecutable> planned =
      compiler::PlanExecutable(*plan, compiler::CpuPlanOptions());
  INFO(planned.status().ToString());
  REQUIRE(planned.ok());
  return planned->lowered.executable;
}

// The value each assign step of the cpu plan of `fetches` and the update reads.
std::vector<DType> AssignValueTypes(const Graph& graph, const FeedList& feeds,
                                    const std::vector<TensorName>& fetches) {
  const Executable exe = CpuPlan(graph, feeds, fetches);
  std::vector<DType> types;
  for (const Step& step : exe.steps)
    if (step.callee == "assign") types.push_back(exe.buffers[step.inputs[1]].type.dtype);
  return types;
}

// w after two updates, on `backend`.
Tensor UpdatedTwice(const Graph& graph, const FeedList& feeds, const std::string& backend) {
  Session session(graph, SessionOptions{.backend = backend});
  for (int step = 0; step < 2; ++step) REQUIRE(session.Run(feeds, {}, {"update"}).ok());
  Result<std::vector<Tensor>> w = session.Run({}, {"w"});
  REQUIRE(w.ok());
  return (*w)[0];
}

TEST_CASE("a bf16 value widened for an f32 variable's update is read as bf16 by the assign step",
          "[cpu][precision]") {
  const Update update = GENERATE(Update::kAssign, Update::kAdd, Update::kSub, Update::kScaledSub);
  // Small, and over the size that splits the update over threads.
  const Shape shape = GENERATE(Shape{5}, Shape{300, 257});
  INFO("update " << static_cast<int>(update) << ", shape " << shape.ToString());
  const Graph graph = UpdateGraph(update, shape);
  const FeedList feeds = {{"g", testing::RandomTensor(shape, 7, -3, 3).CastTo(bf16)}};
  CHECK(AssignValueTypes(graph, feeds, {}) == std::vector<DType>{bf16});
  const Tensor expected = UpdatedTwice(graph, feeds, "reference");
  CHECK(UpdatedTwice(graph, feeds, "cpu").BitwiseEquals(expected));
}

TEST_CASE("a widened value that is also fetched keeps its Cast", "[cpu][precision]") {
  const Graph graph = UpdateGraph(Update::kScaledSub, Shape{5});
  const FeedList feeds = {{"g", testing::RandomTensor(Shape{5}, 3).CastTo(bf16)}};
  CHECK(AssignValueTypes(graph, feeds, {"cast"}) == std::vector<DType>{f32});
  Session reference(graph, SessionOptions{.backend = "reference"});
  Session cpu(graph, SessionOptions{.backend = "cpu"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, {"cast"}, {"update"});
  Result<std::vector<Tensor>> got = cpu.Run(feeds, {"cast"}, {"update"});
  REQUIRE(expected.ok());
  REQUIRE(got.ok());
  CHECK(got->at(0).BitwiseEquals(expected->at(0)));
}

// w [4, 3, 3, 3] of `dtype` updated by the centre taps' value, scattered into zeros by a Pad: a
// gradient fed as [4, 3, 1, 1] in `value_dtype`, widened to w's dtype where they differ.
Graph CentreTapsGraph(bool add, DType dtype, DType value_dtype) {
  GraphBuilder g;
  Value grad = g.Placeholder("g", value_dtype, {4, 3, 1, 1});
  Value w = Variable(g, "w", dtype, {4, 3, 3, 3}, Initializer::Constant(0.75));
  Value scattered = Pad(grad, {0, 0, 1, 1, 0, 0, 1, 1});
  if (value_dtype != dtype) scattered = Cast(scattered, dtype);
  Value rate = g.Scalar(0.01f);
  (add ? AssignAdd(w, scattered, rate) : AssignSub(w, scattered, rate)).Named("update");
  return *g.Build();
}

TEST_CASE("an update by a value scattered into zeros updates only the scattered region",
          "[cpu][precision]") {
  const bool add = GENERATE(false, true);
  const auto [dtype, value_dtype] = GENERATE(std::pair{f32, f32}, std::pair{f32, bf16});
  INFO((add ? "AssignAdd" : "AssignSub")
       << " of " << DTypeName(dtype) << " by " << DTypeName(value_dtype));
  const Graph graph = CentreTapsGraph(add, dtype, value_dtype);
  const FeedList feeds = {
      {"g", testing::RandomTensor(Shape{4, 3, 1, 1}, 5, -3, 3).CastTo(value_dtype)}};
  const Executable exe = CpuPlan(graph, feeds, {});
  int regions = 0, copies = 0;
  for (const Step& step : exe.steps) {
    copies += step.callee == "strided_copy";
    if (step.callee != "assign") continue;
    regions += step.attrs.Has("dims");
    CHECK(exe.buffers[step.inputs[1]].type == TensorType{value_dtype, Shape{4, 3, 1, 1}});
  }
  CHECK(regions == 1);
  CHECK(copies == 0);
  const Tensor expected = UpdatedTwice(graph, feeds, "reference");
  CHECK(UpdatedTwice(graph, feeds, "cpu").BitwiseEquals(expected));
}

TEST_CASE("Assign by a scattered value, and a scattered value also fetched, keep the copy",
          "[cpu][precision]") {
  GraphBuilder g;
  Value grad = g.Placeholder("g", f32, {2, 1});
  Value w = Variable(g, "w", f32, {2, 3}, Initializer::Constant(0.5));
  Value scattered = Pad(grad, {0, 1, 0, 1}).Named("scattered");
  Assign(w, scattered).Named("update");
  const Graph graph = *g.Build();
  const FeedList feeds = {{"g", testing::RandomTensor(Shape{2, 1}, 2).CastTo(f32)}};
  for (const std::vector<TensorName>& fetches :
       {std::vector<TensorName>{}, std::vector<TensorName>{"scattered"}}) {
    const Executable exe = CpuPlan(graph, feeds, fetches);
    for (const Step& step : exe.steps)
      CHECK_FALSE((step.callee == "assign" && step.attrs.Has("dims")));
  }
  const Tensor expected = UpdatedTwice(graph, feeds, "reference");
  CHECK(UpdatedTwice(graph, feeds, "cpu").BitwiseEquals(expected));
}

}  // namespace
}  // namespace kiln
