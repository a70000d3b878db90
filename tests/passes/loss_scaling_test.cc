// Dynamic loss scaling for fp16 training (passes/optim.h), on every backend the build has:
// - a regression whose fp16 gradients underflow to zero does not learn without scaling and does
//   learn with it;
// - an injected overflow skips the step (weights, slots and step count unchanged) and halves the
//   scale; loss_scale_period finite steps in a row double it.
#include <catch2/catch.hpp>

#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "passes/optim.h"
#include "runtime/session.h"
#include "tests/testing/backends.h"

namespace kiln {
namespace {

constexpr int64_t kBatch = 64;

struct Regression {
  Graph graph;
  std::string loss, train;
};

// loss = 1e-7 * mean((x @ w - y)^2): the gradient reaching the fp16 MatMul backward is about
// 2 / 64 * 1e-7 = 3e-9 per element, below fp16's smallest subnormal (6e-8).
Regression Build(bool loss_scaling, int64_t period = 2000) {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {kBatch, 4});
  Value y = g.Placeholder("y", f32, {kBatch, 1});
  Value w = Variable(g, "w", f32, {4, 1}, Initializer::Zeros());
  Value loss = (Mean(Square(MatMul(x, w) - y)) * 1e-7).Named("loss");
  optim::Options adam;
  adam.lr = 0.05;
  adam.loss_scaling = loss_scaling;
  adam.loss_scale_period = period;
  Value train = optim::Adam(adam).Minimize(loss);
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  return {std::move(*graph), loss.name(), train.node_name()};
}

// x in [-1, 1], y = x @ [1, -2, 0.5, 3].
FeedList Batch(double y_offset = 0) {
  Tensor x = *Tensor::Create(f32, Shape({kBatch, 4}));
  Tensor y = *Tensor::Create(f32, Shape({kBatch, 1}));
  const double w[] = {1, -2, 0.5, 3};
  for (int64_t i = 0; i < kBatch; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < 4; ++j) {
      double v = ((i * 7 + j * 3) % 11) / 5.0 - 1.0;
      x.SetDouble(i * 4 + j, v);
      sum += v * w[j];
    }
    y.SetDouble(i, sum + y_offset);
  }
  return {{"x", x}, {"y", y}};
}

Session Fp16Session(const Graph& graph, const std::string& backend, DType compute = f16) {
  SessionOptions options;
  options.backend = backend;
  options.precision.compute = compute;
  Session session(graph, options);
  INFO((session.status().ok() ? "" : session.status().error().ToString()));
  REQUIRE(session.status().ok());
  return session;
}

double Step(Session& session, const Regression& r, const FeedList& feeds) {
  Result<std::vector<Tensor>> loss = session.Run(feeds, {r.loss}, {r.train});
  INFO((loss.ok() ? "" : loss.error().ToString()));
  REQUIRE(loss.ok());
  return (*loss)[0].GetDouble(0);
}

double Scalar(Session& session, const std::string& variable) {
  const Tensor* t = session.variables().Find(variable);
  REQUIRE(t != nullptr);
  return t->GetDouble(0);
}

TEST_CASE("loss scaling: fp16 gradients that underflow train only with scaling",
          "[passes][precision]") {
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    for (bool scaling : {false, true}) {
      Regression r = Build(scaling);
      Session session = Fp16Session(r.graph, backend);
      double first = Step(session, r, Batch()), last = first;
      for (int i = 0; i < 60; ++i) last = Step(session, r, Batch());
      INFO("scaling " << scaling << ": loss " << first << " -> " << last);
      if (scaling)
        CHECK(last < 0.2 * first);
      else
        CHECK(last == first);  // every gradient underflowed: w never moved
    }
    // The control: in float32 the same model learns without scaling.
    Regression r = Build(false);
    Session session = Fp16Session(r.graph, backend, f32);
    double first = Step(session, r, Batch()), last = first;
    for (int i = 0; i < 60; ++i) last = Step(session, r, Batch());
    CHECK(last < 0.2 * first);
  }
}

TEST_CASE("loss scaling: an overflow skips the step and halves the scale, finite steps grow it",
          "[passes][precision]") {
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    Regression r = Build(/*loss_scaling=*/true, /*period=*/3);
    Session session = Fp16Session(r.graph, backend);
    Step(session, r, Batch());
    Step(session, r, Batch());
    const Tensor w_before = *session.variables().Find("w");
    const Tensor m_before = *session.variables().Find("w/adam_m");
    CHECK(Scalar(session, "global_step") == 2);
    CHECK(Scalar(session, "loss_scale") == 32768);
    CHECK(Scalar(session, "loss_scale/good_steps") == 2);

    // y = 1e6 is beyond fp16 (max 65504): x @ w - y is -inf, so are the gradients.
    Step(session, r, Batch(1e6));
    CHECK(Scalar(session, "loss_scale") == 16384);
    CHECK(Scalar(session, "loss_scale/good_steps") == 0);
    CHECK(Scalar(session, "global_step") == 2);
    const Tensor& w_after = *session.variables().Find("w");
    const Tensor& m_after = *session.variables().Find("w/adam_m");
    for (int64_t i = 0; i < 4; ++i) {
      CHECK(w_after.GetDouble(i) == w_before.GetDouble(i));
      CHECK(m_after.GetDouble(i) == m_before.GetDouble(i));
    }

    // Three finite steps in a row double it again.
    for (int i = 0; i < 3; ++i) Step(session, r, Batch());
    CHECK(Scalar(session, "loss_scale") == 32768);
    CHECK(Scalar(session, "loss_scale/good_steps") == 0);
    CHECK(Scalar(session, "global_step") == 5);
  }
}

}  // namespace
}  // namespace kiln
