// The compiled cpu backend end to end: fusion decisions, buffer reuse, library calls, plans that
// cannot be static, and training steps, each against the reference executor.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include "compiler/buffer_assignment.h"
#include "compiler/codegen/emit_mlir.h"
#include "compiler/plan_executable.h"
#include "ir/builder.h"
#include "ir/layers.h"
#include "ir/ops/array.h"
#include "ir/ops/array_like.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "models/digits_cnn.h"
#include "passes/autodiff.h"
#include "passes/optim.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/session.h"
#include "tests/compiler/conv_graph.h"
#include "tests/testing/differential.h"
#include "tests/testing/gradcheck_op.h"
#include "tests/testing/run_op.h"

namespace kiln {
namespace {

using compiler::PlanExecutable;
using compiler::PlannedExecutable;
using testing::T1;

Tensor Random(Shape shape, uint64_t seed) { return testing::RandomTensor(shape, seed).CastTo(f32); }

// The plan a Session would run for `fetches` with `feeds`.
RunPlan PlanOf(const Graph& graph, const std::vector<std::pair<std::string, Tensor>>& feeds,
               const std::vector<std::string>& fetches) {
  RunPlan plan;
  for (const auto& [name, t] : feeds) plan.feeds[TensorRef{name, 0}] = t;
  for (const std::string& f : fetches) plan.fetches.push_back(*graph.ResolveTensor(f));
  std::vector<const Node*> order = *graph.TopologicalOrder();
  for (const Node* n : order)
    if (!plan.feeds.count(TensorRef{n->name, 0})) plan.nodes.push_back(n);
  return plan;
}

PlannedExecutable Planned(const Graph& graph, const RunPlan& plan) {
  Result<PlannedExecutable> planned = PlanExecutable(plan, compiler::CpuPlanOptions());
  INFO(planned.status().ToString());
  REQUIRE(planned.ok());
  return std::move(*planned);
}

std::vector<Tensor> RunBoth(const Graph& graph, const FeedList& feeds,
                            const std::vector<TensorName>& fetches) {
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, fetches);
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(graph, feeds, fetches, *expected);
  return *expected;
}

TEST_CASE("an elementwise chain with broadcasting becomes one kernel", "[cpu]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 8});
  Value b = g.Placeholder("b", f32, {8});
  Value y = Relu(Add(Mul(x, g.Scalar(2.0)), b));
  Value z = Sigmoid(Sub(y, g.Scalar(1.0)));
  g.Output("y", y);
  g.Output("z", z);
  Graph graph = *g.Build();
  Tensor xv = Random(Shape{4, 8}, 1);
  Tensor bv = Random(Shape{8}, 2);
  RunPlan plan = PlanOf(graph, {{"x", xv}, {"b", bv}}, {"y", "z"});
  PlannedExecutable p = Planned(graph, plan);
  const Executable& exe = p.lowered.executable;
  INFO(exe.ToString());
  CHECK(exe.CountSteps(Step::Kind::kKernel) == 1);
  CHECK(exe.steps.size() == 1);
  REQUIRE(p.lowered.kernels.size() == 1);
  CHECK(p.lowered.kernels[0].outputs.size() == 2);  // y is fetched and used by z
  RunBoth(graph, {{"x", xv}, {"b", bv}}, {"y", "z"});
}

TEST_CASE("identical clusters share one generated kernel, different constants do not", "[cpu]") {
  GraphBuilder g;
  Value a = g.Placeholder("a", f32, {4, 8});
  Value b = g.Placeholder("b", f32, {8, 8});
  Value c = g.Placeholder("c", f32, {8, 8});
  auto chain = [&](Value x, double shift) {
    return Relu(Add(Mul(x, g.Scalar(2.0)), g.Scalar(shift)));
  };
  // The MatMuls keep the three chains in separate clusters: the first two are the same code.
  Value ya = chain(a, 1.0);
  Value yb = chain(MatMul(ya, b), 1.0);
  Value yc = chain(MatMul(yb, c), 1.0000001);
  g.Output("y", yc);
  Graph graph = *g.Build();
  FeedList feeds = {
      {"a", Random(Shape{4, 8}, 1)}, {"b", Random(Shape{8, 8}, 2)}, {"c", Random(Shape{8, 8}, 3)}};
  std::vector<std::pair<std::string, Tensor>> named;
  for (const auto& [name, t] : feeds) named.emplace_back(name.str(), t);
  PlannedExecutable p = Planned(graph, PlanOf(graph, named, {"y"}));
  const Executable& exe = p.lowered.executable;
  INFO(exe.ToString());
  std::vector<std::string> callees;
  for (const Step& s : exe.steps)
    if (s.kind == Step::Kind::kKernel) callees.push_back(s.callee);
  REQUIRE(callees.size() == 3);
  CHECK(callees[0] == callees[1]);
  CHECK(callees[2] != callees[0]);
  CHECK(p.lowered.kernels.size() == 2);
  RunBoth(graph, feeds, {"y"});
}

TEST_CASE("fusion does not create cycles and explains why", "[cpu]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {4, 4});
  Value a = Exp(x);        // cluster 0
  Value m = MatMul(a, a);  // library call consuming a
  Value c = Add(a, m);     // joining a's cluster would make a cycle through m
  g.Output("c", c);
  Graph graph = *g.Build();
  Tensor xv = Random(Shape{4, 4}, 3);
  PlannedExecutable p = Planned(graph, PlanOf(graph, {{"x", xv}}, {"c"}));
  std::string decisions;
  for (const std::string& d : p.fusion.decisions) decisions += d + "\n";
  INFO(decisions);
  CHECK(p.fusion.clusters.size() == 2);
  CHECK(decisions.find("cycle") != std::string::npos);
  CHECK(p.lowered.executable.CountSteps(Step::Kind::kLibrary) == 1);
  RunBoth(graph, {{"x", xv}}, {"c"});
}

// Appends a step of `kind` calling `callee` that reads `in` and writes `out` (buffer indices).
void AddStep(Executable& exe, std::vector<int> in, std::vector<int> out,
             Step::Kind kind = Step::Kind::kReference, const char* callee = "") {
  Step s;
  s.kind = kind;
  s.callee = callee;
  s.inputs = std::move(in);
  s.outputs = std::move(out);
  exe.steps.push_back(s);
}

TEST_CASE("buffers whose lifetimes do not overlap share the arena", "[cpu]") {
  Executable exe;
  auto buffer = [&](int64_t n) {
    exe.buffers.push_back(BufferDesc{BufferDesc::Kind::kArena, {f32, Shape{n}}, 0, -1, "t"});
    return static_cast<int>(exe.buffers.size() - 1);
  };
  int a = buffer(100), b = buffer(100), c = buffer(100), d = buffer(10);
  auto step = [&](std::vector<int> in, std::vector<int> out) { AddStep(exe, in, out); };
  step({}, {a});
  step({a}, {b});
  step({b}, {c});  // a is dead here: c may take its bytes
  step({c}, {d});
  exe.fetches = {d};
  compiler::MemoryStats stats = compiler::AssignBuffers(exe);
  CHECK(stats.unshared_bytes == 3 * 448 + 64);
  CHECK(stats.arena_bytes == 2 * 448);
  CHECK(exe.buffers[a].offset != exe.buffers[b].offset);
  CHECK(exe.buffers[c].offset != exe.buffers[b].offset);
  CHECK(exe.buffers[c].offset == exe.buffers[a].offset);
}

TEST_CASE("an elementwise step computes into the bytes of an input it reads last", "[cpu]") {
  Executable exe;
  auto buffer = [&](DType dtype, int64_t n) {
    exe.buffers.push_back(BufferDesc{BufferDesc::Kind::kArena, {dtype, Shape{n}}, 0, -1, "t"});
    return static_cast<int>(exe.buffers.size() - 1);
  };
  int a = buffer(f32, 100), b = buffer(f32, 100), c = buffer(f32, 100), d = buffer(i32, 100),
      e = buffer(f32, 100), f = buffer(f32, 100);
  auto step = [&](std::vector<int> in, std::vector<int> out, const char* callee) {
    AddStep(exe, in, out, Step::Kind::kKernel, callee);
  };
  step({}, {a}, "other");
  step({a}, {b}, "elementwise");     // a dies here: b takes its bytes
  step({b}, {c}, "elementwise");     // and c too: one buffer for the chain
  step({c}, {d}, "elementwise");     // an i32 result never shares an f32 input's bytes
  step({c, d}, {e}, "other");        // not elementwise
  step({e, d}, {f}, "elementwise");  // e is fetched: it must survive
  exe.fetches = {e, f};
  compiler::MemoryStats stats = compiler::AssignBuffers(exe, [](const Step& s) {
    return s.callee == std::string("elementwise") ? std::vector<int>{0, 1} : std::vector<int>{};
  });
  CHECK(stats.in_place == 2);
  CHECK(exe.buffers[b].offset == exe.buffers[a].offset);
  CHECK(exe.buffers[c].offset == exe.buffers[a].offset);
  CHECK(exe.buffers[d].offset != exe.buffers[c].offset);
  CHECK(exe.buffers[e].offset != exe.buffers[c].offset);
  CHECK(exe.buffers[f].offset != exe.buffers[e].offset);
  CHECK(stats.arena_bytes == 3 * 448);  // at most three alive at once (chain, d, e; d, e, f)
}

TEST_CASE("a copy that relabels a shape takes the bytes of an input it reads last", "[cpu]") {
  Executable exe;
  auto buffer = [&](Shape shape, std::string layout = "") {
    exe.buffers.push_back(BufferDesc{BufferDesc::Kind::kArena, {f32, shape}, 0, -1, "t", layout});
    return static_cast<int>(exe.buffers.size() - 1);
  };
  auto step = [&](std::vector<int> in, std::vector<int> out, const char* callee) {
    AddStep(exe, in, out, Step::Kind::kLibrary, callee);
  };
  int a = buffer(Shape{4, 6}), b = buffer(Shape{2, 12}), c = buffer(Shape{24}),
      d = buffer(Shape{3, 8}), e = buffer(Shape{24}, "nChw16c"), f = buffer(Shape{24});
  step({}, {a}, "other");
  step({a}, {b}, "copy");  // a dies here: b is a's bytes
  step({b}, {c}, "copy");  // and so is c
  step({c}, {d}, "copy");  // c is read again below: d gets bytes of its own
  step({c, d}, {e}, "other");
  step({e}, {f}, "copy");  // another layout: never the same bytes
  exe.fetches = {f};
  compiler::MemoryStats stats = compiler::AssignBuffers(exe, [](const Step& s) {
    return s.callee == std::string("copy") ? std::vector<int>{0} : std::vector<int>{};
  });
  CHECK(stats.in_place == 2);
  CHECK(exe.buffers[b].offset == exe.buffers[a].offset);
  CHECK(exe.buffers[c].offset == exe.buffers[a].offset);
  CHECK(exe.buffers[d].offset != exe.buffers[c].offset);
  CHECK(exe.buffers[f].offset != exe.buffers[e].offset);

  // End to end: the Reshape between two products copies nothing, and the values are right.
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {6, 8});
  Value w = g.Placeholder("w", f32, {8, 4});
  Value r = Reshape(MatMul(x, w), {12, 2});
  g.Output("y", MatMul(r, Transpose(r)));
  Graph graph = *g.Build();
  FeedList feeds = {{"x", Random(Shape{6, 8}, 1)}, {"w", Random(Shape{8, 4}, 2)}};
  PlannedExecutable p =
      Planned(graph, PlanOf(graph, {{"x", feeds[0].second}, {"w", feeds[1].second}}, {"y"}));
  int copies = 0;
  for (const Step& s : p.lowered.executable.steps)
    if (s.callee == "copy") {
      ++copies;
      CHECK(p.lowered.executable.buffers[s.inputs[0]].offset ==
            p.lowered.executable.buffers[s.outputs[0]].offset);
    }
  CHECK(copies == 1);
  RunBoth(graph, feeds, {"y"});
}

