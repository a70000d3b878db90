// The GPU cost model (compiler/cost_model.h) on plans whose time is known on paper: a large bf16
// MatMul is compute-bound at the tensor-core peak, a large elementwise kernel memory-bound at HBM
// bandwidth (so H200 is faster by the bandwidth ratio alone), tiny work costs a launch, copies
// cost PCIe time, fusion saves launches and bytes against one kernel per op, and a plan captured as
// a CUDA graph pays a replayed kernel's overhead per launch.
#include "compiler/cost_model.h"

#include <catch2/catch.hpp>

#include "ir/builder.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "runtime/session.h"

namespace kiln::compiler {
namespace {

// The cost on `chip` of fetching `fetch` from `graph` with `feeds`.
PlanCost Cost(const Graph& graph, const FeedList& feeds, const std::string& fetch,
              const std::string& chip) {
  Session session(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = session.Plan(feeds, {fetch});
  REQUIRE(plan.ok());
  Result<CudaPlan> cuda = PlanForCuda(*plan);
  INFO(cuda.status().ToString());
  REQUIRE(cuda.ok());
  Result<Chip> c = ChipByName(chip);
  REQUIRE(c.ok());
  return EstimatePlanCost(*cuda, *c);
}

// The overhead each launch of `cost`'s plan pays.
double LaunchUs(const PlanCost& cost) {
  return cost.graph ? kCostAssumptions.graph_launch_us : kCostAssumptions.launch_us;
}

const StepCost& OnlyDeviceStep(const PlanCost& cost) {
  const StepCost* found = nullptr;
  for (const StepCost& s : cost.steps)
    if (s.side == "device") {
      REQUIRE(found == nullptr);
      found = &s;
    }
  REQUIRE(found != nullptr);
  return *found;
}

TEST_CASE("cost model: a large bf16 MatMul is compute-bound at the tensor-core peak", "[cost]") {
  GraphBuilder g;
  Value a = g.Placeholder("a", bf16, {4096, 4096});
  Value b = g.Placeholder("b", bf16, {4096, 4096});
  g.Output("c", MatMul(a, b));
  Graph graph = *g.Build();
  FeedList feeds = {{"a", *Tensor::Create(bf16, Shape{4096, 4096})},
                    {"b", *Tensor::Create(bf16, Shape{4096, 4096})}};
  const PlanCost cost = Cost(graph, feeds, "c", "h100");
  const StepCost& gemm = OnlyDeviceStep(cost);
  const double flops = 2.0 * 4096 * 4096 * 4096;
  CHECK(gemm.flops == flops);
  CHECK(gemm.bound == "compute");
  const CostAssumptions& a_ = kCostAssumptions;
  CHECK(gemm.us == Approx(flops / (989e12 * a_.gemm_efficiency) * 1e6 + LaunchUs(cost)));
  // Two uploads and one download of 32 MiB each over PCIe.
  int copies = 0;
  for (const StepCost& s : cost.steps)
    if (s.side == "copy") {
      ++copies;
      CHECK(s.bound == "pcie");
      const double bytes = 4096.0 * 4096 * 2;
      CHECK(s.us == Approx(a_.copy_latency_us + bytes / (a_.pcie_gbps * 1e3) +
                           bytes / (a_.staging_gbps * 1e3)));
    }
  CHECK(copies == 3);
}

TEST_CASE("cost model: a large elementwise chain is memory-bound, one launch fused", "[cost]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {1 << 24});
  g.Output("y", Relu(Add(Mul(x, g.Scalar(2.0)), g.Scalar(1.0))));
  Graph graph = *g.Build();
  FeedList feeds = {{"x", *Tensor::Create(f32, Shape{1 << 24})}};
  const PlanCost h100 = Cost(graph, feeds, "y", "h100");
  const PlanCost h200 = Cost(graph, feeds, "y", "h200");
  const StepCost& k100 = OnlyDeviceStep(h100);
  const StepCost& k200 = OnlyDeviceStep(h200);
  const double bytes = 2.0 * 4 * (1 << 24);  // x read, y written
  CHECK(k100.bytes == bytes);
  CHECK(k100.bound == "memory");
  const CostAssumptions& a = kCostAssumptions;
  const double launch = LaunchUs(h100);
  CHECK(k100.us - launch == Approx(bytes / (3.35e12 * a.memory_efficiency) * 1e6));
  CHECK((k100.us - launch) / (k200.us - launch) == Approx(4.8 / 3.35));
  // One kernel per op: three launches, each reading and writing the whole tensor.
  CHECK(h100.launches == 1);
  CHECK(h100.unfused_launches == 3);
  CHECK(h100.unfused_us > h100.total_us + 2 * bytes / (3.35e12 * a.memory_efficiency) * 1e6);
}

TEST_CASE("cost model: tiny work costs its launch, unknown chips are refused", "[cost]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {4});
  g.Output("y", Exp(x));
  Graph graph = *g.Build();
  const PlanCost cost = Cost(graph, {{"x", *Tensor::Create(f32, Shape{4})}}, "y", "a100");
  CHECK(OnlyDeviceStep(cost).bound == "launch");
  // Device work alone: captured as a CUDA graph, each launch a replayed kernel's overhead, and the
  // same plan issued one launch at a time costs the difference per launch.
  const CostAssumptions& a = kCostAssumptions;
  CHECK(cost.graph);
  CHECK(OnlyDeviceStep(cost).us > a.graph_launch_us);
  CHECK(OnlyDeviceStep(cost).us < a.graph_launch_us + 0.01);
  CHECK(cost.no_graph_us - cost.total_us == Approx(a.launch_us - a.graph_launch_us));
  Result<Chip> v100 = ChipByName("v100");
  REQUIRE_FALSE(v100.ok());
  CHECK_THAT(v100.error().message(), Catch::Contains("h100, h200 and a100"));
}

TEST_CASE("cost model: a small convolution costs its floor, a large one its roofline", "[cost]") {
  const CostAssumptions& a = kCostAssumptions;
  // cuDNN's rate (the runtime's default), or a generated kernel's with KILN_CUDNN=0; 16-bit
  // operands on cuDNN run at the tensor-core peak.
  struct Case {
    DType dtype;
    bool cudnn;
    double peak_tflops;
    double efficiency;
  };
  for (const Case& c : {Case{f32, true, 67, a.cudnn_conv_efficiency},
                        Case{bf16, true, 989, a.cudnn_conv_efficiency},
                        Case{f32, false, 67, a.direct_conv_efficiency}}) {
    if (c.cudnn)
      unsetenv("KILN_CUDNN");
    else
      setenv("KILN_CUDNN", "0", 1);
    for (int64_t batch : {1, 256}) {
      INFO("batch " << batch << ", " << DTypeName(c.dtype) << (c.cudnn ? ", cuDNN" : ""));
      const int64_t channels = batch == 1 ? 16 : 64;
      const Shape x_shape{batch, channels, 32, 32}, w_shape{channels, channels, 3, 3};
      GraphBuilder g;
      Value x = g.Placeholder("x", c.dtype, x_shape);
      Value w = g.Placeholder("w", c.dtype, w_shape);
      g.Output("y", Conv2D(x, w));
      Graph graph = *g.Build();
      const PlanCost cost =
          Cost(graph,
               {{"x", *Tensor::Create(c.dtype, x_shape)}, {"w", *Tensor::Create(c.dtype, w_shape)}},
               "y", "h100");
      const StepCost& conv = OnlyDeviceStep(cost);
      if (batch == 1) {
        CHECK(conv.bound == "conv latency");
        CHECK(conv.us == a.conv_floor_us);
      } else {
        CHECK(conv.bound == "compute");
        CHECK(conv.us ==
              Approx(conv.flops / (c.peak_tflops * 1e12 * c.efficiency) * 1e6 + LaunchUs(cost)));
      }
    }
  }
  unsetenv("KILN_CUDNN");
}

TEST_CASE("cost model: a plan with host work between device steps pays a launch issued alone",
          "[cost]") {
  // The f64 MatMul is a host library call between two device kernels: no CUDA graph.
  GraphBuilder g;
  Value x = g.Placeholder("x", f64, {8, 8});
  g.Output("y", Exp(MatMul(Exp(x), x)));
  Graph graph = *g.Build();
  const PlanCost cost = Cost(graph, {{"x", *Tensor::Create(f64, Shape{8, 8})}}, "y", "h100");
  REQUIRE(cost.host_steps > 0);
  CHECK_FALSE(cost.graph);
  CHECK(cost.no_graph_us == cost.total_us);
  for (const StepCost& s : cost.steps)
    if (s.side == "device") CHECK(s.us >= kCostAssumptions.launch_us);
}

}  // namespace
}  // namespace kiln::compiler
