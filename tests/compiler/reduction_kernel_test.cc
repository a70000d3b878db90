// Row-reduction kernels (compiler/reduction_fusion.h) against the reference executor: Softmax,
// LogSoftmax, LayerNorm, Max, Min (and Sum/Mean in bf16) over odd shapes, size-1 dims, fewer rows
// than threads, rows split over threads, f32/f64/bf16, NaN and infinities; softmax cross-entropy
// and its gradient as one library step each; and training steps whose forward and backward graphs
// use them.
#include <catch2/catch.hpp>
#include <functional>
#include <limits>

#include "compiler/codegen/emit_mlir.h"
#include "compiler/plan_executable.h"
#include "ir/builder.h"
#include "ir/layers.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "passes/optim.h"
#include "runtime/session.h"
#include "tests/testing/differential.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

// Builds y = f(x [, scale, bias]) and checks the plan has no reference step, then the values.
void Check(DType dtype, const Shape& shape, const std::function<Value(GraphBuilder&, Value)>& f,
           Tensor x = Tensor()) {
  INFO(DTypeName(dtype) << " " << shape.ToString());
  GraphBuilder g;
  Value xv = g.Placeholder("x", dtype, shape);
  g.Output("y", f(g, xv));
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  if (x.num_elements() == 0 && shape.NumElements() > 0)
    x = testing::RandomTensor(shape, 11, -4, 4).CastTo(dtype);
  else if (shape.NumElements() == 0)
    x = Tensor(dtype, shape);
  RunPlan plan;
  plan.feeds[TensorRef{"x", 0}] = x;
  plan.fetches.push_back(*graph->ResolveTensor("y"));
  std::vector<const Node*> order = *graph->TopologicalOrder();
  for (const Node* n : order)
    if (n->name != "x") plan.nodes.push_back(n);
  compiler::PlanOptions options;
  options.can_emit = compiler::CanEmit;
  Result<compiler::PlannedExecutable> planned = compiler::PlanExecutable(plan, options);
  REQUIRE(planned.ok());
  INFO(planned->lowered.executable.ToString());
  CHECK(planned->lowered.executable.CountSteps(Step::Kind::kReference) == 0);
  Session reference(*graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run({{"x", x}}, {"y"});
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(*graph, {{"x", x}}, {"y"}, *expected);
}

const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> shapes = {Shape{1, 1},     Shape{1, 7},     Shape{5, 1},
                                            Shape{3, 5, 17}, Shape{2, 1, 33}, Shape{9},
                                            Shape{3, 40000}, Shape{0, 4}};
  return shapes;
}

TEST_CASE("Softmax and LogSoftmax over the last axis are one generated kernel", "[cpu]") {
  for (DType dtype : {f32, f64, bf16})
    for (const Shape& s : Shapes()) {
      Check(dtype, s, [](GraphBuilder&, Value x) { return Softmax(x); });
      Check(dtype, s, [](GraphBuilder&, Value x) { return LogSoftmax(x, -1); });
    }
  // A size-1 trailing dim after the axis still reduces a row.
  Check(f32, Shape{4, 6, 1}, [](GraphBuilder&, Value x) { return Softmax(x, 1); });
}

TEST_CASE("LayerNorm over trailing axes is one generated kernel", "[cpu]") {
  for (DType dtype : {f32, f64, bf16})
    for (const auto& [shape, axis] : std::vector<std::pair<Shape, int64_t>>{{Shape{4, 16}, -1},
                                                                            {Shape{3, 5, 6}, 1},
                                                                            {Shape{1, 1}, -1},
                                                                            {Shape{7, 3}, 0},
                                                                            {Shape{3, 40000}, 1}}) {
      const int a = static_cast<int>(axis < 0 ? axis + shape.rank() : axis);
      Shape norm(std::vector<int64_t>(shape.dims().begin() + a, shape.dims().end()));
      Check(dtype, shape, [&](GraphBuilder& g, Value x) {
        Value scale = g.Constant(testing::RandomTensor(norm, 3).CastTo(dtype));
        Value bias = g.Constant(testing::RandomTensor(norm, 4).CastTo(dtype));
        return LayerNorm(x, scale, bias, a, 1e-3);  // clang 14: no structured binding capture
      });
    }
}