TEST_CASE("MatMul runs as a gemm call, batched and broadcast", "[cpu]") {
  for (auto [sa, sb, ta, tb] : std::vector<std::tuple<Shape, Shape, bool, bool>>{
           {Shape{5, 3}, Shape{3, 4}, false, false},
           {Shape{3, 5}, Shape{4, 3}, true, true},
           {Shape{2, 5, 3}, Shape{3, 4}, false, false},
           {Shape{2, 5, 3}, Shape{2, 3, 4}, false, false},
           {Shape{3, 5}, Shape{2, 3, 4}, true, false},
           {Shape{3}, Shape{3, 4}, false, false},
           {Shape{5, 3}, Shape{3}, false, false}}) {
    INFO(sa.ToString() << " x " << sb.ToString() << " ta=" << ta << " tb=" << tb);
    GraphBuilder g;
    Value a = g.Placeholder("a", f32, sa);
    Value b = g.Placeholder("b", f32, sb);
    g.Output("c", MatMul(a, b, ta, tb));
    Graph graph = *g.Build();
    Tensor av = Random(sa, 4), bv = Random(sb, 5);
    PlannedExecutable p = Planned(graph, PlanOf(graph, {{"a", av}, {"b", bv}}, {"c"}));
    CHECK(p.lowered.executable.CountSteps(Step::Kind::kLibrary) == 1);
    RunBoth(graph, {{"a", av}, {"b", bv}}, {"c"});
  }
}

