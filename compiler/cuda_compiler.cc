#include "compiler/cuda_compiler.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "compiler/codegen/emit_mlir.h"
#include "compiler/cpu_compiler.h"
#include "compiler/library_kernels.h"
#include "compiler/mlir/jit.h"
#include "compiler/plan_executable.h"
#include "ir/file_util.h"
#include "runtime/cuda/collectives.h"
#include "runtime/cuda/device_copies.h"
#include "runtime/cuda/matmul_call.h"

namespace kiln::compiler {
namespace {

std::atomic<int> next_module_id{0};

// A generated kernel's code failing to lower is kiln's fault, never a reason to fall back.
Error AsInternal(const Error& e, const std::string& what) {
  return Error(e.code() == ErrorCode::kUnimplemented ? ErrorCode::kInternal : e.code(),
               what + ": " + e.message());
}

// A relabelling copy of a feed (a Reshape of fed labels) whose every reader is a device step, not
// fetched, and whose other operands are constants: on the device it costs the feed's upload
// instead of its copy's, the same bytes, and leaves no host step between device steps.
bool IsCopyOfFeedForDevice(const Step& step, const Executable& exe) {
  if (exe.buffers[step.inputs[0]].kind != BufferDesc::Kind::kFeed || step.outputs.size() != 1)
    return false;
  for (size_t i = 1; i < step.inputs.size(); ++i)
    if (exe.buffers[step.inputs[i]].kind != BufferDesc::Kind::kConstant) return false;
  const int out = step.outputs[0];
  if (std::find(exe.fetches.begin(), exe.fetches.end(), out) != exe.fetches.end()) return false;
  bool read = false;
  for (const Step& reader : exe.steps) {
    if (std::find(reader.inputs.begin(), reader.inputs.end(), out) == reader.inputs.end()) continue;
    if (reader.kind != Step::Kind::kKernel && !cuda::IsDeviceGemm(reader, exe)) return false;
    read = true;
  }
  return read;
}

}  // namespace

Where PlaceOnDevice(const Step& step, const Executable& exe) {
  if (step.kind == Step::Kind::kKernel || cuda::IsDeviceGemm(step, exe) ||
      cuda::IsDeviceCollective(step, exe))
    return Where::kDevice;
  if (cuda::IsDeviceCopy(step, exe))
    return IsCopyOfFeedForDevice(step, exe) ? Where::kDevice : Where::kWhereInputsAre;
  if (cuda::IsDeviceAssign(step, exe)) return Where::kWhereValueIs;
  return Where::kHost;
}

Result<GpuKernels> GenerateGpuKernels(const std::vector<KernelSpec>& kernels,
                                      const GpuLoweringOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::string mlir, EmitKernelModule(kernels));
  std::map<std::string, int64_t> rows;
  for (const KernelSpec& spec : kernels)
    rows[spec.name] = spec.shape.rank() ? spec.shape.dim(0) : 1;
  Result<GpuKernels> gpu = LowerKernelsForGpu(mlir, rows, options);
  if (!gpu.ok()) return AsInternal(gpu.error(), "generating the plan's GPU kernels");
  return gpu;
}

Result<CudaPlan> PlanForCuda(const RunPlan& plan, bool tf32,
                             const std::set<TensorRef>& known_feeds) {
  PlanOptions plan_options;
  plan_options.known_feeds = known_feeds;
  plan_options.can_emit = CanEmit;
  plan_options.preferred_layouts = nullptr;  // dense buffers: the device's kernels read no other
  // Library steps the device has no library for (strided copies, convolutions, pooling, sums,
  // concat and split, cross-entropy) as generated kernels, which run on the device.
  plan_options.rewrite_steps = ReplaceLibraryStepsWithKernels;
  // Inference BatchNorm as the bias of the convolution before it (cuDNN's conv + bias graph).
  plan_options.fold_batch_norm = true;
  CudaPlan out;
  KILN_ASSIGN_OR_RETURN(out.planned, PlanExecutable(plan, plan_options));
  Executable& exe = out.planned.lowered.executable;
  out.placement = PlaceSteps(exe, PlaceOnDevice);
  if (tf32)
    for (Step& step : exe.steps)
      if (step.on_device && step.callee == "gemm" && exe.buffers[step.outputs[0]].type.dtype == f32)
        step.attrs.Set("tf32", int64_t{1});
  // AssignAdd and AssignSub on the device: a generated kernel computes the new value in the
  // variable's device copy (old +/- value, or old +/- scale * value, in place).
  int updates = 0;
  for (Step& step : exe.steps) {
    if (!step.on_device || step.callee != "assign") continue;
    KILN_ASSIGN_OR_RETURN(int64_t mode, step.attrs.GetInt("mode"));
    if (mode == 0) continue;
    const TensorType& type = exe.buffers[step.outputs[0]].type;
    KernelSpec spec;
    spec.name = "assign_update" + std::to_string(updates++);
    spec.shape = Shape{type.shape.NumElements()};
    spec.inputs = {{type.dtype, spec.shape}, {type.dtype, spec.shape}};
    int value = 1;
    if (step.inputs.size() == 3) {  // old +/- scale * value
      spec.inputs.push_back({type.dtype, Shape{}});
      spec.ops.push_back({"Mul", {2, 1}, {}, type.dtype, step.node.name});
      value = 3;
    }
    spec.ops.push_back({mode > 0 ? "Add" : "Sub", {0, value}, {}, type.dtype, step.node.name});
    spec.outputs = {spec.num_values() - 1};
    step.attrs.Set("kernel", spec.name);
    out.planned.lowered.kernels.push_back(std::move(spec));
  }
  return out;
}

Result<CompiledPlan> CompileForCuda(const RunPlan& plan, const CompileOptions& options) {
  if (options.target != "cuda" && options.target != "cuda-sim")
    return MakeError(ErrorCode::kInvalidArgument, "unknown CUDA target '", options.target, "'");
  KILN_ASSIGN_OR_RETURN(CudaPlan cuda_plan, PlanForCuda(plan, options.tf32, options.known_feeds));
  PlannedExecutable& planned = cuda_plan.planned;
  CompiledPlan compiled;
  Executable& exe = planned.lowered.executable;
  const std::string name = "cuda_plan" + std::to_string(next_module_id++);
  if (!planned.lowered.kernels.empty()) {
    GpuLoweringOptions gpu_options;
    const bool sim = options.target == "cuda-sim";
    gpu_options.host_translation = sim;
    if (!sim) gpu_options.sms = {options.sm};
    KILN_ASSIGN_OR_RETURN(GpuKernels gpu, GenerateGpuKernels(planned.lowered.kernels, gpu_options));
    exe.device_kernels = std::move(gpu.kernels);
    if (sim) {
      JitOptions jit;
      jit.name = name;
      Result<std::unique_ptr<JitModule>> module = JitModule::Compile(gpu.host_translation, jit);
      if (!module.ok())
        return AsInternal(module.error(), "compiling the GPU kernels' host translations");
      compiled.kernels = JitKernelLibrary(std::move(*module));
    } else {
      compiled.device_code = std::move(gpu.ptx[options.sm]);
    }
  }
  if (const char* dir = std::getenv("KILN_DUMP_DIR"))
    KILN_RETURN_IF_ERROR(
        WriteFileAtomically(std::string(dir) + "/" + name + ".executable.txt", exe.ToString()));
  compiled.executable = std::move(exe);
  return compiled;
}

}  // namespace kiln::compiler
