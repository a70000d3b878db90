// Data-parallel training through the in-process communicator (runtime/distributed/): ranks are
// threads, each with its own Session. A step of 2 or 3 ranks over shards of a global batch must
// give the weights one process gives on the whole batch (the oracle), and every rank the same
// bits; a rank that never joins, or ranks that run different models, fail with a named error.
#include "passes/data_parallel.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <thread>

#include "ir/layers.h"
#include "ir/ops/collective.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/state.h"
#include "passes/optim.h"
#include "runtime/distributed/communicator.h"
#include "runtime/session.h"
#include "tests/testing/backends.h"

using namespace kiln;

namespace {

// The host backends this program runs (the compiled cpu backend where the compiler is linked).
std::vector<std::string> HostBackends() {
  std::vector<std::string> backends;
  for (const std::string& b : kiln::testing::AvailableBackends())
    if (b.rfind("cuda", 0) != 0) backends.push_back(b);
  return backends;
}

constexpr int64_t kFeatures = 6, kClasses = 3;

struct Model {
  Graph graph;
  std::string loss, train;
};

// A two-layer classifier with Adam and gradient clipping (so that the reduced gradients feed
// every kind of optimizer arithmetic), data-parallel or not.
Model Classifier(bool data_parallel, int64_t bucket_bytes = 1 << 20, int64_t hidden = 8) {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, kFeatures});
  Value y = g.Placeholder("y", i64, {-1});
  Value h = Tanh(nn::Dense(g.Scope("fc1"), x, hidden));
  Value logits = nn::Dense(g.Scope("fc2"), h, kClasses);
  Value loss = SoftmaxCrossEntropy(logits, y).Named("loss");
  optim::Options o{.lr = 0.05, .clip_norm = 1.0};
  if (data_parallel) o.data_parallel = DataParallelOptions{.bucket_bytes = bucket_bytes};
  Value train = optim::Adam(o).Minimize(loss);
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  return {*graph, loss.name(), train.node_name()};
}

// Rows [begin, end) of a deterministic batch of `rows` examples.
std::pair<Tensor, Tensor> Rows(int64_t begin, int64_t end, uint64_t step) {
  std::vector<double> xs, ys;
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t f = 0; f < kFeatures; ++f)
      xs.push_back(std::sin(0.37 * static_cast<double>(r * kFeatures + f) + 1.3 * step));
    ys.push_back(static_cast<double>((r * 7 + step) % kClasses));
  }
  return {Tensor::FromDoubles(f32, {end - begin, kFeatures}, xs),
          Tensor::FromDoubles(i64, {end - begin}, ys)};
}

// The variables after `steps` steps of one process on whole batches of `batch` rows.
std::map<std::string, Tensor> OneProcess(const std::string& backend, int steps, int64_t batch) {
  Model m = Classifier(false);
  Session s(m.graph, {.backend = backend});
  for (int step = 0; step < steps; ++step) {
    auto [x, y] = Rows(0, batch, step);
    auto r = s.Run({{"x", x}, {"y", y}}, {m.loss}, {m.train});
    INFO((r.ok() ? "" : r.error().ToString()));
    REQUIRE(r.ok());
  }
  return s.variables().values();
}

struct RankResult {
  Status status = OkStatus();
  std::map<std::string, Tensor> variables;
  std::vector<double> losses;  // the global batch's mean loss, step by step
};

// `ranks` threads, rank r training on rows [bounds[r], bounds[r + 1]) of each global batch.
std::vector<RankResult> DataParallel(const std::string& backend, int steps,
                                     const std::vector<int64_t>& bounds, int64_t bucket_bytes) {
  const int ranks = static_cast<int>(bounds.size()) - 1;
  auto comms = MakeInProcessGroup(ranks, 60);
  std::vector<RankResult> results(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      RankResult& out = results[r];
      // Every rank initializes differently (another seed would too): the broadcast decides.
      Model m = Classifier(true, bucket_bytes);
      Session s(m.graph, {.backend = backend, .distributed = comms[r]});
      out.status = s.BroadcastVariables();
      if (!out.status.ok()) return;
      const int64_t global = bounds.back() - bounds.front();
      for (int step = 0; step < steps && out.status.ok(); ++step) {
        auto [x, y] = Rows(bounds[r], bounds[r + 1], step);
        const double rows = static_cast<double>(bounds[r + 1] - bounds[r]);
        comms[r]->set_share(rows / static_cast<double>(global));
        auto run = s.Run({{"x", x}, {"y", y}}, {m.loss}, {m.train});
        if (!run.ok()) {
          out.status = run.error();
          return;
        }
        double weighted = (*run)[0].GetDouble(0) * rows;
        out.status = comms[r]->AllReduceSum(&weighted, 1, f64);
        out.losses.push_back(weighted / static_cast<double>(global));
      }
      out.variables = s.variables().values();
    });
  for (std::thread& t : threads) t.join();
  return results;
}