TEST_CASE("Conv2D and its backward ops run as oneDNN calls", "[cpu]") {
  struct Case {
    Shape x, w;
    Conv2DOptions options;
  };
  for (const Case& c : std::vector<Case>{
           {Shape{2, 3, 8, 8}, Shape{4, 3, 3, 3}, {}},
           {Shape{1, 4, 9, 7},
            Shape{6, 2, 3, 2},
            {.strides = {2, 1}, .pads = {1, 0, 1, 1}, .groups = 2}},
           {Shape{2, 2, 10, 10}, Shape{3, 2, 3, 3}, {.pads = {2, 2, 2, 2}, .dilations = {2, 2}}}}) {
    INFO(c.x.ToString() << " * " << c.w.ToString());
    Graph graph = testing::ConvForwardAndBackward(f32, c.x, c.w, c.options);
    Tensor xv = Random(c.x, 8), wv = Random(c.w, 9);
    PlannedExecutable p = Planned(graph, PlanOf(graph, {{"x", xv}, {"w", wv}}, {"y", "dx", "dw"}));
    CHECK(p.lowered.executable.CountSteps(Step::Kind::kLibrary) == 3);
    RunBoth(graph, {{"x", xv}, {"w", wv}}, {"y", "dx", "dw"});
  }
}

TEST_CASE("BatchNorm runs as a oneDNN call in training and inference mode, rank 2 to 5", "[cpu]") {
  for (const Shape& xs : {Shape{6, 3}, Shape{2, 4, 5}, Shape{2, 3, 5, 4}, Shape{2, 2, 3, 2, 3}}) {
    for (bool training : {true, false}) {
      INFO(xs.ToString() << (training ? " training" : " inference"));
      GraphBuilder g;
      Value x = g.Placeholder("x", f32, xs);
      std::vector<Value> stats;
      for (const char* name : {"scale", "bias", "mean", "var"})
        stats.push_back(g.Placeholder(name, f32, {xs[1]}));
      std::vector<Value> out = BatchNorm(x, stats[0], stats[1], stats[2], stats[3], 1e-3, training);
      g.Output("y", out[0]);
      g.Output("batch_mean", out[1]);
      g.Output("batch_var", out[2]);
      Graph graph = *g.Build();
      std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Random(xs, 1)},
                                                           {"scale", Random(Shape{xs[1]}, 2)},
                                                           {"bias", Random(Shape{xs[1]}, 3)},
                                                           {"mean", Random(Shape{xs[1]}, 4)},
                                                           {"var", Random(Shape{xs[1]}, 5)}};
      Tensor& var = feeds.back().second;
      for (int64_t i = 0; i < var.num_elements(); ++i)
        var.SetDouble(i, std::fabs(var.GetDouble(i)));
      PlannedExecutable p = Planned(graph, PlanOf(graph, feeds, {"y", "batch_mean", "batch_var"}));
      CHECK(p.lowered.executable.CountSteps(Step::Kind::kLibrary) == 1);
      CHECK(p.lowered.executable.CountSteps(Step::Kind::kReference) == 0);
      FeedList feed_list(feeds.begin(), feeds.end());
      RunBoth(graph, feed_list, {"y", "batch_mean", "batch_var"});
    }
  }
}

TEST_CASE("BatchNorm's training gradient is one oneDNN backward call, rank 2 to 5", "[cpu]") {
  for (const Shape& xs : {Shape{6, 3}, Shape{2, 4, 5}, Shape{4, 3, 5, 4}, Shape{2, 2, 3, 2, 3}}) {
    INFO(xs.ToString());
    GraphBuilder g;
    Value x = g.Placeholder("x", f32, xs);
    Value scale = g.Placeholder("scale", f32, {xs[1]});
    Value bias = g.Placeholder("bias", f32, {xs[1]});
    Value stats = g.Constant(Tensor::FromDoubles(f32, Shape{xs[1]}, std::vector<double>(xs[1], 0)));
    Value y = BatchNorm(x, scale, bias, stats, stats, 1e-3, /*training=*/true)[0];
    // A weighted sum, so that dy varies per element.
    Value loss = Sum(Mul(y, g.Constant(Random(xs, 4))));
    Result<std::vector<Value>> grads = Gradients({loss}, {x, scale, bias});
    REQUIRE(grads.ok());
    g.Output("dx", (*grads)[0]);
    g.Output("dscale", (*grads)[1]);
    g.Output("dbias", (*grads)[2]);
    Graph graph = *g.Build();
    std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Random(xs, 1)},
                                                         {"scale", Random(Shape{xs[1]}, 2)},
                                                         {"bias", Random(Shape{xs[1]}, 3)}};
    PlannedExecutable p = Planned(graph, PlanOf(graph, feeds, {"dx", "dscale", "dbias"}));
    int grad_steps = 0;
    for (const Step& step : p.lowered.executable.steps)
      grad_steps += step.kind == Step::Kind::kLibrary && step.callee == "batch_norm_grad";
    CHECK(grad_steps == 1);
    RunBoth(graph, FeedList(feeds.begin(), feeds.end()), {"dx", "dscale", "dbias"});
  }
}