TEST_CASE("Max and Min over trailing axes are one generated kernel (NaN wins)", "[cpu]") {
  for (DType dtype : {f32, f64, bf16})
    for (bool keepdims : {false, true}) {
      Check(dtype, Shape{3, 5, 7}, [&](GraphBuilder&, Value x) {
        return Max(x, {1, 2}, keepdims);
      });
      Check(dtype, Shape{3, 5, 7}, [&](GraphBuilder&, Value x) { return Min(x, {-1}, keepdims); });
      Check(dtype, Shape{6}, [&](GraphBuilder&, Value x) { return Max(x, {}, keepdims); });
    }
  Tensor x = testing::RandomTensor(Shape{3, 4}, 5).CastTo(f32);
  x.SetDouble(1, std::numeric_limits<double>::quiet_NaN());
  x.SetDouble(6, -std::numeric_limits<double>::infinity());
  Check(
      f32, Shape{3, 4}, [](GraphBuilder&, Value v) { return Max(v, {1}); }, x);
  Check(
      f32, Shape{3, 4}, [](GraphBuilder&, Value v) { return Min(v, {1}); }, x);
  // Rows of 37 f32: the host folds 32 columns 16 at a time, then 5 one by one. NaN in a folded
  // lane (row 0), in the rest (row 1), +inf in the rest (row 2), a row of -inf but one (row 3).
  Tensor wide = testing::RandomTensor(Shape{4, 37}, 8).CastTo(f32);
  wide.SetDouble(3, std::numeric_limits<double>::quiet_NaN());
  wide.SetDouble(37 + 35, std::numeric_limits<double>::quiet_NaN());
  wide.SetDouble(2 * 37 + 33, std::numeric_limits<double>::infinity());
  for (int j = 0; j < 37; ++j)
    if (j != 20) wide.SetDouble(3 * 37 + j, -std::numeric_limits<double>::infinity());
  for (const auto& f : std::vector<std::function<Value(GraphBuilder&, Value)>>{
           [](GraphBuilder&, Value v) { return Max(v, {1}); },
           [](GraphBuilder&, Value v) { return Min(v, {1}); },
           [](GraphBuilder&, Value v) { return Softmax(v); },
           [](GraphBuilder&, Value v) { return LogSoftmax(v, -1); }})
    Check(f32, Shape{4, 37}, f, wide);
  // Sum and Mean in bf16 (f32/f64 are the reduce_sum library step).
  Check(bf16, Shape{4, 9}, [](GraphBuilder&, Value v) { return Sum(v, {1}); });
  Check(bf16, Shape{4, 9}, [](GraphBuilder&, Value v) { return Mean(v, {1}, true); });
}

TEST_CASE("Softmax of rows holding NaN or infinities matches the reference", "[cpu]") {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Tensor x = testing::RandomTensor(Shape{5, 4}, 6).CastTo(f32);
  x.SetDouble(0, kInf);                                      // row 0: +inf
  for (int j = 4; j < 8; ++j) x.SetDouble(j, -kInf);         // row 1: all -inf
  x.SetDouble(9, std::numeric_limits<double>::quiet_NaN());  // row 2: NaN
  x.SetDouble(12, -kInf);                                    // row 3: one -inf
  for (DType dtype : {f32, f64}) {
    Check(
        dtype, Shape{5, 4}, [](GraphBuilder&, Value v) { return Softmax(v); }, x.CastTo(dtype));
    Check(
        dtype, Shape{5, 4}, [](GraphBuilder&, Value v) { return LogSoftmax(v); }, x.CastTo(dtype));
  }
}

