// sync-batch-norm (passes/sync_batch_norm.h): ranks that each hold a shard of the global batch
// normalize, differentiate and update running statistics as one process does with a plain
// training BatchNorm over the whole batch, also for shards of different sizes (the all-reduces'
// gradients follow the data-parallel convention, ir/ops/collective.h). Without the pass the same
// ranks do not (each normalizes its shard): the check can fail.
#include "passes/sync_batch_norm.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <thread>

#include "ir/layers.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "passes/optim.h"
#include "runtime/distributed/communicator.h"
#include "runtime/session.h"
#include "tests/testing/backends.h"

using namespace kiln;

namespace {

constexpr int64_t kFeatures = 4, kClasses = 3;

struct Trainable {
  Graph graph;
  std::string loss, train;
};

// Dense -> training BatchNorm -> tanh -> Dense -> cross-entropy, with SGD (momentum); the
// BatchNorm synchronized where `sync`, the gradients all-reduced where `data_parallel`.
Trainable Model(bool sync, bool data_parallel) {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, kFeatures});
  Value y = g.Placeholder("y", i64, {-1});
  Value h = nn::Dense(g.Scope("fc1"), x, 5);
  h = Tanh(nn::BatchNorm(g.Scope("bn"), h, {.training = true, .momentum = 0.5}));
  g.Output("loss", SoftmaxCrossEntropy(nn::Dense(g.Scope("fc2"), h, kClasses), y));
  Result<Graph> forward = g.Build();
  REQUIRE(forward.ok());
  if (sync) {
    Result<bool> changed = SyncBatchNorm().Run(*forward);
    INFO(changed.status().ToString());
    REQUIRE(changed.ok());
    REQUIRE(*changed);
  }
  Result<std::unique_ptr<GraphBuilder>> b = GraphBuilder::FromGraph(*forward);
  REQUIRE(b.ok());
  Result<Value> loss = (*b)->Find("loss");
  REQUIRE(loss.ok());
  optim::Options o{.lr = 0.1};
  if (data_parallel) o.data_parallel = DataParallelOptions{};
  Value train = optim::Momentum(o).Minimize(*loss);
  Result<Graph> graph = (*b)->Build();
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  return {*graph, loss->name(), train.node_name()};
}

std::pair<Tensor, Tensor> Rows(int64_t begin, int64_t end, int step) {
  std::vector<double> xs, ys;
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t f = 0; f < kFeatures; ++f)
      xs.push_back(2.0 * std::sin(0.53 * static_cast<double>(r * kFeatures + f) + step) + 0.3 * f);
    ys.push_back(static_cast<double>((r * 5 + step) % kClasses));
  }
  return {Tensor::FromDoubles(f32, {end - begin, kFeatures}, xs),
          Tensor::FromDoubles(i64, {end - begin}, ys)};
}

constexpr int kSteps = 4;

std::map<std::string, Tensor> OneProcess(const std::string& backend, bool sync, int64_t rows) {
  Trainable m = Model(sync, false);
  Session s(m.graph, {.backend = backend});
  for (int step = 0; step < kSteps; ++step) {
    auto [x, y] = Rows(0, rows, step);
    auto r = s.Run({{"x", x}, {"y", y}}, {m.loss}, {m.train});
    INFO(r.status().ToString());
    REQUIRE(r.ok());
  }
  return s.variables().values();
}

// Ranks as threads, rank r on rows [bounds[r], bounds[r + 1]) of each global batch.
std::vector<std::map<std::string, Tensor>> Ranks(const std::string& backend, bool sync,
                                                 const std::vector<int64_t>& bounds) {
  const int ranks = static_cast<int>(bounds.size()) - 1;
  auto comms = MakeInProcessGroup(ranks, 60);
  std::vector<std::map<std::string, Tensor>> out(ranks);
  std::vector<Status> status(ranks, OkStatus());
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      Trainable m = Model(sync, true);
      Session s(m.graph, {.backend = backend, .distributed = comms[r]});
      status[r] = s.BroadcastVariables();
      const double global = static_cast<double>(bounds.back() - bounds.front());
      for (int step = 0; step < kSteps && status[r].ok(); ++step) {
        auto [x, y] = Rows(bounds[r], bounds[r + 1], step);
        comms[r]->set_share(static_cast<double>(bounds[r + 1] - bounds[r]) / global);
        status[r] = s.Run({{"x", x}, {"y", y}}, {m.loss}, {m.train}).status();
      }
      out[r] = s.variables().values();
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) {
    INFO("rank " << r << ": " << status[r].ToString());
    REQUIRE(status[r].ok());
  }
  return out;
}

// The largest difference between two sets of variables, relative to each value (plus 0.1: a bias
// before a BatchNorm gets no gradient, and its values are rounding noise near 0).
double Farthest(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (const auto& [name, t] : a) {
    REQUIRE(b.count(name));
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      const double x = t.GetDouble(i), y = b.at(name).GetDouble(i);
      worst = std::max(worst, std::abs(x - y) / (0.1 + std::abs(y)));
    }
  }
  return worst;
}

}  // namespace

TEST_CASE("sync batch norm: outside a data-parallel run the rewrite trains as BatchNorm does",
          "[passes][data_parallel]") {
  for (const std::string& backend : kiln::testing::AvailableBackends()) {
    INFO(backend);
    CHECK(Farthest(OneProcess(backend, true, 12), OneProcess(backend, false, 12)) <= 1e-5);
  }
}

TEST_CASE("sync batch norm: ranks on uneven shards train as one process on the whole batch",
          "[passes][data_parallel]") {
  for (const std::string& backend : kiln::testing::AvailableBackends()) {
    INFO(backend);
    const auto want = OneProcess(backend, false, 12);
    const auto synced = Ranks(backend, true, {0, 5, 12});
    CHECK(Farthest(synced[0], want) <= 1e-5);  // weights and running statistics
    CHECK(Farthest(synced[1], synced[0]) == 0);
    // Each rank normalizing its own shard trains another model.
    const auto local = Ranks(backend, false, {0, 5, 12});
    CHECK(Farthest(local[0], want) > 1e-3);
  }
}
