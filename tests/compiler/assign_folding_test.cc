// compiler/assign_folding.h on the cpu backend: an update of an f32 variable by a bf16 value
// widened through a Cast reads the bf16 value itself, with no kernel step for the Cast; an
// AssignAdd or AssignSub by a value scattered into zeros (a Pad) updates only the scattered
// region, from the Pad's input. Either way the variable ends bitwise as the reference executor
// leaves it. An AssignAdd or AssignSub by an f32 matrix product (a weight's gradient) adds the
// product into the variable itself, with no gemm step: within the f32 tolerance of the reference.
#include <catch2/catch.hpp>
#include <cmath>

#include "compiler/plan_executable.h"
#include "ir/builder.h"
#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/state.h"
#include "runtime/session.h"
#include "tests/testing/differential.h"
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

double MaxAbsDifference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<double> x = a.ToDoubles(), y = b.ToDoubles();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

// w [m, n] updated by x^T dy (x [k, m], dy [k, n] fed): AssignSub scaled by a learning rate, or
// AssignAdd unscaled. With `reads_w`, the product is w dy' instead (dy' [n, n]): the gradient reads
// the weight it updates. "dw" names the product.
Graph ProductUpdateGraph(bool add, bool reads_w, int64_t m, int64_t n, int64_t k,
                         DType dtype = f32) {
  GraphBuilder g;
  Value w = Variable(g, "w", f32, {m, n}, Initializer::Constant(0.75));
  Value dw = reads_w ? MatMul(w, g.Placeholder("dy", f32, {n, n}))
                     : MatMul(g.Placeholder("x", dtype, {k, m}), g.Placeholder("dy", dtype, {k, n}),
                              /*transpose_a=*/true, /*transpose_b=*/false, /*out_dtype=*/f32);
  dw = dw.Named("dw");
  (add ? AssignAdd(w, dw) : AssignSub(w, dw, g.Scalar(0.01f))).Named("update");
  return *g.Build();
}

TEST_CASE("an update by a matrix product adds the product into the variable, without a gemm step",
          "[cpu][training]") {
  const bool add = GENERATE(false, true);
  const DType dtype = GENERATE(f32, bf16);  // bf16: mixed precision's gradient, written in f32
  // Small; and over the size that splits the product over threads, with several blocks of k.
  const auto [m, n, k] = GENERATE(std::tuple{5, 7, 3}, std::tuple{300, 257, 1100});
  INFO((add ? "AssignAdd" : "AssignSub")
       << " of [" << m << ", " << n << "], k " << k << ", " << DTypeName(dtype) << " operands");
  const Graph graph = ProductUpdateGraph(add, false, m, n, k, dtype);
  const FeedList feeds = {{"x", testing::RandomTensor(Shape{k, m}, 5).CastTo(dtype)},
                          {"dy", testing::RandomTensor(Shape{k, n}, 6).CastTo(dtype)}};
  const Executable exe = CpuPlan(graph, feeds, {});
  int products = 0, gemms = 0;
  for (const Step& step : exe.steps) {
    gemms += step.callee == "gemm";
    products += step.callee == "assign" && step.attrs.Has("product");
  }
  CHECK(products == 1);
  CHECK(gemms == 0);
  const Tensor expected = UpdatedTwice(graph, feeds, "reference");
  const Tensor got = UpdatedTwice(graph, feeds, "cpu");
  // Sums of k products of magnitude <= 1 in f32 (the blocked sum cancels to small values here).
  const double tolerance = 1e-5 + 2.4e-7 * static_cast<double>(k);
  CHECK(MaxAbsDifference(expected, got) <= tolerance);
}

TEST_CASE("a product also fetched keeps its gemm, and one that reads its own variable still adds",
          "[cpu][training]") {
  const Graph fetched = ProductUpdateGraph(false, false, 6, 5, 4);
  const FeedList feeds = {{"x", testing::RandomTensor(Shape{4, 6}, 1).CastTo(f32)},
                          {"dy", testing::RandomTensor(Shape{4, 5}, 2).CastTo(f32)}};
  for (const Step& step : CpuPlan(fetched, feeds, {"dw"}).steps)
    CHECK_FALSE((step.callee == "assign" && step.attrs.Has("product")));
  // w -= 0.01 w dy': the product reads w, so it cannot be added into w's storage as it is read.
  const Graph own = ProductUpdateGraph(false, true, 40, 33, 0);
  const FeedList own_feeds = {{"dy", testing::RandomTensor(Shape{33, 33}, 3).CastTo(f32)}};
  int products = 0;
  for (const Step& step : CpuPlan(own, own_feeds, {}).steps)
    products += step.callee == "assign" && step.attrs.Has("product");
  CHECK(products == 1);
  const Tensor expected = UpdatedTwice(own, own_feeds, "reference");
  std::string why;
  const bool close = testing::CloseForDType(expected, UpdatedTwice(own, own_feeds, "cpu"), &why);
  INFO(why);
  CHECK(close);
}

}  // namespace
}  // namespace kiln
