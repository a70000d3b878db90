// Whole-model gradients against float64 central differences: an MLP, a CNN with pooling and
// training-mode BatchNorm, an LSTM cell, and a layernorm/softmax attention block. Each model is
// built in f32 as a user would; the checker evaluates it in f64 (passes/promote_f64.h).
#include <catch2/catch.hpp>

#include "ir/layers.h"
#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "tests/testing/gradcheck_op.h"
#include "tools/lib/gradient_check.h"

using namespace kiln;
using kiln::testing::RandomTensor;

namespace {
void CheckModel(GraphBuilder& g, const std::vector<std::string>& wrt, const FeedList& feeds,
                double tolerance = 1e-6) {
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  auto results = CheckGradients(*graph, "loss", wrt, feeds);
  INFO((results.ok() ? "" : results.error().ToString()));
  REQUIRE(results.ok());
  for (const GradCheckResult& r : *results) {
    INFO(r.wrt << " " << r.type.ToString() << ": max rel error " << r.max_rel_error);
    CHECK(r.max_rel_error <= tolerance);
  }
}
Tensor Labels(std::vector<int64_t> v) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v);
}
}  // namespace

TEST_CASE("model gradients: MLP with softmax cross-entropy", "[grad][models]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 5});
  Value labels = g.Placeholder("labels", i64, {-1});
  Value h = Tanh(nn::Dense(g.Scope("fc1"), x, 6, {.seed = 3}));
  Value logits = nn::Dense(g.Scope("fc2"), h, 3, {.seed = 4});
  SoftmaxCrossEntropy(logits, labels).Named("loss");
  CheckModel(g, {"fc1/w", "fc1/b", "fc2/w", "fc2/b", "x"},
             {{"x", RandomTensor({4, 5}, 1).CastTo(f32)}, {"labels", Labels({0, 2, 1, 2})}});
}

TEST_CASE("model gradients: CNN with pooling and training-mode BatchNorm", "[grad][models]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 2, 6, 6});
  Value labels = g.Placeholder("labels", i64, {-1});
  Value h = nn::Conv2D(g.Scope("conv"), x, 3, 3, {.padding = 1, .seed = 5});
  h = Relu(nn::BatchNorm(g.Scope("bn"), h, {.training = true}));
  h = MaxPool2D(h, {.kernel = {2, 2}});
  h = AvgPool2D(nn::Conv2D(g.Scope("conv2"), h, 2, 1, {.seed = 6}), {.kernel = {3, 3}});
  Value logits = nn::Dense(g.Scope("fc"), Flatten(h), 4, {.seed = 7});
  SoftmaxCrossEntropy(logits, labels).Named("loss");
  CheckModel(g, {"conv/w", "conv/b", "bn/gamma", "bn/beta", "conv2/w", "fc/w", "x"},
             {{"x", RandomTensor({3, 2, 6, 6}, 2).CastTo(f32)}, {"labels", Labels({0, 3, 1})}});
}

TEST_CASE("model gradients: an LSTM cell unrolled over 3 steps", "[grad][models]") {
  GraphBuilder g;
  const int64_t batch = 2, in = 3, units = 4;
  Value xs = g.Placeholder("xs", f32, {3, batch, in});
  Value wx = Variable(g, "wx", f32, {in, 4 * units}, Initializer::GlorotUniform(8));
  Value wh = Variable(g, "wh", f32, {units, 4 * units}, Initializer::GlorotUniform(9));
  Value b = Variable(g, "b", f32, {4 * units}, Initializer::Uniform(-0.1, 0.1, 10));
  Value h = g.Constant(Tensor(f32, {batch, units})), c = h;
  for (int64_t t = 0; t < 3; ++t) {
    Value x_t = Reshape(Slice(xs, {t}, {t + 1}, {0}), {batch, in});
    Value gates = MatMul(x_t, wx) + MatMul(h, wh) + b;
    std::vector<Value> parts = SplitEven(gates, 1, 4);
    Value i = Sigmoid(parts[0]), f = Sigmoid(parts[1]), cell = Tanh(parts[2]),
          o = Sigmoid(parts[3]);
    c = f * c + i * cell;
    h = o * Tanh(c);
  }
  (Sum(Square(h)) + Mean(c)).Named("loss");
  CheckModel(g, {"wx", "wh", "b", "xs"}, {{"xs", RandomTensor({3, batch, in}, 3).CastTo(f32)}});
}

TEST_CASE("model gradients: a layernorm + softmax attention block", "[grad][models]") {
  GraphBuilder g;
  const int64_t d = 4;
  Value x = g.Placeholder("x", f32, {-1, 3, d});
  Value gamma = Variable(g, "ln/gamma", f32, {d}, Initializer::Uniform(0.5, 1.5, 11));
  Value beta = Variable(g, "ln/beta", f32, {d}, Initializer::Uniform(-0.5, 0.5, 12));
  Value n = LayerNorm(x, gamma, beta);
  Value wq = Variable(g, "wq", f32, {d, d}, Initializer::GlorotUniform(13));
  Value wk = Variable(g, "wk", f32, {d, d}, Initializer::GlorotUniform(14));
  Value wv = Variable(g, "wv", f32, {d, d}, Initializer::GlorotUniform(15));
  Value q = MatMul(n, wq), k = MatMul(n, wk), v = MatMul(n, wv);
  Value attention = Softmax(MatMul(q, k, false, true) / 2.0);
  Value y = x + MatMul(attention, v);
  Mean(Gelu(y) * y).Named("loss");
  CheckModel(g, {"ln/gamma", "ln/beta", "wq", "wk", "wv", "x"},
             {{"x", RandomTensor({2, 3, d}, 4).CastTo(f32)}});
}
