// The compiler of the cuda backends (targets "cuda" and "cuda-sim"): the cpu backend's pipeline up
// to buffer assignment (compiler/plan_executable.h; every buffer dense); the library steps the
// device has no library for become generated kernels (compiler/library_kernels.h); then placement
// (compiler/placement.h): generated kernels, f32/f16/bf16 gemm steps (cuBLASLt,
// runtime/cuda/matmul_call.h), and copies and variable assignments that are device-to-device
// copies (runtime/cuda/device_copies.h) run on the device, every other step on the host for now,
// with the copies between them; then the generated kernels are lowered for the GPU
// (compiler/mlir/gpu_kernels.h: launches, and PTX for the device's architecture or host
// translations for the simulated device, JIT-compiled into this process). CpuCompiler hands these
// targets here; the ahead-of-time compiler (compiler/aot.h) uses the same stages for target "cuda".
#pragma once

#include "compiler/mlir/gpu_kernels.h"
#include "compiler/placement.h"
#include "compiler/plan_executable.h"
#include "runtime/cpu/plan_compiler.h"

namespace kiln::compiler {

// A CUDA plan before code generation (what `kiln inspect --placement` shows): planned with dense
// buffers, then placed.
struct CudaPlan {
  PlannedExecutable planned;  // planned.lowered.executable is placed
  PlacementStats placement;
};
// With `tf32`, the device's f32 gemm steps get attribute "tf32" = 1: their cuBLASLt calls may use
// TF32 tensor cores (runtime/cuda/matmul_call.h). `known_feeds`: the feeds whose values the
// plan is specialized on (PlanOptions::known_feeds).
Result<CudaPlan> PlanForCuda(const RunPlan& plan, bool tf32 = false,
                             const std::set<TensorRef>& known_feeds = {});

// The generated kernels of a plan lowered for the GPU (launches, and the PTX and host translation
// `options` ask for). A failure is kiln's own (kInternal), never a reason to fall back.
Result<GpuKernels> GenerateGpuKernels(const std::vector<KernelSpec>& kernels,
                                      const GpuLoweringOptions& options);

Result<CompiledPlan> CompileForCuda(const RunPlan& plan, const CompileOptions& options);

// Where a step of a CUDA plan runs (compiler/placement.h).
Where PlaceOnDevice(const Step& step, const Executable& exe);

}  // namespace kiln::compiler
