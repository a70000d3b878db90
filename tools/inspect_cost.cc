#include "tools/inspect_cost.h"

#include <cstdio>

#ifdef KILN_HAS_COMPILER
#include "compiler/cost_model.h"
#include "compiler/cuda_compiler.h"
#endif

namespace kiln::cli {

#ifdef KILN_HAS_COMPILER
namespace {

// The cost of the model's CUDA plan under `precision` (the session's graph rewrite included).
Result<compiler::PlanCost> CostOf(const Graph& graph, const FeedList& feeds,
                                  const std::vector<TensorName>& fetches,
                                  const std::vector<TensorName>& targets,
                                  const PrecisionPolicy& precision, const compiler::Chip& chip) {
  Session session(graph, SessionOptions{.precision = precision});  // the plan points into it
  KILN_ASSIGN_OR_RETURN(RunPlan plan, session.Plan(feeds, fetches, targets));
  KILN_ASSIGN_OR_RETURN(compiler::CudaPlan cuda, compiler::PlanForCuda(plan, precision.tf32));
  return compiler::EstimatePlanCost(cuda, chip);
}

PrecisionPolicy Policy(DType compute, bool tf32) {
  PrecisionPolicy policy;
  policy.compute = compute;
  policy.tf32 = tf32;
  return policy;
}

}  // namespace

int PrintCostReport(const Command& cmd, const Graph& graph, const FeedList& feeds,
                    const std::vector<TensorName>& fetches, const std::vector<TensorName>& targets,
                    const std::string& chip_name, bool tf32) {
  Result<compiler::Chip> chip = compiler::ChipByName(chip_name);
  if (!chip.ok()) return UsageError(cmd, "--cost: " + chip.error().message());
  Result<compiler::PlanCost> cost =
      CostOf(graph, feeds, fetches, targets, Policy(f32, tf32), *chip);
  if (!cost.ok()) return Fail(cmd, cost.error());
  const compiler::CostAssumptions& a = compiler::kCostAssumptions;
  std::printf(
      "\ncost on %s (peaks %g TFLOP/s f16/bf16 tensor, %g tf32, %g fp32 CUDA cores, %g TB/s HBM; "
      "assumed: gemm %.0f%% of peak, generated convolutions %.0f%% of fp32, streaming %.0f%% of "
      "HBM, %g us a launch in a CUDA graph or %g us on its own, a convolution at least %g us, "
      "PCIe %g GB/s + staging %g GB/s + %g us a copy):\n",
      chip->name.c_str(), chip->tensor16_tflops, chip->tf32_tflops, chip->fp32_tflops,
      chip->hbm_tbps, 100 * a.gemm_efficiency, 100 * a.direct_conv_efficiency,
      100 * a.memory_efficiency, a.graph_launch_us, a.launch_us, a.conv_floor_us, a.pcie_gbps,
      a.staging_gbps, a.copy_latency_us);
  std::printf("  %5s %-6s %-24s %10s %10s %-13s %10s  %s\n", "step", "side", "what", "MFLOP", "KB",
              "bound", "us", "nodes");
  for (const compiler::StepCost& s : cost->steps)
    std::printf("  %5d %-6s %-24s %10.3f %10.1f %-13s %10.2f  %s\n", s.step, s.side.c_str(),
                s.what.c_str(), s.flops / 1e6, s.bytes / 1e3, s.bound.c_str(), s.us,
                s.nodes.c_str());
  std::printf("launches: %d (%s), host steps (not estimated): %d\n", cost->launches,
              cost->graph ? "replayed as a CUDA graph" : "issued one by one: not capturable",
              cost->host_steps);
  std::printf("estimated_ms: %.4f\n", cost->total_us / 1e3);
  if (cost->graph)
    std::printf("estimated_ms_without_graph: %.4f (KILN_CUDA_GRAPHS=0)\n", cost->no_graph_us / 1e3);
  std::printf("\n%-9s %10s %24s %10s %12s\n", "precision", "fused_ms", "one_kernel_per_op_ms",
              "launches", "host_steps");
  struct Row {
    const char* name;
    PrecisionPolicy policy;
  };
  for (const Row& row : {Row{"fp32", Policy(f32, false)}, Row{"tf32", Policy(f32, true)},
                         Row{"bf16", Policy(bf16, false)}, Row{"fp16", Policy(f16, false)}}) {
    Result<compiler::PlanCost> c = CostOf(graph, feeds, fetches, targets, row.policy, *chip);
    if (!c.ok()) return Fail(cmd, c.error());
    std::printf("%-9s %10.4f %24.4f %10d %12d\n", row.name, c->total_us / 1e3, c->unfused_us / 1e3,
                c->launches, c->host_steps);
  }
  return 0;
}

#else

int PrintCostReport(const Command& cmd, const Graph&, const FeedList&,
                    const std::vector<TensorName>&, const std::vector<TensorName>&,
                    const std::string&, bool) {
  return Fail(cmd, MakeError(ErrorCode::kUnimplemented, "--cost needs a build with the compiler"));
}

#endif

}  // namespace kiln::cli
