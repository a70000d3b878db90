// Optimizers against their textbook formulas (computed here independently, in double).
#include "passes/optim.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "ir/layers.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "runtime/session.h"

using namespace kiln;

namespace {
// loss = sum(c * w^2) / 2 with fixed c: gradient c * w.
struct Quadratic {
  std::vector<double> w0 = {1.0, -2.0, 0.5};
  std::vector<double> c = {1.0, 3.0, 0.25};
  std::vector<double> Grad(const std::vector<double>& w) const {
    return {c[0] * w[0], c[1] * w[1], c[2] * w[2]};
  }
};

std::vector<std::vector<double>> Train(optim::Optimizer opt, int steps, DType dtype = f64) {
  Quadratic q;
  GraphBuilder g;
  Value w = Variable(g, "w", dtype, {3}, Initializer::Zeros());
  Value init = Assign(w, g.Constant(Tensor::FromDoubles(dtype, {3}, q.w0))).Named("init");
  Value c = g.Constant(Tensor::FromDoubles(dtype, {3}, q.c));
  Value loss = (Sum(c * w * w) * 0.5).Named("loss");
  Value train = opt.Minimize(loss);
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  Session s(*graph);
  REQUIRE(s.Run({}, {}, {init}).ok());
  std::vector<std::vector<double>> trajectory;
  for (int i = 0; i < steps; ++i) {
    auto r = s.Run({}, {}, {train});
    INFO((r.ok() ? "" : r.error().ToString()));
    REQUIRE(r.ok());
    trajectory.push_back(s.Run({}, {"w"})->at(0).ToDoubles());
  }
  return trajectory;
}

void CheckClose(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(tol));
}
}  // namespace

TEST_CASE("optim: Adam matches the textbook formula to 1e-6", "[optim]") {
  optim::Options o{.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-8};
  auto got = Train(optim::Adam(o), 5);
  Quadratic q;
  std::vector<double> w = q.w0, m(3, 0), v(3, 0);
  for (int t = 1; t <= 5; ++t) {
    auto grad = q.Grad(w);
    for (int i = 0; i < 3; ++i) {
      m[i] = 0.9 * m[i] + 0.1 * grad[i];
      v[i] = 0.999 * v[i] + 0.001 * grad[i] * grad[i];
      double m_hat = m[i] / (1 - std::pow(0.9, t)), v_hat = v[i] / (1 - std::pow(0.999, t));
      w[i] -= 0.1 * m_hat / (std::sqrt(v_hat) + 1e-8);
    }
    CheckClose(got[t - 1], w, 1e-6);
  }
  // The same in f32 stays within f32 rounding of the f64 trajectory.
  auto got32 = Train(optim::Adam(o), 5, f32);
  CheckClose(got32[4], w, 1e-5);
}

TEST_CASE("optim: AdamW decays weights decoupled from the gradient", "[optim]") {
  optim::Options o{.lr = 0.05, .weight_decay = 0.1};
  auto got = Train(optim::AdamW(o), 3);
  Quadratic q;
  std::vector<double> w = q.w0, m(3, 0), v(3, 0);
  for (int t = 1; t <= 3; ++t) {
    auto grad = q.Grad(w);
    for (int i = 0; i < 3; ++i) {
      m[i] = 0.9 * m[i] + 0.1 * grad[i];
      v[i] = 0.999 * v[i] + 0.001 * grad[i] * grad[i];
      double m_hat = m[i] / (1 - std::pow(0.9, t)), v_hat = v[i] / (1 - std::pow(0.999, t));
      w[i] -= 0.05 * 0.1 * w[i] + 0.05 * m_hat / (std::sqrt(v_hat) + 1e-8);
    }
  }
  CheckClose(got[2], w, 1e-9);
}

