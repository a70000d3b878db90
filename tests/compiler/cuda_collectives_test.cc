// The cuda backends' collectives (runtime/cuda/collectives.h): a data-parallel plan's AllReduce
// steps are placed on the device and run there, through the simulated device's stand-in for NCCL
// (the session's communicator) on cuda-sim; a plan with them is not captured as a CUDA graph; NCCL
// itself loads here (the CUDA toolkit's libnccl) and its communicator is refused cleanly without a
// GPU.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <thread>

#include "compiler/cuda_compiler.h"
#include "ir/ops/collective.h"
#include "ir/ops/math.h"
#include "runtime/cuda/collectives.h"
#include "runtime/cuda/graph_capture.h"
#include "runtime/cuda/nccl_api.h"
#include "runtime/cuda/nccl_collectives.h"
#include "runtime/distributed/communicator.h"
#include "runtime/session.h"

using namespace kiln;

namespace {

// y0..y2: AllReduce(sum) of an f32, a bf16 and an f64 input; z: AllReduce(mean) of x0 + 1;
// s: AllReduce(mean_over_share) of x0.
Graph Collectives() {
  GraphBuilder g;
  Value x0 = g.Placeholder("x0", f32, {5});
  Value x1 = g.Placeholder("x1", bf16, {3});
  Value x2 = g.Placeholder("x2", f64, {2, 2});
  g.Output("y0", AllReduce({x0}, "sum")[0]);
  g.Output("y1", AllReduce({x1}, "sum")[0]);
  g.Output("y2", AllReduce({x2}, "sum")[0]);
  g.Output("z", AllReduce({x0 + 1.0}, "mean")[0]);
  g.Output("s", AllReduce({x0}, "mean_over_share")[0]);
  Result<Graph> graph = g.Build();
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  return *graph;
}

FeedList FeedsOfRank(int r) {
  return {{"x0", Tensor::FromDoubles(f32, {5}, {1.0 + r, 2, 3, 4, 0.5 * r})},
          {"x1", Tensor::FromDoubles(bf16, {3}, {0.5 + r, -2, 8})},
          {"x2", Tensor::FromDoubles(f64, {2, 2}, {1e-3 * r, 1, 2, 3})}};
}

}  // namespace

TEST_CASE("cuda collectives: sum and mean all-reduces are placed on the device", "[cuda]") {
  const Graph graph = Collectives();
  Session session(graph, {.backend = "cuda-sim"});
  Result<RunPlan> plan = session.Plan(FeedsOfRank(0), {"y0", "y1", "y2", "z", "s"});
  REQUIRE(plan.ok());
  Result<compiler::CudaPlan> placed = compiler::PlanForCuda(*plan);
  INFO(placed.status().ToString());
  REQUIRE(placed.ok());
  const Executable& exe = placed->planned.lowered.executable;
  int on_device = 0, on_host = 0;
  for (const Step& step : exe.steps) {
    if (step.node.op != "AllReduce") continue;
    Result<std::string> reduction = step.node.attrs.GetString("reduction");
    REQUIRE(reduction.ok());
    INFO(step.node.name << " " << *reduction);
    CHECK(step.on_device == (*reduction != "mean_over_share"));
    CHECK(cuda::IsDeviceCollective(step, exe) == step.on_device);
    (step.on_device ? on_device : on_host) += 1;
  }
  CHECK(on_device == 4);
  CHECK(on_host == 1);
  const cuda::GraphCapture capture = cuda::AnalyzeGraphCapture(exe);
  CHECK_FALSE(capture.capturable);
  CHECK_THAT(capture.why_not, Catch::Contains("all-reduces over the ranks"));
}

TEST_CASE("cuda collectives: three ranks on cuda-sim sum, average and share alike", "[cuda]") {
  const Graph graph = Collectives();
  constexpr int kRanks = 3;
  auto comms = MakeInProcessGroup(kRanks, 60);
  std::vector<std::vector<Tensor>> got(kRanks);
  std::vector<Status> status(kRanks, OkStatus());
  std::vector<std::thread> threads;
  const std::vector<double> shares = {0.5, 0.25, 0.25};
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      comms[r]->set_share(shares[r]);
      Session s(graph, {.backend = "cuda-sim", .distributed = comms[r]});
      auto out = s.Run(FeedsOfRank(r), {"y0", "y1", "y2", "z", "s"});
      if (!out.ok()) {
        status[r] = out.error();
        return;
      }
      got[r] = *out;
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    INFO("rank " << r << ": " << status[r].ToString());
    REQUIRE(status[r].ok());
  }
  CHECK(got[0][0].ToDoubles() == std::vector<double>{6, 6, 9, 12, 1.5});
  CHECK(got[0][1].ToDoubles() == std::vector<double>{4.5, -6, 24});
  CHECK(got[0][2].ToDoubles() == std::vector<double>{3e-3, 3, 6, 9});
  // mean: Σ share_r (x0_r + 1)
  std::vector<double> mean(5, 0.0);
  for (int r = 0; r < kRanks; ++r) {
    const std::vector<double> x = (*FeedsOfRank(r).begin()).second.ToDoubles();
    for (int i = 0; i < 5; ++i) mean[i] += shares[r] * (x[i] + 1);
  }
  for (int i = 0; i < 5; ++i) CHECK(got[0][3].GetDouble(i) == Approx(mean[i]).epsilon(1e-6));
  // mean_over_share (on the host): the mean of x0 (z less 1), over this rank's share.
  for (int r = 0; r < kRanks; ++r)
    for (int i = 0; i < 5; ++i)
      CHECK(got[r][4].GetDouble(i) == Approx((mean[i] - 1) / shares[r]).epsilon(1e-6));
  for (int r = 1; r < kRanks; ++r)
    for (int k = 0; k < 4; ++k) CHECK(got[r][k].BitwiseEquals(got[0][k]));
  // Every device all-reduce was counted: four messages a rank.
  CHECK(comms[0]->traffic().messages >= 4);
}

TEST_CASE("cuda collectives: a rank that never joins fails the simulated all-reduce, naming it",
          "[cuda]") {
  const Graph graph = Collectives();
  auto comms = MakeInProcessGroup(2, 0.3);
  Session s(graph, {.backend = "cuda-sim", .distributed = comms[0]});
  auto out = s.Run(FeedsOfRank(0), {"y0"});
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(out.error().message(), Catch::Contains("rank 1 did not join"));
}

TEST_CASE("cuda collectives: NCCL loads, and its communicator is refused cleanly without a GPU",
          "[cuda]") {
  Result<const cuda::NcclApi*> nccl = cuda::LoadNccl();
  if (!nccl.ok()) {
    CHECK_THAT(nccl.error().message(), Catch::Contains("NCCL"));
    WARN("no NCCL here: " << nccl.error().message());
    return;
  }
  CHECK((*nccl)->version >= 21100);
  auto comms = MakeInProcessGroup(2, 60);
  std::vector<Status> status(2, OkStatus());
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      auto opened = cuda::OpenNcclCollectives(
          nullptr, [] { return OkStatus(); }, comms[r]);
      status[r] = opened.status();
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << status[r].ToString());
    REQUIRE_FALSE(status[r].ok());
    CHECK_THAT(status[r].error().message(), Catch::Contains("ncclCommInitRank"));
  }
}