TEST_CASE("a gradient's SumLike that sums nothing for the fed shapes is no reduction", "[cpu]") {
  // Built with an unknown batch dim, so Add's and Mul's gradients sum back to each operand's shape
  // with SumLike; fed [3, 4] and [4], only b's sums anything (compiler/static_simplify.h).
  GraphBuilder g;
  Value a = g.Placeholder("a", f32, {-1, 4});
  Value b = g.Placeholder("b", f32, {4});
  Value y = Add(a, b);
  Value loss = Sum(Mul(y, y));
  Result<std::vector<Value>> grads = Gradients({loss}, {a, b});
  REQUIRE(grads.ok());
  g.Output("da", (*grads)[0]);
  g.Output("db", (*grads)[1]);
  Graph graph = *g.Build();
  std::vector<std::pair<std::string, Tensor>> feeds = {{"a", Random(Shape{3, 4}, 1)},
                                                       {"b", Random(Shape{4}, 2)}};
  PlannedExecutable p = Planned(graph, PlanOf(graph, feeds, {"da", "db"}));
  int sum_likes = 0, rewritten = 0;
  for (const Step& step : p.lowered.executable.steps) sum_likes += step.node.op == "SumLike";
  for (const auto& node : p.simplified.rewritten) rewritten += node->op == "Identity";
  CHECK(rewritten == 2);  // Mul's (y * y: its two are one after the plan's cse) and Add's for a
  CHECK(sum_likes == 1);  // Add's for b
  RunBoth(graph, FeedList(feeds.begin(), feeds.end()), {"da", "db"});
}

TEST_CASE("GlobalAvgPool runs as a reduce_sum step (the mean over the spatial dims)", "[cpu]") {
  for (const Shape& xs : {Shape{2, 3, 4, 5}, Shape{1, 2, 7}, Shape{2, 2, 1, 1, 3}}) {
    INFO(xs.ToString());
    GraphBuilder g;
    g.Output("y", GlobalAvgPool(g.Placeholder("x", f32, xs)));
    Graph graph = *g.Build();
    std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Random(xs, 1)}};
    PlannedExecutable p = Planned(graph, PlanOf(graph, feeds, {"y"}));
    REQUIRE(p.lowered.executable.steps.size() == 1);
    CHECK(p.lowered.executable.steps[0].callee == "reduce_sum");
    RunBoth(graph, FeedList(feeds.begin(), feeds.end()), {"y"});
  }
}

TEST_CASE("Sum, Mean and SumLike run as one strided reduce_sum step", "[cpu]") {
  struct Case {
    Shape x;
    std::vector<int64_t> axes;
    bool keepdims;
  };
  for (DType dtype : {f32, f64}) {
    for (const Case& c : std::vector<Case>{{Shape{2, 3, 4, 5}, {0, 2, 3}, false},
                                           {Shape{2, 3, 4, 5}, {1}, true},
                                           {Shape{2, 3, 4, 5}, {}, false},
                                           {Shape{2, 1, 4, 5}, {-1, 0}, true},
                                           {Shape{7}, {0}, false},
                                           {Shape{3, 0, 2}, {1}, false}}) {
      INFO(DTypeName(dtype) << c.x.ToString() << " axes " << c.axes.size());
      GraphBuilder g;
      Value x = g.Placeholder("x", dtype, c.x);
      g.Output("sum", Sum(x, c.axes, c.keepdims));
      g.Output("mean", Mean(x, c.axes, c.keepdims));
      const Shape like_shape{c.x.rank() > 1 ? c.x[1] : 1, 1, 1};  // sums dims 0, 2, 3 away
      if (c.x.rank() == 4)
        g.Output("sum_like", SumLike(x, g.Placeholder("like", dtype, like_shape)));
      Result<Graph> built = g.Build();
      REQUIRE(built.ok());
      Graph graph = std::move(*built);
      std::vector<std::pair<std::string, Tensor>> feeds = {
          {"x", testing::RandomTensor(c.x, 4).CastTo(dtype)}};
      std::vector<std::string> fetches = {"sum", "mean"};
      if (c.x.rank() == 4) {
        feeds.push_back({"like", Tensor(dtype, like_shape)});
        fetches.push_back("sum_like");
      }
      PlannedExecutable p = Planned(graph, PlanOf(graph, feeds, fetches));
      CHECK(p.lowered.executable.CountSteps(Step::Kind::kReference) == 0);
      FeedList feed_list(feeds.begin(), feeds.end());
      RunBoth(graph, feed_list, std::vector<TensorName>(fetches.begin(), fetches.end()));
    }
  }
}

TEST_CASE("BiasAdd runs as a bias_add step along any axis", "[cpu]") {
  for (DType dtype : {f32, f64}) {
    for (const auto& [xs, axis] : std::vector<std::pair<Shape, int64_t>>{{Shape{4, 6}, 1},
                                                                         {Shape{2, 3, 4, 5}, 1},
                                                                         {Shape{2, 3, 4, 5}, -1},
                                                                         {Shape{2, 3, 4}, 0}}) {
      INFO(DTypeName(dtype) << xs.ToString() << " axis " << axis);
      GraphBuilder g;
      Value x = g.Placeholder("x", dtype, xs);
      const int64_t channels = xs[axis < 0 ? axis + xs.rank() : axis];
      Value b = g.Placeholder("b", dtype, {channels});
      g.Output("y", BiasAdd(x, b, axis));
      Graph graph = *g.Build();
      std::vector<std::pair<std::string, Tensor>> feeds = {
          {"x", testing::RandomTensor(xs, 1).CastTo(dtype)},
          {"b", testing::RandomTensor(Shape{channels}, 2).CastTo(dtype)}};
      PlannedExecutable p = Planned(graph, PlanOf(graph, feeds, {"y"}));
      CHECK(p.lowered.executable.CountSteps(Step::Kind::kReference) == 0);
      FeedList feed_list(feeds.begin(), feeds.end());
      RunBoth(graph, feed_list, {"y"});
    }
  }
}

TEST_CASE("computations on constants fold at compile time", "[cpu]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 3});
  Value folded = Exp(Mul(g.Constant(T1<float>({1, 2, 3})), g.Scalar(0.5)));
  g.Output("y", Relu(ReshapeLike(Add(x, folded), x)));
  Graph graph = *g.Build();
  Tensor xv = Random(Shape{4, 3}, 6);
  PlannedExecutable p = Planned(graph, PlanOf(graph, {{"x", xv}}, {"y"}));
  INFO(p.lowered.executable.ToString());
  // Mul and Exp are a constant now; the Add, the ReshapeLike (reference) and the Relu run.
  CHECK(p.lowered.executable.constants.size() == 1);
  CHECK(p.lowered.executable.steps.size() == 3);
  RunBoth(graph, {{"x", xv}}, {"y"});
}