TEST_CASE("optim: SGD, momentum and Nesterov follow PyTorch's formulas", "[optim]") {
  Quadratic q;
  auto sgd = Train(optim::SGD({.lr = 0.1}), 3);
  std::vector<double> w = q.w0;
  for (int t = 0; t < 3; ++t) {
    auto grad = q.Grad(w);
    for (int i = 0; i < 3; ++i) w[i] -= 0.1 * grad[i];
  }
  CheckClose(sgd[2], w, 1e-12);
  for (bool nesterov : {false, true}) {
    auto got = Train(optim::Momentum({.lr = 0.1, .momentum = 0.8, .nesterov = nesterov}), 4);
    std::vector<double> w2 = q.w0, buf(3, 0);
    for (int t = 0; t < 4; ++t) {
      auto grad = q.Grad(w2);
      for (int i = 0; i < 3; ++i) {
        buf[i] = 0.8 * buf[i] + grad[i];
        w2[i] -= 0.1 * (nesterov ? grad[i] + 0.8 * buf[i] : buf[i]);
      }
    }
    INFO("nesterov " << nesterov);
    CheckClose(got[3], w2, 1e-12);
  }
}

TEST_CASE("optim: gradient clipping by global norm", "[optim]") {
  Quadratic q;
  auto got = Train(optim::SGD({.lr = 1.0, .clip_norm = 0.5}), 1);
  auto grad = q.Grad(q.w0);
  double norm = std::sqrt(grad[0] * grad[0] + grad[1] * grad[1] + grad[2] * grad[2]);
  std::vector<double> w = q.w0;
  for (int i = 0; i < 3; ++i) w[i] -= grad[i] * 0.5 / norm;
  CheckClose(got[0], w, 1e-6);  // the norm is computed in f32
}

TEST_CASE("optim: schedules are graph values of the global step", "[optim]") {
  GraphBuilder g;
  optim::StepDecay(g, 1.0, 2, 0.5).Named("step_lr");
  optim::CosineDecay(g, 1.0, 4).Named("cos_lr");
  Value tick = AssignAdd(optim::GlobalStep(g), g.Scalar(1, i64)).Named("tick");
  Session s(*g.Build());
  std::vector<double> step_values, cos_values;
  for (int i = 0; i < 6; ++i) {
    auto out = s.Run({}, {"step_lr", "cos_lr"});
    REQUIRE(out.ok());
    step_values.push_back(out->at(0).GetDouble(0));
    cos_values.push_back(out->at(1).GetDouble(0));
    REQUIRE(s.Run({}, {}, {tick}).ok());
  }
  CHECK(step_values == std::vector<double>{1, 1, 0.5, 0.5, 0.25, 0.25});
  std::vector<double> expected_cos = {1, 0.853553, 0.5, 0.146447, 0, 0};
  CheckClose(cos_values, expected_cos, 1e-5);
}

TEST_CASE("optim: weight decay adds an L2 term to the gradient (SGD, momentum, Adam)", "[optim]") {
  Quadratic q;
  const double wd = 0.3;
  // SGD: w -= lr * (g + wd * w), as torch.optim.SGD(weight_decay=wd).
  auto sgd = Train(optim::SGD({.lr = 0.1, .weight_decay = wd}), 3);
  std::vector<double> w = q.w0;
  for (int t = 0; t < 3; ++t) {
    auto grad = q.Grad(w);
    for (int i = 0; i < 3; ++i) w[i] -= 0.1 * (grad[i] + wd * w[i]);
  }
  CheckClose(sgd[2], w, 1e-12);
  // Adam: the decayed gradient feeds the moments (torch.optim.Adam), unlike AdamW's decay.
  auto adam = Train(optim::Adam({.lr = 0.01, .weight_decay = wd}), 2);
  std::vector<double> wa = q.w0, m(3, 0), v(3, 0);
  for (int t = 1; t <= 2; ++t) {
    auto grad = q.Grad(wa);
    for (int i = 0; i < 3; ++i) {
      const double gi = grad[i] + wd * wa[i];
      m[i] = 0.9 * m[i] + 0.1 * gi;
      v[i] = 0.999 * v[i] + 0.001 * gi * gi;
      const double m_hat = m[i] / (1 - std::pow(0.9, t)), v_hat = v[i] / (1 - std::pow(0.999, t));
      wa[i] -= 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8);
    }
  }
  CheckClose(adam[1], wa, 1e-9);
}

