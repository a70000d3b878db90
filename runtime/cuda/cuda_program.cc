#include "runtime/cuda/cuda_program.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "runtime/arena.h"
#include "runtime/cpu/program.h"
#include "runtime/cuda/conv_call.h"
#include "runtime/cuda/device_copies.h"
#include "runtime/cuda/matmul_call.h"

namespace kiln::cuda {
namespace {

// The bytes a launch argument spans (its memref's elements of the buffer's dtype); -1 when that
// overflows.
int64_t SpanBytes(const KernelLaunch::Arg& arg, const BufferDesc& buffer) {
  int64_t n = DTypeSize(buffer.type.dtype);
  for (int64_t d : arg.dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

// CUDA's limits on a launch: grid x < 2^31, grid y and z <= 65535, block x and y <= 1024, block z
// <= 64, at most 1024 threads a block.
bool WithinLaunchLimits(const KernelLaunch& l) {
  for (int i = 0; i < 3; ++i)
    if (l.grid[i] < 1 || l.block[i] < 1) return false;
  return l.grid[0] <= (int64_t{1} << 31) - 1 && l.grid[1] <= 65535 && l.grid[2] <= 65535 &&
         l.block[0] <= 1024 && l.block[1] <= 1024 && l.block[2] <= 64 &&
         l.block[0] * l.block[1] * l.block[2] <= 1024;
}

// The buffers of a step's operands, inputs then outputs (how launches and library calls number
// them).
std::vector<int> OperandBuffers(const Step& step) {
  std::vector<int> ids = step.inputs;
  ids.insert(ids.end(), step.outputs.begin(), step.outputs.end());
  return ids;
}

constexpr int64_t kStagingAlignment = 64;

}  // namespace

ProgramOptions ProgramOptions::FromEnvironment() {
  auto on = [](const char* name) {
    const char* value = std::getenv(name);
    return !value || std::strcmp(value, "0") != 0;
  };
  ProgramOptions options;
  options.cuda_graphs = on("KILN_CUDA_GRAPHS");
  options.cudnn = on("KILN_CUDNN");
  return options;
}

Result<std::unique_ptr<CudaProgram>> CudaProgram::Load(CompiledPlan plan, Device& device,
                                                       int threads,
                                                       std::shared_ptr<DeviceVariables> variables,
                                                       ProgramOptions options) {
  std::unique_ptr<CudaProgram> program(new CudaProgram(device));
  program->variables_ =
      variables ? std::move(variables) : std::make_shared<DeviceVariables>(device);
  program->plan_ = std::move(plan);  // actions keep references into it
  program->options_ = options;
  KILN_RETURN_IF_ERROR(program->Prepare(threads));
  return program;
}

Status CudaProgram::CheckMemory(const std::set<int>& on_device) {
  const Executable& exe = plan_.executable;
  KILN_ASSIGN_OR_RETURN(DeviceMemory device_memory, device_.Memory());
  PlanMemory on_the_device =
      MeasureDevicePlan(exe, on_device, SharedVariableBuffers(exe),
                        [&](const std::string& v) { return variables_->Allocated(v); });
  // The libraries' workspaces, which the device allocates from the first call prepared.
  bool matmuls = false, convs = false;
  for (const Step& step : exe.steps) {
    matmuls = matmuls || (step.on_device && IsDeviceGemm(step, exe));
    convs = convs || (options_.cudnn && step.on_device && cpu::IsConvStep(step));
  }
  on_the_device.workspace += device_.WorkspaceBytesToCome(matmuls, convs);
  const MemoryBudget device_budget{
      device_memory.free, false,
      "free on the " + device_.Describe() + ", of " + FormatBytes(device_memory.total)};
  KILN_RETURN_IF_ERROR(CheckFits(on_the_device, device_budget, "the plan's device memory"));
  PlanMemory on_the_host = MeasurePlan(exe, options_.stored_variables);
  if (device_.Architecture() == 0)  // the simulated device allocates host memory
    on_the_host.simulated_device = on_the_device.peak() - on_the_device.resident;
  return CheckFits(on_the_host, HostBudget(options_.memory_limit), "the plan's host memory");
}

CudaProgram::~CudaProgram() {
  (void)device_.Synchronize();  // nothing issued may outlive what it uses
  graph_.reset();
  actions_.clear();
  code_.reset();
  if (pinned_) device_.FreePinned(pinned_);
  for (DevicePtr p : allocations_) device_.Free(p);
}

Status CudaProgram::Prepare(int threads) {
  threads_ = threads < 1 ? 1 : threads;
  const Executable& exe = plan_.executable;
  KILN_RETURN_IF_ERROR(cpu::CheckExecutable(exe));

  // Device memory: the arena, and a twin of every other buffer the device touches.
  std::set<int> on_device;
  for (const Step& step : exe.steps)
    if (step.on_device || cpu::IsCopyAcross(step))
      for (const std::vector<int>* ids : {&step.inputs, &step.outputs})
        on_device.insert(ids->begin(), ids->end());
  KILN_RETURN_IF_ERROR(CheckMemory(on_device));
  KILN_ASSIGN_OR_RETURN(DevicePtr arena, device_.Allocate(exe.arena_bytes));
  allocations_.push_back(arena);
  address_.assign(exe.buffers.size(), 0);
  variable_of_ = SharedVariableBuffers(exe);
  std::set<int> assign_outputs;  // buffers device assigns write: their host twins are bound then
  for (const Step& step : exe.steps)
    if (step.on_device && step.callee == "assign") assign_outputs.insert(step.outputs[0]);
  // What the host reads: the inputs of host steps and of copies to the host, and the fetches.
  std::set<int> read_on_host(exe.fetches.begin(), exe.fetches.end());
  for (const Step& step : exe.steps)
    if (!step.on_device && !(cpu::IsCopyAcross(step) && step.callee == "to_device"))
      read_on_host.insert(step.inputs.begin(), step.inputs.end());
  std::map<std::string, size_t> last_read;  // each variable's last variable_read step
  for (size_t i = 0; i < exe.steps.size(); ++i)
    if (exe.steps[i].kind == Step::Kind::kLibrary && exe.steps[i].callee == "variable_read")
      last_read[exe.steps[i].node.name] = i;
  for (size_t i = 0; i < exe.buffers.size(); ++i) {
    const BufferDesc& b = exe.buffers[i];
    auto variable = variable_of_.find(static_cast<int>(i));
    if (b.kind == BufferDesc::Kind::kArena) {
      address_[i] = arena + b.offset;
    } else if (on_device.count(static_cast<int>(i)) && b.kind == BufferDesc::Kind::kVariable &&
               variable != variable_of_.end()) {
      KILN_ASSIGN_OR_RETURN(address_[i], variables_->Address(variable->second, b.bytes()));
    } else if (on_device.count(static_cast<int>(i))) {
      KILN_ASSIGN_OR_RETURN(address_[i], device_.Allocate(b.bytes()));
      allocations_.push_back(address_[i]);
      if (b.kind == BufferDesc::Kind::kConstant)
        KILN_RETURN_IF_ERROR(
            device_.ToDevice(address_[i], exe.constants[b.index].raw_data(), b.bytes()));
    }
  }
  KILN_ASSIGN_OR_RETURN(code_, device_.Load(plan_));

  int64_t staging_bytes = 0;
  auto stage = [&](int64_t bytes) {  // a slot of pinned_; every slot lies inside it
    const int64_t offset = staging_bytes;
    staging_bytes += (std::max<int64_t>(bytes, 1) + kStagingAlignment - 1) / kStagingAlignment *
                     kStagingAlignment;
    return offset;
  };
  for (const Step& step : exe.steps) {
    Action action;
    if (cpu::IsCopyAcross(step)) {
      action.buffer = step.inputs[0];
      const BufferDesc& b = exe.buffers[action.buffer];
      const bool to_device = step.callee == "to_device";
      action.kind = to_device ? Action::Kind::kToDevice : Action::Kind::kToHost;
      if (auto v = variable_of_.find(action.buffer);
          to_device && v != variable_of_.end() && b.kind == BufferDesc::Kind::kVariable)
        action.variable = v->second;
      if (!to_device && b.kind != BufferDesc::Kind::kArena && !assign_outputs.count(action.buffer))
        return MakeError(ErrorCode::kInternal, "to_host of buffer %", action.buffer, " (", b.tensor,
                         "), which is not an arena buffer");
      if (action.variable.empty()) action.staged = stage(b.bytes());  // a variable's: uploaded
    } else if (step.on_device && (step.callee == "copy" || step.callee == "assign")) {
      const bool assign = step.callee == "assign";
      if (!(assign ? IsDeviceAssign(step, exe) : IsDeviceCopy(step, exe)))
        return MakeError(ErrorCode::kInternal, "step ", step.callee, " (", step.node.name,
                         ") is placed on the device, where it is not a plain copy");
      action.kind = assign ? Action::Kind::kAssign : Action::Kind::kCopyOnDevice;
      action.source = step.inputs[assign ? 1 : 0];
      action.buffer = step.outputs[0];
      if (assign) {
        action.variable = step.node.inputs[0].node;
        // The new value can stay on the device when no host step or fetch reads it and every read
        // of the variable comes before (none sees the device copy change under it).
        auto read = last_read.find(action.variable);
        const size_t index = static_cast<size_t>(&step - exe.steps.data());
        action.deferred =
            !read_on_host.count(action.buffer) && (read == last_read.end() || read->second < index);
        if (!action.deferred)
          action.staged = stage(exe.buffers[action.buffer].bytes());  // the new value's read-back
      }
      if (assign &&
          step.attrs.Has("kernel")) {  // AssignAdd, AssignSub: old +/- (scale *) value, in place
        KILN_ASSIGN_OR_RETURN(std::string kernel, step.attrs.GetString("kernel"));
        action.kernel = exe.FindDeviceKernel(kernel);
        if (!action.kernel)
          return MakeError(ErrorCode::kInternal, "no device kernel '", kernel, "' for ",
                           step.node.name);
        std::vector<int> ids = step.inputs;  // the variable, the value, the scale if any
        ids.push_back(step.outputs[0]);
        for (int id : ids) action.operands.push_back({address_[id], exe.buffers[id].bytes()});
        KILN_RETURN_IF_ERROR(CheckLaunches(*action.kernel, ids));
      } else if (assign) {
        KILN_ASSIGN_OR_RETURN(int64_t mode, step.attrs.GetInt("mode"));
        if (mode != 0)
          return MakeError(ErrorCode::kInternal, "assign ", step.node.name,
                           " adds or subtracts on the device but names no kernel");
      }
    } else if (step.on_device && IsDeviceGemm(step, exe)) {
      KILN_ASSIGN_OR_RETURN(MatmulCall call, MatmulCallForGemm(step, exe));
      const std::vector<int> ids = OperandBuffers(step);
      MatmulOperands operands;
      operands.a = address_[ids[call.a_operand]];
      operands.b = address_[ids[call.b_operand]];
      operands.d = address_[ids[call.d_operand]];
      if (call.bias) operands.bias = address_[ids[call.bias_operand]];
      Result<std::shared_ptr<PreparedMatmul>> matmul = device_.PrepareMatmul(call, operands);
      if (!matmul.ok()) return matmul.error().WithContext("step gemm (" + step.node.name + ")");
      action.kind = Action::Kind::kMatmul;
      action.matmul = std::move(*matmul);
    } else if (step.on_device && IsDeviceCollective(step, exe)) {
      action.kind = Action::Kind::kAllReduce;
      action.reduced_dtype = exe.buffers[step.inputs[0]].type.dtype;
      action.reduction = step.node.attrs.GetString("reduction").value();
      for (size_t i = 0; i < step.inputs.size(); ++i)
        action.reduced.push_back({address_[step.inputs[i]], address_[step.outputs[i]],
                                  exe.buffers[step.inputs[i]].type.shape.NumElements()});
    } else if (step.on_device && options_.cudnn && cpu::IsConvStep(step) &&
               PrepareConv(step, action)) {
      ++cudnn_steps_;
    } else if (step.on_device) {
      if (step.kind != Step::Kind::kKernel)
        return MakeError(ErrorCode::kUnimplemented, "step ", step.callee, " (", step.node.name,
                         ") is placed on the device, which has no routine for it");
      action.kind = Action::Kind::kLaunch;
      action.kernel = exe.FindDeviceKernel(step.callee);
      if (!action.kernel)
        return MakeError(ErrorCode::kInternal, "no device kernel '", step.callee, "'");
      const std::vector<int> ids = OperandBuffers(step);
      for (int id : ids) action.operands.push_back({address_[id], exe.buffers[id].bytes()});
      KILN_RETURN_IF_ERROR(CheckLaunches(*action.kernel, ids));
    } else {
      if (step.kind == Step::Kind::kKernel)
        return MakeError(ErrorCode::kInternal, "kernel step ", step.callee,
                         " is placed on the host, which has no code for it in a CUDA plan");
      Result<std::unique_ptr<cpu::StepRunner>> runner = step.kind == Step::Kind::kLibrary
                                                            ? cpu::MakeLibraryStep(step, exe)
                                                            : cpu::MakeReferenceStep(step, exe);
      KILN_RETURN_IF_ERROR(runner.status());
      action.runner = std::move(*runner);
      action.variable_read = step.kind == Step::Kind::kLibrary && step.callee == "variable_read";
      if (action.variable_read && variable_of_.count(step.outputs[0]) &&
          !read_on_host.count(step.outputs[0]))
        action.variable = step.node.name;
    }
    actions_.push_back(std::move(action));
  }
  if (!cudnn_fallbacks_.empty())
    std::fprintf(stderr,
                 "kiln: warning: %zu convolution step(s) run as generated kernels, not through "
                 "cuDNN: %s\n",
                 cudnn_fallbacks_.size(), cudnn_fallbacks_[0].c_str());
  if (staging_bytes > 0) {
    KILN_ASSIGN_OR_RETURN(void* pinned, device_.AllocatePinned(staging_bytes));
    pinned_ = static_cast<uint8_t*>(pinned);
  }
  capture_ = AnalyzeGraphCapture(exe);
  profile_ = cpu::StepProfile::FromEnvironment(exe);
  for (size_t i = 0; profile_ && i < actions_.size(); ++i)
    if (actions_[i].kind == Action::Kind::kConv)
      profile_->Relabel(
          i, "device cudnn " + exe.steps[i].attrs.GetString("library").value() + " " +
                 std::string(DTypeName(exe.buffers[exe.steps[i].outputs[0]].type.dtype)));
  KILN_ASSIGN_OR_RETURN(host_arena_, AllocateArena(exe.arena_bytes));
  return OkStatus();
}

bool CudaProgram::PrepareConv(const Step& step, Action& action) {
  const Executable& exe = plan_.executable;
  auto fall_back = [&](const Error& why) {
    cudnn_fallbacks_.push_back(step.node.name + ": " + why.message());
    return false;
  };
  Result<ConvCall> call = ConvCallForStep(step, exe);
  if (!call.ok()) return fall_back(call.error());
  const std::vector<int> ids = OperandBuffers(step);
  ConvOperands operands;
  operands.x = address_[ids[call->x_operand]];
  operands.w = address_[ids[call->w_operand]];
  operands.y = address_[ids[call->y_operand]];
  if (call->bias) operands.bias = address_[ids[call->bias_operand]];
  if (call->residual) operands.residual = address_[ids[call->residual_operand]];
  Result<std::shared_ptr<PreparedConv>> conv = device_.PrepareConv(*call, operands);
  if (!conv.ok()) return fall_back(conv.error());
  action.kind = Action::Kind::kConv;
  action.conv = std::move(*conv);
  return true;
}

Status CudaProgram::CheckLaunches(const DeviceKernel& kernel, const std::vector<int>& ids) {
  const Executable& exe = plan_.executable;
  for (const KernelLaunch& launch : kernel.launches) {
    for (size_t a = 0; a < launch.args.size(); ++a) {
      const KernelLaunch::Arg& arg = launch.args[a];
      if (arg.operand < 0) continue;
      if (arg.operand >= static_cast<int>(ids.size()))
        return MakeError(ErrorCode::kInternal, "launch of ", launch.function, ": argument ", a,
                         " is operand ", arg.operand, " of step ", kernel.name, ", which has ",
                         ids.size());
      const BufferDesc& b = exe.buffers[ids[arg.operand]];
      const int64_t span = SpanBytes(arg, b);
      if (span < 0 || span > b.bytes())
        return MakeError(ErrorCode::kInternal, "launch of ", launch.function, ": argument ", a,
                         " spans ", Shape(arg.dims).ToString(), " but its buffer (", b.tensor,
                         ") is ", b.type.ToString());
      if (address_[ids[arg.operand]] % kKernelOperandAlignment != 0)
        return MakeError(ErrorCode::kInternal, "launch of ", launch.function, ": argument ", a,
                         " (", b.tensor, ") is not ", kKernelOperandAlignment,
                         "-byte aligned, as generated kernels assume");
    }
    if (!WithinLaunchLimits(launch))
      return MakeError(ErrorCode::kInternal, "launch of ", launch.function, ": grid ",
                       launch.grid[0], "x", launch.grid[1], "x", launch.grid[2], ", block ",
                       launch.block[0], "x", launch.block[1], "x", launch.block[2],
                       " is outside CUDA's limits");
    KILN_RETURN_IF_ERROR(device_.Check(*code_, launch));
  }
  return OkStatus();
}

}  // namespace kiln::cuda