// A convolution, then `tail` applied to it (given the bias and a residual); x, w, b, r fed.
struct EpilogueGraph {
  Graph graph;
  std::vector<std::pair<std::string, Tensor>> feeds;
  FeedList feed_list() const { return FeedList(feeds.begin(), feeds.end()); }
};

EpilogueGraph ConvWithTail(
    const Shape& xs, const Shape& ws, const Conv2DOptions& options,
    const std::function<void(GraphBuilder&, Value conv, Value bias, Value residual)>& tail) {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, xs);
  Value w = g.Placeholder("w", f32, ws);
  Value b = g.Placeholder("b", f32, {ws[0]});
  Value conv = Conv2D(x, w, options);
  const Shape ys = conv.type().shape;
  Value r = g.Placeholder("r", f32, ys);
  tail(g, conv, b, r);
  EpilogueGraph out{*g.Build(), {}};
  out.feeds = {{"x", Random(xs, 11)},
               {"w", Random(ws, 12)},
               {"b", Random(Shape{ws[0]}, 13)},
               {"r", Random(ys, 14)}};
  return out;
}

int CountCallee(const Executable& exe, const std::string& callee) {
  int n = 0;
  for (const Step& s : exe.steps) n += s.callee == callee;
  return n;
}

TEST_CASE("Conv2D absorbs its bias, residual Add, Relu and Clip as oneDNN post-ops", "[cpu]") {
  using Tail = std::function<void(GraphBuilder&, Value, Value, Value)>;
  struct Form {
    const char* name;
    Tail tail;
  };
  const std::vector<Form> forms = {
      {"conv+bias",
       [](GraphBuilder& g, Value c, Value b, Value) {
         Value y = BiasAdd(c, b);
         g.Output("y", y);
       }},
      {"conv+bias+relu",
       [](GraphBuilder& g, Value c, Value b, Value) {
         Value y = BiasAdd(c, b);
         g.Output("y", Relu(y));
       }},
      {"conv+bias+add+relu",
       [](GraphBuilder& g, Value c, Value b, Value r) {
         Value y = BiasAdd(c, b);
         g.Output("y", Relu(Add(r, y)));
       }},
      // Both operands of the Add are convolutions (ResNet's projection shortcut): the first
      // absorbs the Add, the second's output is its residual.
      {"conv+bias+add(conv+bias)+relu",
       [](GraphBuilder& g, Value c, Value b, Value r) {
         Value y = BiasAdd(c, b);
         Value w2 = g.Constant(Random(Shape{r.shape()[1], r.shape()[1], 1, 1}, 21));
         g.Output("y", Relu(Add(y, BiasAdd(Conv2D(r, w2), b))));
       }},
      {"conv+relu", [](GraphBuilder& g, Value c, Value, Value) { g.Output("y", Relu(c)); }},
      // MobileNet's ReLU6, and a Clip after a Relu and the residual.
      {"conv+bias+clip",
       [](GraphBuilder& g, Value c, Value b, Value) { g.Output("y", Clip(BiasAdd(c, b), 0, 6)); }},
      {"conv+bias+add+relu+clip", [](GraphBuilder& g, Value c, Value b, Value r) {
         g.Output("y", Clip(Relu(Add(r, BiasAdd(c, b))), -0.5, 0.25));
       }}};
  struct Case {
    Shape x, w;
    Conv2DOptions options;
  };
  for (const Case& c :
       std::vector<Case>{{Shape{2, 3, 8, 8}, Shape{4, 3, 3, 3}, {.pads = {1, 1, 1, 1}}},
                         {Shape{1, 4, 9, 7},
                          Shape{6, 2, 3, 2},
                          {.strides = {2, 1}, .pads = {1, 0, 1, 1}, .groups = 2}},
                         {Shape{2, 16, 6, 6}, Shape{16, 16, 1, 1}, {}}}) {
    for (const Form& form : forms) {
      INFO(form.name << " " << c.x.ToString() << " * " << c.w.ToString());
      EpilogueGraph e = ConvWithTail(c.x, c.w, c.options, form.tail);
      PlannedExecutable p = Planned(e.graph, PlanOf(e.graph, e.feeds, {"y"}));
      // Only convolutions run: every epilogue is inside one.
      CHECK(p.lowered.executable.steps.size() ==
            static_cast<size_t>(CountCallee(p.lowered.executable, "conv2d")));
      RunBoth(e.graph, e.feed_list(), {"y"});
    }
  }
}

TEST_CASE("a convolution computes into the bytes of the residual it sums, never of its input",
          "[cpu]") {
  // The projection shortcut's output dies in the convolution that sums it: the output takes its
  // bytes, and the sum post-op finds the residual in place.
  GraphBuilder b;
  Value in = b.Placeholder("x", f32, {2, 16, 6, 6});
  Value r = Conv2D(in, b.Constant(Random(Shape{16, 16, 1, 1}, 1)));
  Value sum =
      Relu(Add(Conv2D(in, b.Constant(Random(Shape{16, 16, 3, 3}, 2)), {.pads = {1, 1, 1, 1}}), r));
  b.Output("y", Conv2D(sum, b.Constant(Random(Shape{8, 16, 1, 1}, 3))));
  Graph shortcut = *b.Build();
  Tensor inv = Random(Shape{2, 16, 6, 6}, 4);
  PlannedExecutable planned = Planned(shortcut, PlanOf(shortcut, {{"x", inv}}, {"y"}));
  int in_place = 0;
  for (const Step& s : planned.lowered.executable.steps)
    if (s.attrs.Has("post_ops") && !s.attrs.GetInts("post_ops")->empty() &&
        s.attrs.GetInts("post_ops")->front() == 1)
      in_place += planned.lowered.executable.buffers[s.inputs.back()].offset ==
                  planned.lowered.executable.buffers[s.outputs[0]].offset;
  CHECK(in_place == 1);
  RunBoth(shortcut, {{"x", inv}}, {"y"});

  // A convolution whose residual is its own input never writes over it.
  GraphBuilder g;
  Value x = Relu(g.Placeholder("x", f32, {2, 16, 6, 6}));
  Value w = g.Constant(Random(Shape{16, 16, 1, 1}, 5));
  g.Output("y", Add(Conv2D(x, w), x));
  Graph graph = *g.Build();
  Tensor xv = Random(Shape{2, 16, 6, 6}, 6);
  PlannedExecutable p = Planned(graph, PlanOf(graph, {{"x", xv}}, {"y"}));
  const Executable& exe = p.lowered.executable;
  REQUIRE(CountCallee(exe, "conv2d") == 1);
  for (const Step& s : exe.steps)
    if (s.callee == "conv2d") {
      REQUIRE(s.inputs.front() == s.inputs.back());
      CHECK(exe.buffers[s.inputs.front()].offset != exe.buffers[s.outputs[0]].offset);
    }
  RunBoth(graph, {{"x", xv}}, {"y"});
}

