// bf16 MatMul and Conv2D (forward and both backward passes) on the cpu backend against the
// reference executor: through oneDNN's native bf16 primitives where this CPU has bf16 arithmetic
// (AVX-512 BF16, AMX), through float32 routines otherwise (runtime/cpu/library_step.cc chooses
// at load). Both paths round once from a float32 accumulation, as the reference does.
#include <catch2/catch.hpp>

#include "compiler/plan_executable.h"
#include "ir/builder.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/onednn_filter_grad_matmul.h"
#include "runtime/cpu/packed_sgemm.h"
#include "runtime/session.h"
#include "tests/compiler/conv_graph.h"
#include "tests/testing/differential.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

Tensor RandomBf16(Shape shape, uint64_t seed) {
  return testing::RandomTensor(shape, seed).CastTo(bf16);
}

void RunBoth(const Graph& graph, const FeedList& feeds, const std::vector<TensorName>& fetches) {
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, fetches);
  INFO((expected.ok() ? "" : expected.error().ToString()));
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(graph, feeds, fetches, *expected);
}

TEST_CASE("bf16 MatMul, batched, transposed, broadcast and fused, matches the reference",
          "[cpu][precision]") {
  WARN("bf16 MatMul on this CPU: "
       << (cpu::HasNativeBf16Matmul() ? "oneDNN native bf16" : "OpenBLAS sgemm on widened copies"));
  for (auto [sa, sb, ta, tb] : std::vector<std::tuple<Shape, Shape, bool, bool>>{
           {Shape{5, 3}, Shape{3, 4}, false, false},
           {Shape{3, 5}, Shape{4, 3}, true, true},
           {Shape{2, 5, 3}, Shape{3, 4}, false, false},
           {Shape{2, 5, 3}, Shape{2, 3, 4}, false, false},
           {Shape{2, 3, 5}, Shape{2, 4, 3}, true, true},
           {Shape{3, 5}, Shape{2, 3, 4}, true, false},
           {Shape{3}, Shape{3, 4}, false, false},
           {Shape{5, 3}, Shape{3}, false, false},
           {Shape{64, 96}, Shape{96, 80}, false, false}}) {
    INFO(sa.ToString() << " x " << sb.ToString() << " ta=" << ta << " tb=" << tb);
    GraphBuilder g;
    Value a = g.Placeholder("a", bf16, sa);
    Value b = g.Placeholder("b", bf16, sb);
    g.Output("c", MatMul(a, b, ta, tb));
    Graph graph = *g.Build();
    RunBoth(graph, {{"a", RandomBf16(sa, 4)}, {"b", RandomBf16(sb, 5)}}, {"c"});
  }
  // out_dtype f32: the float32 product is written as is (a float32 bias then, as for y).
  for (DType out : {DType::kInvalid, f32}) {
    for (bool relu : {false, true}) {
      INFO("bias" << (relu ? " + relu" : "") << ", out_dtype " << DTypeName(out));
      GraphBuilder g;
      Value x = g.Placeholder("x", bf16, {6, 5});
      Value w = g.Placeholder("w", bf16, {5, 3});
      const DType y_dtype = out == f32 ? f32 : bf16;
      Value b = g.Placeholder("b", y_dtype, {3});
      Value y = BiasAdd(MatMul(x, w, false, false, out), b, -1);
      g.Output("y", relu ? Relu(y) : y);
      Graph graph = *g.Build();
      RunBoth(graph,
              {{"x", RandomBf16(Shape{6, 5}, 1)},
               {"w", RandomBf16(Shape{5, 3}, 2)},
               {"b", testing::RandomTensor(Shape{3}, 3).CastTo(y_dtype)}},
              {"y"});
    }
  }
  for (auto [sa, sb, ta, tb] : std::vector<std::tuple<Shape, Shape, bool, bool>>{
           {Shape{2, 5, 3}, Shape{3, 4}, false, false}, {Shape{3, 5}, Shape{4, 3}, true, true}}) {
    INFO("out_dtype f32: " << sa.ToString() << " x " << sb.ToString());
    GraphBuilder g;
    Value c = MatMul(g.Placeholder("a", bf16, sa), g.Placeholder("b", bf16, sb), ta, tb, f32);
    REQUIRE(c.dtype() == f32);
    g.Output("c", c);
    Graph graph = *g.Build();
    RunBoth(graph, {{"a", RandomBf16(sa, 6)}, {"b", RandomBf16(sb, 7)}}, {"c"});
  }
}

