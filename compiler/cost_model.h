// A cost model of a placed CUDA plan on a named GPU, so that what the passes do on a GPU shows
// without one (`kiln inspect --cost h100`).
//
// Each step is a roofline: time = max(FLOPs / (peak * compute efficiency), bytes / (HBM bandwidth
// * memory efficiency)) plus a launch's overhead, where
//   - FLOPs are the sum over the nodes the step implements (ir/graph_stats.h, on the plan's
//     resolved shapes), bytes the step's distinct operands, read or written once each;
//   - the peak is the chip's dense tensor-core rate for gemm steps and cuDNN convolutions of
//     f16/bf16 operands (TF32's for f32 gemms marked "tf32"), its f32 CUDA-core rate for f32 gemms
//     and convolutions and every generated kernel (which compute in f32 whatever they store);
//   - efficiencies are assumptions (kCostAssumptions below); the launch and copy overheads were
//     calibrated on an H100 by the GPU bundle (docs/gpu_measurements.md), which prints these
//     estimates beside measured times.
// A plan that can be captured as a CUDA graph (runtime/cuda/graph_capture.h; the runtime's
// default) pays a replayed kernel's overhead per launch, else a launch issued on its own; both
// totals are given.
// A copy between host and device costs its bytes over PCIe and through the host's staging copy,
// plus a fixed latency; a convolution step costs at least a floor (small ones are latency-bound);
// a variable's
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
  // cuDNN's convolutions (the runtime's default where the GPU has cuDNN; KILN_CUDNN=0 leaves them
  // to the generated kernels): of the tensor-core peak for 16-bit operands, of the f32 peak for
  // f32 ones (kiln's f32 convolutions do not use TF32). Not yet measured on large convolutions:
  // the bundle's ResNet-50 inference prints the estimate beside the time.
  double cudnn_conv_efficiency = 0.5;
  // Measured on an H100, host input to host output of small models (transformer: 32 launches,
  // LSTM: 168): 4.2-4.4 us per step issued on its own, 1.0-1.3 us per kernel of a replayed graph.
  double launch_us = 4.3;        // per launch, issued on its own (KILN_CUDA_GRAPHS=0)
  double graph_launch_us = 1.1;  // per kernel of a replayed CUDA graph
  // Host<->device through pinned staging: 5-6.5 GB/s measured for 0.4-1.5 MB copies on the lent
  // H100 machine (a VM; PCIe 5 on bare metal reaches several times that).
  double pcie_gbps = 6.5;
  double copy_latency_us = 10.0;  // per host<->device copy
  // The host's copy of a feed into the pinned staging, or of a fetch out of it: 4 GB/s from the
  // large host-to-host runs on that machine (2^26 floats, 4096x4096), less their transfers.
  double staging_gbps = 4.0;
  // The least a convolution step takes, however small: at batch 2 (ResNet, 64x64) cuDNN's calls
  // took 10.3 us each on the H100 and generated convolution kernels 13.6 us (one thread per output
  // adds its products in sequence), where the roofline said 1-2 us.
  double conv_floor_us = 9.0;
};
inline constexpr CostAssumptions kCostAssumptions{};

struct StepCost {
  int step = 0;       // index in the plan's steps
  std::string side;   // "device", "host", "copy"
  std::string what;   // the step's routine or kernel
  std::string nodes;  // the nodes it implements
  double flops = 0;
  double bytes = 0;
  // "compute", "memory", "launch", "conv latency", "pcie", "first run", "not estimated"
  std::string bound;
  double us = 0;
};

struct PlanCost {
  std::vector<StepCost> steps;  // variable bindings left out
  bool graph = false;           // the plan is captured as a CUDA graph: launches cost its overhead
  double total_us = 0;
  double no_graph_us = 0;  // the same plan with every launch issued on its own
  int launches = 0;
  int host_steps = 0;     // not estimated
  double unfused_us = 0;  // one kernel per op
  int unfused_launches = 0;
};

PlanCost EstimatePlanCost(const CudaPlan& plan, const Chip& chip,
                          const CostAssumptions& assume = kCostAssumptions);

}  // namespace kiln::compiler