TEST_CASE("Conv2D epilogues stop at values read elsewhere, fetched, or of another shape", "[cpu]") {
  using Tail = std::function<void(GraphBuilder&, Value, Value, Value)>;
  struct Form {
    const char* name;
    Tail tail;
    std::vector<std::string> fetches;
    size_t steps;  // conv2d plus what stays outside it
  };
  const std::vector<Form> forms = {
      // The bias output fetched: conv2d writes it (bias fused), the Relu stays a kernel.
      {"bias fetched",
       [](GraphBuilder& g, Value c, Value b, Value) {
         Value y = BiasAdd(c, b);
         g.Output("biased", y);
         g.Output("y", Relu(y));
       },
       {"biased", "y"},
       2},
      // The pre-activation read twice (as Relu's gradient does): conv2d+bias, one kernel.
      {"pre-activation read twice",
       [](GraphBuilder& g, Value c, Value b, Value) {
         Value y = BiasAdd(c, b);
         g.Output("y", Mul(Relu(y), y));
       },
       {"y"},
       2},
      // The Relu output read twice: it is still computed by the convolution.
      {"relu output read twice",
       [](GraphBuilder& g, Value c, Value b, Value) {
         Value y = BiasAdd(c, b);
         Value a = Relu(y);
         g.Output("y", Mul(a, a));
       },
       {"y"},
       2},
      // A residual broadcast from another shape stays an elementwise kernel.
      {"residual of another shape",
       [](GraphBuilder& g, Value c, Value b, Value r) {
         Value y = BiasAdd(c, b);
         g.Output("y", Relu(Add(y, Sum(r, {0}, /*keepdims=*/true))));
       },
       {"y"},
       3},
      // Conv output fetched: nothing fused.
      {"conv fetched",
       [](GraphBuilder& g, Value c, Value b, Value) {
         Value y = BiasAdd(c, b);
         g.Output("c", c);
         g.Output("y", Relu(y));
       },
       {"c", "y"},
       3}};
  for (const Form& form : forms) {
    INFO(form.name);
    EpilogueGraph e = ConvWithTail(Shape{2, 3, 8, 8}, Shape{4, 3, 3, 3}, {}, form.tail);
    PlannedExecutable p = Planned(e.graph, PlanOf(e.graph, e.feeds, form.fetches));
    INFO(p.lowered.executable.ToString());
    CHECK(p.lowered.executable.steps.size() == form.steps);
    std::vector<TensorName> fetches(form.fetches.begin(), form.fetches.end());
    RunBoth(e.graph, e.feed_list(), fetches);
  }
}

TEST_CASE("OneHot runs as the one_hot routine, with the reference kernel's results", "[cpu]") {
  // Negative indices count from the end; out of [-depth, depth) they give a row of off_value.
  for (DType index : {i32, i64}) {
    for (DType value : {f32, f64}) {
      for (int64_t axis : {-1, 0, 1}) {
        INFO(DTypeName(index) << " -> " << DTypeName(value) << " axis " << axis);
        GraphBuilder g;
        Value idx = g.Placeholder("idx", index, {2, 3});
        g.Output("y", OneHot(idx, 4, value, 2.5, -1, axis));
        Result<Graph> graph = g.Build();
        REQUIRE(graph.ok());
        const Tensor idx_value = Tensor::FromDoubles(index, Shape{2, 3}, {0, 3, -1, -4, 4, -5});
        PlannedExecutable p = Planned(*graph, PlanOf(*graph, {{"idx", idx_value}}, {"y"}));
        CHECK(CountCallee(p.lowered.executable, "one_hot") == 1);
        CHECK(p.lowered.executable.steps.size() == 1);
        RunBoth(*graph, {{"idx", idx_value}}, {"y"});
      }
    }
  }
}

TEST_CASE("Gather and GatherGrad run as the gather routines, with the reference's results",
          "[cpu]") {
  // Repeated and negative indices (a repeated row sums its gradients in index order), any axis.
  for (DType index : {i32, i64}) {
    for (DType value : {f32, f64}) {
      for (int64_t axis : {0, 1, -1}) {
        INFO(DTypeName(index) << " indices into " << DTypeName(value) << " axis " << axis);
        GraphBuilder g;
        Value data = g.Placeholder("data", value, {5, 4, 3});
        Value idx = g.Placeholder("idx", index, {2, 3});
        Value y = Gather(data, idx, axis);
        g.Output("y", y);
        g.Output("dx", GatherGrad(Square(y), idx, data, axis));
        Graph graph = *g.Build();
        const Tensor idx_value = Tensor::FromDoubles(index, Shape{2, 3}, {0, 2, -1, 2, 1, 0});
        const Tensor data_value = testing::RandomTensor(Shape{5, 4, 3}, 7).CastTo(value);
        PlannedExecutable p =
            Planned(graph, PlanOf(graph, {{"data", data_value}, {"idx", idx_value}}, {"y", "dx"}));
        CHECK(CountCallee(p.lowered.executable, "gather") == 1);
        CHECK(CountCallee(p.lowered.executable, "gather_grad") == 1);
        CHECK(p.lowered.executable.CountSteps(Step::Kind::kReference) == 0);
        RunBoth(graph, {{"data", data_value}, {"idx", idx_value}}, {"y", "dx"});
        // An index out of range fails the run naming the node, as the reference kernel does.
        Session session(graph, SessionOptions{.backend = "cpu"});
        const Tensor bad = Tensor::FromDoubles(index, Shape{2, 3}, {0, 1, 2, 9, 0, 0});
        Result<std::vector<Tensor>> failed =
            session.Run({{"data", data_value}, {"idx", bad}}, {"y"});
        REQUIRE_FALSE(failed.ok());
        CHECK_THAT(failed.error().message(),
                   Catch::Contains("Gather") && Catch::Contains("index 9 is out of range"));
      }
    }
  }
}