TEST_CASE("softmax cross-entropy and its gradient are one step each, labels checked", "[cpu]") {
  for (DType label_type : {i32, i64}) {
    for (const Shape& shape : {Shape{6, 5}, Shape{3, 40000}, Shape{1, 1}}) {
      INFO(DTypeName(label_type) << " " << shape.ToString());
      std::vector<int64_t> y(shape[0]);
      for (int64_t n = 0; n < shape[0]; ++n) y[n] = (n * 7) % shape[1];
      Tensor labels = Tensor::FromVector<int64_t>(Shape{shape[0]}, y).CastTo(label_type);
      Check(f32, shape,
            [&](GraphBuilder& g, Value v) { return SoftmaxCrossEntropy(v, g.Constant(labels)); });
      Check(f32, shape, [&](GraphBuilder& g, Value v) {
        return SoftmaxCrossEntropyGrad(v, g.Constant(labels), g.Scalar(3.0, f32));
      });
      // Reduction "none": the row losses, and the gradient for one dloss per row.
      Check(f32, shape, [&](GraphBuilder& g, Value v) {
        return SoftmaxCrossEntropy(v, g.Constant(labels), "none");
      });
      std::vector<float> dloss(shape[0]);
      for (int64_t n = 0; n < shape[0]; ++n) dloss[n] = 0.5f * static_cast<float>(n % 3) - 0.25f;
      Check(f32, shape, [&](GraphBuilder& g, Value v) {
        return SoftmaxCrossEntropyGrad(v, g.Constant(labels),
                                       g.Constant(Tensor::FromVector(Shape{shape[0]}, dloss)));
      });
    }
  }
  // A bad label fails the compiled run as it fails the reference one.
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3});
  Value labels = g.Placeholder("labels", i64, {2});
  g.Output("loss", SoftmaxCrossEntropy(x, labels).Named("xent"));
  g.Output("dx", SoftmaxCrossEntropyGrad(x, labels, g.Scalar(1.0, f32)).Named("xent_grad"));
  Graph graph = *g.Build();
  Session session(graph, SessionOptions{.backend = "cpu"});
  for (const char* fetch : {"loss", "dx"}) {
    Result<std::vector<Tensor>> bad =
        session.Run({{"x", Tensor(f32, Shape{2, 3})},
                     {"labels", Tensor::FromVector<int64_t>(Shape{2}, {1, 3})}},
                    {fetch});
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(bad.error().message(), Catch::Contains("label 3 at index 1 is out of range [0, 3)"));
    CHECK_THAT(bad.error().message(), Catch::Contains("xent"));
  }
}

TEST_CASE("training through LayerNorm and softmax cross-entropy matches the reference", "[cpu]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 12});
  Value labels = g.Placeholder("labels", i64, {-1});
  Value h = nn::Dense(g.Scope("fc1"), x, 16);
  Value gamma = Variable(g, "gamma", f32, Shape{16}, Initializer::Constant(1.0));
  Value beta = Variable(g, "beta", f32, Shape{16}, Initializer::Constant(0.0));
  h = Tanh(LayerNorm(h, gamma, beta));
  Value logits = nn::Dense(g.Scope("fc2"), h, 5);
  Value loss = Add(SoftmaxCrossEntropy(logits, labels), Mean(Max(LogSoftmax(logits), {1})));
  optim::Options options;
  options.lr = 0.1;
  Result<optim::Optimizer> sgd = optim::ByName("sgd", options);
  REQUIRE(sgd.ok());
  Value train = sgd->Minimize(loss);
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  std::vector<int64_t> y(10);
  for (int i = 0; i < 10; ++i) y[i] = (i * 3) % 5;
  FeedList feeds = {{x, testing::RandomTensor(Shape{10, 12}, 8).CastTo(f32)},
                    {labels, Tensor::FromVector<int64_t>(Shape{10}, y)}};
  testing::CheckTrainingMatchesReference(*graph, feeds, loss, train, 4);
}

}  // namespace
}  // namespace kiln
