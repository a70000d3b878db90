// compiler/assign_widening.h on the cpu backend: an update of an f32 variable by a bf16 value
// widened through a Cast reads the bf16 value itself, with no kernel step for the Cast, and the
// variable ends bitwise as the reference executor leaves it.
#include <catch2/catch.hpp>

#include "compiler/plan_executable.h"
#include "ir/builder.h"
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

// The value each assign step of the cpu plan of `fetches` and the update reads.
std::vector<DType> AssignValueTypes(const Graph& graph, const FeedList& feeds,
                                    const std::vector<TensorName>& fetches) {
  Session planner(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = planner.Plan(feeds, fetches, {"update"});
  REQUIRE(plan.ok());
  Result<compiler::PlannedExecutable> planned =
      compiler::PlanExecutable(*plan, compiler::CpuPlanOptions());
  REQUIRE(planned.ok());
  const Executable& exe = planned->lowered.executable;
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

}  // namespace
}  // namespace kiln