void CheckAgree(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& want,
                double rtol) {
  REQUIRE(got.size() == want.size());
  for (const auto& [name, w] : want) {
    INFO(name);
    REQUIRE(got.count(name));
    const Tensor& t = got.at(name);
    REQUIRE(t.num_elements() == w.num_elements());
    for (int64_t i = 0; i < w.num_elements(); ++i)
      CHECK(t.GetDouble(i) == Approx(w.GetDouble(i)).epsilon(rtol).margin(1e-6));
  }
}

bool Bitwise(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, t] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.byte_size() != t.byte_size() ||
        std::memcmp(it->second.raw_data(), t.raw_data(), t.byte_size()) != 0)
      return false;
  }
  return true;
}

}  // namespace

TEST_CASE("data parallel: two ranks on halves of each batch train as one process on the whole",
          "[data_parallel]") {
  // cuda-sim: the all-reduces run on the simulated device, as NCCL's would on a GPU.
  for (const std::string& backend : kiln::testing::AvailableBackends()) {
    INFO(backend);
    const auto want = OneProcess(backend, 6, 16);
    // Small buckets: the four gradients travel in several all-reduces.
    auto got = DataParallel(backend, 6, {0, 8, 16}, 64);
    for (const RankResult& r : got) {
      INFO((r.status.ok() ? "" : r.status.error().ToString()));
      REQUIRE(r.status.ok());
    }
    CheckAgree(got[0].variables, want, 1e-5);
    CHECK(Bitwise(got[0].variables, got[1].variables));
  }
}

TEST_CASE("data parallel: uneven shards weigh each rank by its share of the global batch",
          "[data_parallel]") {
  const auto want = OneProcess("reference", 4, 11);
  auto got = DataParallel("reference", 4, {0, 5, 6, 11}, 1 << 20);
  for (const RankResult& r : got) REQUIRE(r.status.ok());
  CheckAgree(got[2].variables, want, 1e-5);
  CHECK(Bitwise(got[0].variables, got[1].variables));
  CHECK(Bitwise(got[0].variables, got[2].variables));
}

TEST_CASE("data parallel: gradients go in buckets of one dtype in the order backward makes them",
          "[data_parallel]") {
  auto count = [](const Graph& graph) {
    int n = 0;
    for (const Node& node : graph.nodes()) n += node.op == "AllReduce";
    return n;
  };
  CHECK(count(Classifier(true, 1 << 20).graph) == 1);  // all four gradients in one
  CHECK(count(Classifier(true, 1).graph) == 4);        // each alone
  CHECK(count(Classifier(false).graph) == 0);
  // Backward order: the last layer's gradients come first.
  const Graph graph = Classifier(true, 1).graph;
  std::vector<std::string> order;
  for (const Node& node : graph.nodes())
    if (node.op == "AllReduce") order.push_back(node.inputs[0].node);
  REQUIRE(order.size() == 4);
  CHECK(order[0].find("fc2") != std::string::npos);
  CHECK(order[3].find("fc1") != std::string::npos);
}

TEST_CASE("data parallel: an all-reduce outside a data-parallel run is the identity",
          "[data_parallel]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {3});
  std::vector<Value> y = AllReduce({x, x * 2.0}, "sum");
  y[1].Named("y1");
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  for (const std::string& backend : HostBackends()) {
    Session s(*graph, {.backend = backend});
    auto r = s.Run({{"x", Tensor::FromDoubles(f32, {3}, {1, 2, 3})}}, {"y1:1"});
    REQUIRE(r.ok());
    CHECK((*r)[0].ToDoubles() == std::vector<double>{2, 4, 6});
  }
}

TEST_CASE("data parallel: a sum all-reduce adds every rank's values, bitwise alike",
          "[data_parallel]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f64, {2});
  AllReduce({x}, "sum")[0].Named("y");
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  auto comms = MakeInProcessGroup(3, 60);
  std::vector<std::vector<double>> got(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      Session s(*graph, {.backend = HostBackends().back(), .distributed = comms[r]});
      auto out = s.Run({{"x", Tensor::FromDoubles(f64, {2}, {1.0 + r, 10.0 * r})}}, {"y"});
      if (out.ok()) got[r] = (*out)[0].ToDoubles();
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < 3; ++r) CHECK(got[r] == std::vector<double>{6, 30});
}

TEST_CASE("data parallel: a rank that never joins fails the others, naming it", "[data_parallel]") {
  auto comms = MakeInProcessGroup(3, 0.2);
  std::vector<Status> got(2, OkStatus());
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      double v = 1;
      got[r] = comms[r]->AllReduceSum(&v, 1, f64);
    });
  for (std::thread& t : threads) t.join();
  for (const Status& s : got) {
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.error().message(), Catch::Contains("rank 2 did not join"));
  }
}