TEST_CASE("optim: a schedule by name drives the learning rate", "[optim]") {
  GraphBuilder g;
  optim::LinearWarmupCosine(g, 1.0, 2, 6).Named("warm_lr");
  Value tick = AssignAdd(optim::GlobalStep(g), g.Scalar(1, i64)).Named("tick");
  Session s(*g.Build());
  std::vector<double> values;
  for (int i = 0; i < 7; ++i) {
    auto out = s.Run({}, {"warm_lr"});
    REQUIRE(out.ok());
    values.push_back(out->at(0).GetDouble(0));
    REQUIRE(s.Run({}, {}, {tick}).ok());
  }
  // Steps 0 and 1 warm up (1/2, 2/2), then cosine over the 4 steps left, then its floor.
  CheckClose(values, {0.5, 1, 1, 0.853553, 0.5, 0.146447, 0}, 1e-5);
  // SGD with the "step" schedule by name: lr 0.1 for two steps, then 0.05.
  Quadratic q;
  optim::Options options{.lr = 0.1};
  options.schedule = {.kind = "step", .step_size = 2, .gamma = 0.5};
  auto got = Train(optim::SGD(options), 3);
  std::vector<double> w = q.w0;
  for (double lr : {0.1, 0.1, 0.05}) {
    auto grad = q.Grad(w);
    for (int i = 0; i < 3; ++i) w[i] -= lr * grad[i];
  }
  CheckClose(got[2], w, 1e-6);  // the schedule computes in f32
  CHECK_THAT(optim::CheckSchedule({.kind = "cosine"}).error().message(),
             Catch::Contains("the cosine schedule needs the total number of steps"));
  CHECK_THAT(optim::CheckSchedule({.kind = "cyclic"}).error().message(),
             Catch::Contains("unknown learning-rate schedule 'cyclic'"));
}

TEST_CASE("optim: errors are reported by Build", "[optim]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {3});
  optim::SGD().Minimize(Sum(x));
  CHECK_THAT(g.Build().error().message(), Catch::Contains("depends on no trainable variable"));
  GraphBuilder g2;
  Value w = Variable(g2, "w", f32, {3});
  optim::SGD().Minimize(w);
  CHECK_THAT(g2.Build().error().message(), Catch::Contains("the loss must be a float scalar"));
  CHECK_FALSE(optim::ByName("rmsprop", {}).ok());
}

TEST_CASE("optim: the train target runs BatchNorm's running-statistics updates", "[optim]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 2});
  Value y =
      nn::BatchNorm(g.Scope("bn"), Reshape(x, {-1, 2, 1, 1}), {.training = true, .momentum = 0.5});
  Value w = Variable(g, "w", f32, {1, 2, 1, 1}, Initializer::Ones());
  Value loss = Mean(y * w).Named("loss");
  Value train = optim::SGD({.lr = 0.1}).Minimize(loss);
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  CHECK(graph->update_ops().size() == 2);
  Session s(*graph);
  // Channel 0 holds 1 and 3 (mean 2, biased variance 1); channel 1 holds 2 and 2 (mean 2, var 0).
  REQUIRE(s.Run({{"x", Tensor::FromVector<float>({2, 2}, {1, 2, 3, 2})}}, {}, {train}).ok());
  auto stats = s.Run({}, {"bn/moving_mean", "bn/moving_var"});
  REQUIRE(stats.ok());
  CHECK(stats->at(0).ToDoubles() == std::vector<double>{1, 1});    // 0.5 * 0 + 0.5 * 2
  CHECK(stats->at(1).ToDoubles() == std::vector<double>{1, 0.5});  // 0.5 * 1 + 0.5 * {1, 0}
}
