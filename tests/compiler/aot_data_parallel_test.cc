// Training modules compiled data-parallel (kiln compile --train --data-parallel): loaded as ranks
// of an in-process group (ModuleOptions::distributed), each running its half of every global batch,
// they keep one module's variables on the whole batch, bit for bit alike on every rank; on the cpu
// target through the communicator, on a cuda module on cuda-sim through the device's collectives.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <thread>

#include "compiler/aot.h"
#include "ir/layers.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "passes/optim.h"
#include "runtime/distributed/communicator.h"
#include "runtime/module/module.h"
#include "tools/lib/training_graph.h"

using namespace kiln;

namespace {

// A classifier's training step, data-parallel or not, compiled for batches of `rows`.
ModuleFile TrainingModule(bool data_parallel, int64_t rows, const std::string& target) {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 6});
  Value y = g.Placeholder("y", i64, {-1});
  Value h = Tanh(nn::Dense(g.Scope("fc1"), x, 8));
  g.Output("loss", SoftmaxCrossEntropy(nn::Dense(g.Scope("fc2"), h, 3), y));
  Result<Graph> forward = g.Build();
  REQUIRE(forward.ok());
  optim::Optimizer adam = optim::Adam({.lr = 0.05});
  if (data_parallel) adam = adam.DataParallel({});
  Result<TrainingGraph> training = AddOptimizer(*forward, "loss", adam);
  REQUIRE(training.ok());
  Result<ModuleFile> module =
      compiler::CompileModule(training->graph, {.fetches = {training->loss},
                                                .targets = {training->update},
                                                .input_shapes = {{"x", {rows, 6}}, {"y", {rows}}},
                                                .target = target});
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  return std::move(*module);
}

std::vector<std::pair<std::string, Tensor>> Rows(int64_t begin, int64_t end, int step) {
  std::vector<double> xs, ys;
  for (int64_t r = begin; r < end; ++r) {
    for (int f = 0; f < 6; ++f)
      xs.push_back(std::cos(0.61 * static_cast<double>(r * 6 + f) + step));
    ys.push_back(static_cast<double>((r + step) % 3));
  }
  return {{"x", Tensor::FromDoubles(f32, {end - begin, 6}, xs)},
          {"y", Tensor::FromDoubles(i64, {end - begin}, ys)}};
}

constexpr int kSteps = 4;

}  // namespace

TEST_CASE("data-parallel modules: two ranks on halves train as one module on the whole batch",
          "[aot][data_parallel]") {
  for (const auto& [target, backend] :
       std::vector<std::pair<std::string, std::string>>{{"cpu", "cpu"}, {"cuda", "cuda-sim"}}) {
    INFO(backend);
    Result<std::unique_ptr<Module>> one = Module::LoadFromBytes(
        *SerializeModule(TrainingModule(false, 12, target)), "one.kmod", {.backend = backend});
    REQUIRE(one.ok());
    for (int step = 0; step < kSteps; ++step) REQUIRE((*one)->Run(Rows(0, 12, step)).ok());

    const std::string bytes = *SerializeModule(TrainingModule(true, 6, target));
    auto comms = MakeInProcessGroup(2, 60);
    std::vector<std::map<std::string, Tensor>> got(2);
    std::vector<Status> status(2, OkStatus());
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        Result<std::unique_ptr<Module>> m = Module::LoadFromBytes(
            bytes, "ranks.kmod", {.backend = backend, .distributed = comms[r]});
        if (!m.ok()) {
          status[r] = m.error();
          return;
        }
        status[r] = (*m)->BroadcastVariables();
        for (int step = 0; step < kSteps && status[r].ok(); ++step)
          status[r] = (*m)->Run(Rows(6 * r, 6 * r + 6, step)).status();
        if (status[r].ok()) status[r] = (*m)->variables().MaterializeAll();
        if (status[r].ok()) got[r] = (*m)->variables().values();
      });
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < 2; ++r) {
      INFO("rank " << r << ": " << status[r].ToString());
      REQUIRE(status[r].ok());
    }
    REQUIRE((*one)->variables().MaterializeAll().ok());
    const std::map<std::string, Tensor> want = (*one)->variables().values();
    REQUIRE(got[0].size() == want.size());
    for (const auto& [name, w] : want) {
      INFO(name);
      REQUIRE(got[0].count(name));
      const Tensor& a = got[0].at(name);
      const Tensor& b = got[1].at(name);
      REQUIRE(a.byte_size() == b.byte_size());
      CHECK(std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0);
      for (int64_t i = 0; i < w.num_elements(); ++i)
        CHECK(a.GetDouble(i) == Approx(w.GetDouble(i)).epsilon(1e-5).margin(1e-6));
    }
  }
}