TEST_CASE("bf16 Conv2D and its backward passes match the reference", "[cpu][precision]") {
  struct Case {
    Shape x, w;
    Conv2DOptions options;
  };
  for (const Case& c : std::vector<Case>{
           {Shape{2, 3, 8, 8}, Shape{4, 3, 3, 3}, {}},
           {Shape{2, 16, 8, 8}, Shape{16, 16, 3, 3}, {.pads = {1, 1, 1, 1}}},
           {Shape{1, 4, 9, 7},
            Shape{6, 2, 3, 2},
            {.strides = {2, 1}, .pads = {1, 0, 1, 1}, .groups = 2}},
           // Outputs of 1 x 1, 2 x 2 and 1 x 2: the weight gradient is one matrix product over
           // x's im2col where oneDNN has a native bf16 matmul (onednn_filter_grad_matmul.h),
           // else computed in f32; with padding, strides and dilation.
           {Shape{4, 32, 1, 1}, Shape{32, 32, 3, 3}, {.pads = {1, 1, 1, 1}}},
           {Shape{4, 16, 4, 4}, Shape{32, 16, 3, 3}, {.strides = {2, 2}, .pads = {1, 1, 1, 1}}},
           {Shape{3, 5, 5, 4},
            Shape{7, 5, 2, 3},
            {.strides = {3, 2}, .pads = {1, 0, 0, 2}, .dilations = {2, 1}}},
           // Three input channels (a first layer): computed in f32.
           {Shape{2, 3, 9, 9}, Shape{8, 3, 3, 3}, {.strides = {2, 2}}}}) {
    INFO(c.x.ToString() << " * " << c.w.ToString());
    Graph graph = testing::ConvForwardAndBackward(bf16, c.x, c.w, c.options);
    RunBoth(graph, {{"x", RandomBf16(c.x, 8)}, {"w", RandomBf16(c.w, 9)}}, {"y", "dx", "dw"});
  }
}

TEST_CASE("a weight gradient over at most 2 x 2 outputs is one matrix product",
          "[cpu][precision]") {
  const DType dtype = GENERATE(bf16, f32);
  INFO(DTypeName(dtype));
  if (dtype == bf16 ? !cpu::HasNativeBf16Matmul() : !cpu::HasPackedSgemm()) {
    WARN("skipped: this CPU has no " << (dtype == bf16 ? "native bf16 matmul" : "AVX-512"));
    return;
  }
  auto feed = [&](Shape shape, uint64_t seed) {
    return dtype == bf16 ? RandomBf16(shape, seed) : testing::RandomTensor(shape, seed).CastTo(f32);
  };
  // x computed by a convolution (so that the cpu plan may give it one of oneDNN's layouts), dy
  // fed.
  GraphBuilder g;
  Value x0 = g.Placeholder("x0", dtype, {4, 8, 4, 4});
  Value w0 = g.Placeholder("w0", dtype, {16, 8, 1, 1});
  Value x = Conv2D(x0, w0);
  Value dy = g.Placeholder("dy", dtype, {4, 8, 2, 2});
  Value w = g.Placeholder("w", dtype, {8, 16, 3, 3});
  g.Output("dw", Conv2DBackpropFilter(x, dy, w, {.strides = {2, 2}, .pads = {1, 1, 1, 1}}));
  Graph graph = *g.Build();
  const FeedList feeds = {{"x0", feed(Shape{4, 8, 4, 4}, 1)},
                          {"w0", feed(Shape{16, 8, 1, 1}, 4)},
                          {"dy", feed(Shape{4, 8, 2, 2}, 2)},
                          {"w", feed(Shape{8, 16, 3, 3}, 3)}};
  Session planner(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = planner.Plan(feeds, {"dw"});
  REQUIRE(plan.ok());
  Result<compiler::PlannedExecutable> planned =
      compiler::PlanExecutable(*plan, compiler::CpuPlanOptions());
  REQUIRE(planned.ok());
  int products = 0;
  for (const Step& step : planned->lowered.executable.steps)
    products += step.callee == "conv2d_backprop_filter" &&
                cpu::SuitsIm2colFilterGrad(step, planned->lowered.executable);
  CHECK(products == 1);
  RunBoth(graph, feeds, {"dw"});
}

}  // namespace
}  // namespace kiln