TEST_CASE("data parallel: ranks that run different models are refused at the broadcast",
          "[data_parallel]") {
  auto comms = MakeInProcessGroup(2, 60);
  std::vector<Status> got(2, OkStatus());
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      Model m = Classifier(true, 1 << 20, r == 0 ? 8 : 9);
      Session s(m.graph, {.backend = "reference", .distributed = comms[r]});
      got[r] = s.BroadcastVariables();
    });
  for (std::thread& t : threads) t.join();
  REQUIRE_FALSE(got[0].ok());
  REQUIRE_FALSE(got[1].ok());
  CHECK_THAT(got[0].error().message(), Catch::Contains("rank 1's variables differ from rank 0's"));
  CHECK_THAT(got[1].error().message(), Catch::Contains("here is 'fc1/b f32[9]'"));
  CHECK_THAT(got[1].error().message(), Catch::Contains("on rank 0 'fc1/b f32[8]'"));
}

namespace {

// Two ranks that hold the same values: a started sum does nothing until it is finished, then
// doubles the message; a step that read an all-reduce's outputs before Program finished it would
// read what was there before.
class LateTwin : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string kind() const override { return "late twin"; }
  Status AllReduceSum(void* data, int64_t count, DType dtype) override {
    Double(data, count, dtype);
    return OkStatus();
  }
  Result<int64_t> StartAllReduceSum(void* data, int64_t count, DType dtype) override {
    started_.push_back({data, count, dtype});
    return static_cast<int64_t>(started_.size());
  }
  Status FinishAllReduce(int64_t ticket) override {
    const Started& s = started_.at(static_cast<size_t>(ticket - 1));
    Double(s.data, s.count, s.dtype);
    ++finished_;
    return OkStatus();
  }
  Status Broadcast(void*, int64_t, int) override { return OkStatus(); }
  Status AllGather(const void* mine, int64_t bytes, void* all) override {
    std::memcpy(all, mine, bytes);
    std::memcpy(static_cast<char*>(all) + bytes, mine, bytes);
    return OkStatus();
  }
  void Abort(int) override {}
  int finished() const { return finished_; }

 private:
  struct Started {
    void* data;
    int64_t count;
    DType dtype;
  };
  static void Double(void* data, int64_t count, DType dtype) {
    for (int64_t i = 0; i < count; ++i)
      if (dtype == f64)
        static_cast<double*>(data)[i] *= 2;
      else
        static_cast<float*>(data)[i] *= 2;
  }
  std::vector<Started> started_;
  int finished_ = 0;
};

}  // namespace

TEST_CASE("data parallel: a compiled step reads an all-reduce's outputs only once it finished",
          "[data_parallel]") {
  GraphBuilder g;
  Value a = g.Placeholder("a", f32, {4});
  std::vector<Value> r = AllReduce({a * 3.0, a + 1.0}, "sum");
  r[1].Named("fetched");  // output 1 is read by no step: finished before the run copies it out
  (r[0] + 1.0).Named("consumed");
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  for (const std::string& backend : HostBackends()) {
    INFO(backend);
    auto comm = std::make_shared<LateTwin>();
    Session s(*graph, {.backend = backend, .distributed = comm});
    auto out =
        s.Run({{"a", Tensor::FromDoubles(f32, {4}, {1, 2, 3, 4})}}, {"consumed", "fetched:1"});
    REQUIRE(out.ok());
    CHECK((*out)[0].ToDoubles() == std::vector<double>{7, 13, 19, 25});
    CHECK((*out)[1].ToDoubles() == std::vector<double>{4, 6, 8, 10});
  }
}

TEST_CASE("data parallel: a bucket's all-reduce starts as soon as backward has produced it",
          "[data_parallel]") {
  Model m = Classifier(true, 1);  // one bucket per gradient
  Session s(m.graph, {.backend = "reference"});
  auto x = Rows(0, 4, 0);
  Result<RunPlan> plan = s.Plan({{"x", x.first}, {"y", x.second}}, {m.loss}, {m.train});
  REQUIRE(plan.ok());
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < plan->nodes.size(); ++i) at[plan->nodes[i]->name] = i;
  // The first bucket (fc2's gradient, backward's first) goes before the gradient of fc1 is made;
  // each bucket right after its gradient.
  size_t first = plan->nodes.size(), last_fc1_grad = 0;
  for (size_t i = 0; i < plan->nodes.size(); ++i) {
    const Node& node = *plan->nodes[i];
    if (node.op == "AllReduce") {
      first = std::min(first, i);
      CHECK(i == at.at(node.inputs[0].node) + 1);
    }
    if (node.name.find("fc1") != std::string::npos && node.name.find("grad") != std::string::npos)
      last_fc1_grad = std::max(last_fc1_grad, i);
  }
  CHECK(first < last_fc1_grad);
}