TEST_CASE("an elementwise op reads a broadcast's source and broadcasts it itself", "[cpu]") {
  Tensor xv = Random(Shape{4, 1}, 1), yv = Random(Shape{4, 6}, 2), zv = Random(Shape{1}, 3);
  for (bool shifted : {false, true}) {
    INFO((shifted ? "with" : "without") << " an Add that keeps the broadcast");
    GraphBuilder g;
    Value x = g.Placeholder("x", f32, {4, 1});
    Value y = g.Placeholder("y", f32, {4, 6});
    Value z = g.Placeholder("z", f32, {1});
    Value wide = BroadcastLike(x, y);
    g.Output("product", Mul(wide, y));  // folds: x * y is [4, 6] too
    g.Output("to", Sub(y, BroadcastTo(x, {4, 6})));
    if (shifted) g.Output("shifted", Add(wide, z));  // does not: x + z would be [4, 1]
    Graph graph = *g.Build();
    std::vector<std::string> fetches = {"product", "to"};
    if (shifted) fetches.push_back("shifted");
    PlannedExecutable p = Planned(graph, PlanOf(graph, {{"x", xv}, {"y", yv}, {"z", zv}}, fetches));
    CHECK(CountCallee(p.lowered.executable, "strided_copy") == (shifted ? 1 : 0));
    CHECK(p.lowered.executable.CountSteps(Step::Kind::kKernel) == (shifted ? 3 : 2));
    RunBoth(graph, {{"x", xv}, {"y", yv}, {"z", zv}},
            std::vector<TensorName>(fetches.begin(), fetches.end()));
  }
}

TEST_CASE("MatMuls read transposed operands and write transposed products through trans flags",
          "[cpu]") {
  // Attention's scores: q k^T with k scaled after its transpose, as PyTorch exports it.
  GraphBuilder g;
  Value q = g.Placeholder("q", f32, {2, 3, 5, 4});
  Value k = g.Placeholder("k", f32, {2, 3, 5, 4});
  Value kt = Transpose(k, {0, 1, 3, 2});
  Value scaled = Mul(kt, g.Scalar(0.5));
  g.Output("scores", MatMul(q, scaled));
  g.Output("scaled", scaled);
  g.Output("qt_k", MatMul(Transpose(q, {0, 1, 3, 2}), k));  // a's transpose
  Value p = g.Placeholder("p", f32, {3, 2, 5, 4});
  g.Output("other_perm", MatMul(Transpose(p, {1, 0, 2, 3}), kt));             // only b folds
  g.Output("product_t", Transpose(MatMul(q, k, false, true), {0, 1, 3, 2}));  // k q^T
  Graph graph = *g.Build();
  Tensor qv = Random(Shape{2, 3, 5, 4}, 3), kv = Random(Shape{2, 3, 5, 4}, 4),
         pv = Random(Shape{3, 2, 5, 4}, 5);
  FeedList feeds = {{"q", qv}, {"k", kv}, {"p", pv}};
  std::vector<std::pair<std::string, Tensor>> plan_feeds = {{"q", qv}, {"k", kv}, {"p", pv}};
  for (bool fetch_scaled : {false, true}) {
    INFO("fetching the scaled transpose: " << fetch_scaled);
    std::vector<std::string> fetches = {"scores", "qt_k", "other_perm", "product_t"};
    if (fetch_scaled) fetches.push_back("scaled");
    PlannedExecutable p = Planned(graph, PlanOf(graph, plan_feeds, fetches));
    // What stays a strided copy: the batch-dim Transpose, and the scaled transpose when fetched.
    CHECK(CountCallee(p.lowered.executable, "strided_copy") == (fetch_scaled ? 2 : 1));
    int trans_a = 0, trans_b = 0;
    for (const Step& s : p.lowered.executable.steps)
      if (s.callee == "gemm")
        trans_a += *s.attrs.GetInt("trans_a"), trans_b += *s.attrs.GetInt("trans_b");
    CHECK(trans_a == 1);
    CHECK(trans_b == 3);
    RunBoth(graph, feeds, std::vector<TensorName>(fetches.begin(), fetches.end()));
  }
}

TEST_CASE("a rank-2 MatMul absorbs its bias and Relu into the gemm call", "[cpu]") {
  for (DType dtype : {f32, f64}) {
    for (bool relu : {false, true}) {
      for (bool batched : {false, true}) {
        INFO(DTypeName(dtype) << (relu ? " relu" : "") << (batched ? " batched" : ""));
        GraphBuilder g;
        const Shape xs = batched ? Shape{2, 6, 5} : Shape{6, 5};
        Value x = g.Placeholder("x", dtype, xs);
        Value w = g.Placeholder("w", dtype, {5, 3});
        Value b = g.Placeholder("b", dtype, {3});
        Value y = BiasAdd(MatMul(x, w), b, -1);
        g.Output("y", relu ? Relu(y) : y);
        Graph graph = *g.Build();
        std::vector<std::pair<std::string, Tensor>> feeds = {
            {"x", testing::RandomTensor(xs, 1).CastTo(dtype)},
            {"w", testing::RandomTensor(Shape{5, 3}, 2).CastTo(dtype)},
            {"b", testing::RandomTensor(Shape{3}, 3).CastTo(dtype)}};
        PlannedExecutable p = Planned(graph, PlanOf(graph, feeds, {"y"}));
        // Batched MatMuls keep the bias_add step (and the Relu kernel).
        CHECK(p.lowered.executable.steps.size() == (batched ? 2u + relu : 1u));
        CHECK(CountCallee(p.lowered.executable, "gemm") == 1);
        RunBoth(graph, FeedList(feeds.begin(), feeds.end()), {"y"});
      }
    }
  }
}

