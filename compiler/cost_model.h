// A cost model of a placed CUDA plan on a named GPU, so that what the passes do on a GPU shows
// without one (`kiln inspect --cost h100`).
//
// Each step is a roofline: time = max(FLOPs / (peak * compute efficiency), bytes / (HBM bandwidth
// * memory efficiency)) plus a launch's overhead, where
//   - FLOPs are the sum over the nodes the step implements (ir/graph_stats.h, on the plan's
//     resolved shapes), bytes the step's distinct operands, read or written once each;
//   - the peak is the chip's dense tensor-core rate for gemm steps of f16/bf16 operands (TF32's
//     for f32 gemms marked "tf32"), its f32 CUDA-core rate for f32 gemms and every generated
//     kernel (which compute in f32 whatever they store);
//   - efficiencies are assumptions (kCostAssumptions below) until a GPU run calibrates them: the
//     GPU bundle prints these estimates beside measured times.
// A copy between host and device costs its bytes over PCIe plus a fixed latency; a variable's
// upload (first run only: device variables persist) and constants (uploaded at load) cost
// nothing; a host step is listed but not estimated (it runs on the CPU, between device work).
// One kernel per op (the same plan without fusion) costs every computing node of the plan as a
// launch of its own reading its inputs and writing its outputs, with the same copies.
#pragma once

#include <string>
#include <vector>

#include "compiler/cuda_compiler.h"

namespace kiln::compiler {

struct Chip {
  std::string name;
  double tensor16_tflops = 0;  // dense f16/bf16 tensor cores, f32 accumulation
  double tf32_tflops = 0;      // dense TF32 tensor cores
  double fp32_tflops = 0;      // CUDA cores
  double hbm_tbps = 0;         // TB/s
};

// h100 (SXM), h200, a100 (SXM, 80 GB); anything else is kInvalidArgument naming the known ones.
Result<Chip> ChipByName(const std::string& name);

struct CostAssumptions {
  double gemm_efficiency = 0.7;         // of the tensor (or f32) peak, cuBLASLt on large shapes
  double memory_efficiency = 0.8;       // of HBM bandwidth, streaming kernels and copies
  double direct_conv_efficiency = 0.1;  // of the f32 peak: generated convolutions (no tiling)
  double launch_us = 3.0;               // per launch, without CUDA graphs
  double pcie_gbps = 25.0;              // host<->device through pinned staging
  double copy_latency_us = 10.0;        // per host<->device copy
};
inline constexpr CostAssumptions kCostAssumptions{};

struct StepCost {
  int step = 0;       // index in the plan's steps
  std::string side;   // "device", "host", "copy"
  std::string what;   // the step's routine or kernel
  std::string nodes;  // the nodes it implements
  double flops = 0;
  double bytes = 0;
  std::string bound;  // "compute", "memory", "launch", "pcie", "first run", "not estimated"
  double us = 0;
};

struct PlanCost {
  std::vector<StepCost> steps;  // variable bindings left out
  double total_us = 0;
  int launches = 0;
  int host_steps = 0;     // not estimated
  double unfused_us = 0;  // one kernel per op
  int unfused_launches = 0;
};

PlanCost EstimatePlanCost(const CudaPlan& plan, const Chip& chip,
                          const CostAssumptions& assume = kCostAssumptions);

}  // namespace kiln::compiler