TEST_CASE("a rank-2 MatMul absorbs a tanh-approximated Gelu, never the exact one", "[cpu]") {
  // cuBLASLt's GELU epilogue is the tanh approximation: the erf form stays a kernel of its own.
  for (DType dtype : {f32, bf16}) {
    for (const std::string approximate : {"tanh", "none"}) {
      for (bool bias : {false, true}) {
        INFO(DTypeName(dtype) << " Gelu(approximate=" << approximate << ")"
                              << (bias ? " after a bias" : ""));
        GraphBuilder g;
        Value x = g.Placeholder("x", dtype, {6, 5});
        Value w = g.Placeholder("w", dtype, {5, 3});
        Value b = g.Placeholder("b", dtype, {3});
        Value y = MatMul(x, w);
        g.Output("y", Gelu(bias ? BiasAdd(y, b, -1) : y, approximate));
        Graph graph = *g.Build();
        std::vector<std::pair<std::string, Tensor>> feeds = {
            {"x", testing::RandomTensor(Shape{6, 5}, 1).CastTo(dtype)},
            {"w", testing::RandomTensor(Shape{5, 3}, 2).CastTo(dtype)},
            {"b", testing::RandomTensor(Shape{3}, 3).CastTo(dtype)}};
        PlannedExecutable p = Planned(graph, PlanOf(graph, feeds, {"y"}));
        INFO(p.lowered.executable.ToString());
        CHECK(p.lowered.executable.steps.size() == (approximate == "tanh" ? 1u : 2u));
        RunBoth(graph, FeedList(feeds.begin(), feeds.end()), {"y"});  // cpu and cuda-sim
      }
    }
  }
}

TEST_CASE("gradients through a fused convolution match the reference", "[cpu]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 4, 6, 6});
  Value w = g.Placeholder("w", f32, {4, 4, 3, 3});
  Value b = g.Placeholder("b", f32, {4});
  Value y = Relu(Add(x, BiasAdd(Conv2D(x, w, {.pads = {1, 1, 1, 1}}), b)));
  Value loss = Sum(Mul(y, y), {});
  Result<std::vector<Value>> grads = Gradients({loss}, {x, w, b});
  REQUIRE(grads.ok());
  g.Output("loss", loss);
  g.Output("dx", (*grads)[0]);
  g.Output("dw", (*grads)[1]);
  g.Output("db", (*grads)[2]);
  Graph graph = *g.Build();
  std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Random(Shape{2, 4, 6, 6}, 1)},
                                                       {"w", Random(Shape{4, 4, 3, 3}, 2)},
                                                       {"b", Random(Shape{4}, 3)}};
  PlannedExecutable p = Planned(graph, PlanOf(graph, feeds, {"loss", "dx", "dw", "db"}));
  // Relu's gradient reads the Add's output: the Relu (and so the Add after it) stays outside.
  for (const auto& [node, conv] : p.epilogues.absorbed)
    CHECK(node.find("Relu") == std::string::npos);
  RunBoth(graph, FeedList(feeds.begin(), feeds.end()), {"loss", "dx", "dw", "db"});
}

TEST_CASE("BatchNorm after a convolution folds into it when frozen, within f32 tolerance",
          "[cpu]") {
  // Folding computes w * s and (b - mean) * s + beta in double, rounded to f32 once: the
  // convolution then sums rounded products, so results differ from the reference's by f32
  // rounding (relative 1e-4 here), not bitwise.
  // A training-mode BatchNorm (constants or not) computes batch statistics: never folded.
  for (const auto& mode :
       std::vector<std::pair<bool, bool>>{{true, false}, {false, false}, {true, true}}) {
    const bool frozen = mode.first, training = mode.second;  // captured below (clang 14)
    INFO((frozen ? "frozen" : "statistics fed") << (training ? ", training" : ""));
    GraphBuilder g;
    Value x = g.Placeholder("x", f32, {2, 3, 8, 8});
    auto param = [&](const char* name, Shape shape, uint64_t seed, bool positive) {
      Tensor t = Random(shape, seed);
      for (int64_t i = 0; i < t.num_elements() && positive; ++i)
        t.SetDouble(i, std::fabs(t.GetDouble(i)) + 0.1);
      return frozen ? g.Constant(t) : g.Placeholder(name, f32, shape);
    };
    Value w = param("w", Shape{5, 3, 3, 3}, 2, false);
    std::vector<Value> bn =
        BatchNorm(Conv2D(x, w, {.pads = {1, 1, 1, 1}}), param("scale", Shape{5}, 3, false),
                  param("beta", Shape{5}, 4, false), param("mean", Shape{5}, 5, false),
                  param("var", Shape{5}, 6, true), 1e-3, training);
    g.Output("y", Relu(bn[0]));
    Graph graph = *g.Build();
    std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Random(Shape{2, 3, 8, 8}, 1)}};
    if (!frozen) {
      feeds.push_back({"w", Random(Shape{5, 3, 3, 3}, 2)});
      for (auto [name, seed] :
           std::vector<std::pair<const char*, uint64_t>>{{"scale", 3}, {"beta", 4}, {"mean", 5}}) {
        feeds.push_back({name, Random(Shape{5}, seed)});
      }
      Tensor var = Random(Shape{5}, 6);
      for (int64_t i = 0; i < 5; ++i) var.SetDouble(i, std::fabs(var.GetDouble(i)) + 0.1);
      feeds.push_back({"var", var});
    }
    PlannedExecutable p = Planned(graph, PlanOf(graph, feeds, {"y"}));
    const bool folded = frozen && !training;
    CHECK(CountCallee(p.lowered.executable, "batch_norm") == (folded ? 0 : 1));
    CHECK(p.lowered.executable.steps.size() == (folded ? 1u : 3u));
    RunBoth(graph, FeedList(feeds.begin(), feeds.end()), {"y"});
  }
}

TEST_CASE("the cpu backend trains the digits CNN like the reference executor", "[cpu]") {
  GraphBuilder g;
  models::DigitsCnn net = models::BuildDigitsTraining(g);
  Result<optim::Optimizer> adam = optim::ByName("adam", {.lr = 0.01});
  REQUIRE(adam.ok());
  Value train = adam->Minimize(net.loss);
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  Tensor images = Random(Shape{16, 1, 8, 8}, 7);
  std::vector<int64_t> labels(16);
  for (int i = 0; i < 16; ++i) labels[i] = i % 10;
  FeedList feeds = {{net.images, images},
                    {net.labels, Tensor::FromVector<int64_t>(Shape{16}, labels)}};
  testing::CheckTrainingMatchesReference(*graph, feeds, net.loss, train, 3);
}

}  // namespace
}  // namespace kiln
