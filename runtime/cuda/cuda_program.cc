#include "runtime/cuda/cuda_program.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

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

// The tensor the run bound a buffer to (a variable_read pins the value it binds).
const Tensor* PinnedAt(const cpu::StepEnv& env, const void* data) {
  for (const Tensor& t : env.pinned)
    if (t.raw_data() == data) return &t;
  return nullptr;
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

CudaProgram::~CudaProgram() {
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
  KILN_ASSIGN_OR_RETURN(DevicePtr arena, device_.Allocate(exe.arena_bytes));
  allocations_.push_back(arena);
  address_.assign(exe.buffers.size(), 0);
  variable_of_ = SharedVariableBuffers(exe);
  std::set<int> assign_outputs;  // buffers device assigns write: their host twins are bound then
  for (const Step& step : exe.steps)
    if (step.on_device && step.callee == "assign") assign_outputs.insert(step.outputs[0]);
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
        action.staged = stage(exe.buffers[action.buffer].bytes());  // the new value's read-back
      }
      if (assign && step.attrs.Has("kernel")) {  // AssignAdd, AssignSub: old +/- value, in place
        KILN_ASSIGN_OR_RETURN(std::string kernel, step.attrs.GetString("kernel"));
        action.kernel = exe.FindDeviceKernel(kernel);
        if (!action.kernel)
          return MakeError(ErrorCode::kInternal, "no device kernel '", kernel, "' for ",
                           step.node.name);
        for (int id : {step.inputs[0], step.inputs[1], step.outputs[0]})
          action.operands.push_back({address_[id], exe.buffers[id].bytes()});
        KILN_RETURN_IF_ERROR(
            CheckLaunches(*action.kernel, {step.inputs[0], step.inputs[1], step.outputs[0]}));
      } else if (assign) {
        KILN_ASSIGN_OR_RETURN(int64_t mode, step.attrs.GetInt("mode"));
        if (mode != 0)
          return MakeError(ErrorCode::kInternal, "assign ", step.node.name,
                           " adds or subtracts on the device but names no kernel");
      }
    } else if (step.on_device && IsDeviceGemm(step, exe)) {
      KILN_ASSIGN_OR_RETURN(MatmulCall call, MatmulCallForGemm(step, exe));
      std::vector<int> ids = step.inputs;
      ids.insert(ids.end(), step.outputs.begin(), step.outputs.end());
      MatmulOperands operands;
      operands.a = address_[ids[call.a_operand]];
      operands.b = address_[ids[call.b_operand]];
      operands.d = address_[ids[call.d_operand]];
      if (call.bias) operands.bias = address_[ids[call.bias_operand]];
      Result<std::shared_ptr<PreparedMatmul>> matmul = device_.PrepareMatmul(call, operands);
      if (!matmul.ok()) return matmul.error().WithContext("step gemm (" + step.node.name + ")");
      action.kind = Action::Kind::kMatmul;
      action.matmul = std::move(*matmul);
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
      std::vector<int> ids = step.inputs;
      ids.insert(ids.end(), step.outputs.begin(), step.outputs.end());
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
  KILN_ASSIGN_OR_RETURN(Tensor host_arena, Tensor::Create(u8, Shape{exe.arena_bytes}));
  host_arena_ = std::shared_ptr<uint8_t[]>(host_arena.data<uint8_t>(), [host_arena](uint8_t*) {});
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
  std::vector<int> ids = step.inputs;
  ids.insert(ids.end(), step.outputs.begin(), step.outputs.end());
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

Status CudaProgram::LaunchAll(const Action& action) {
  for (const KernelLaunch& launch : action.kernel->launches)
    KILN_RETURN_IF_ERROR(device_.Launch(*code_, launch, action.operands));
  return OkStatus();
}

Status CudaProgram::HostHalf(const Action& action, cpu::StepEnv& env) {
  const Executable& exe = plan_.executable;
  switch (action.kind) {
    case Action::Kind::kHost:
      return action.runner->Run(env);
    case Action::Kind::kToDevice: {
      const BufferDesc& b = exe.buffers[action.buffer];
      if (!env.data[action.buffer])
        return MakeError(ErrorCode::kInternal, "to_device of ", b.tensor,
                         " before anything bound it on the host");
      if (action.variable.empty()) {
        std::memcpy(Staged(action), env.data[action.buffer], b.bytes());
        return OkStatus();
      }
      const Tensor* value = PinnedAt(env, env.data[action.buffer]);
      if (!value)
        return MakeError(ErrorCode::kInternal, "to_device of variable '", action.variable,
                         "': its buffer is not bound to a value of the store");
      KILN_ASSIGN_OR_RETURN(bool uploaded, variables_->Upload(action.variable, *value));
      skipped_upload_ = !uploaded;
      return OkStatus();
    }
    case Action::Kind::kAssign: {
      // The new value goes into the variable's device copy (the device half); its host twin, bound
      // now for any reader on the host, is read back when the device is done (Finish).
      const BufferDesc& out = exe.buffers[action.buffer];
      variables_->Invalidate(action.variable);
      KILN_ASSIGN_OR_RETURN(Tensor value, Tensor::Create(out.type.dtype, out.type.shape));
      env.pinned.push_back(value);
      env.data[action.buffer] = value.raw_data();
      assigned_.push_back({&action, value});
      return OkStatus();
    }
    default:
      return OkStatus();
  }
}

Status CudaProgram::DeviceHalf(const Action& action) {
  const Executable& exe = plan_.executable;
  switch (action.kind) {
    case Action::Kind::kHost:
      return OkStatus();
    case Action::Kind::kToDevice:
      if (!action.variable.empty()) return OkStatus();  // uploaded by the host half
      return device_.ToDeviceAsync(address_[action.buffer], Staged(action),
                                   exe.buffers[action.buffer].bytes());
    case Action::Kind::kToHost:
      return device_.ToHostAsync(Staged(action), address_[action.buffer],
                                 exe.buffers[action.buffer].bytes());
    case Action::Kind::kLaunch:
      return LaunchAll(action);
    case Action::Kind::kMatmul:
      return device_.Matmul(*action.matmul);
    case Action::Kind::kConv:
      return device_.Conv(*action.conv);
    case Action::Kind::kCopyOnDevice:
      return device_.CopyOnDevice(address_[action.buffer], address_[action.source],
                                  exe.buffers[action.buffer].bytes());
    case Action::Kind::kAssign: {
      // The new value, then its copy for the store (read out of staging by Finish).
      const int64_t bytes = exe.buffers[action.buffer].bytes();
      KILN_RETURN_IF_ERROR(action.kernel ? LaunchAll(action)
                                         : device_.CopyOnDevice(address_[action.buffer],
                                                                address_[action.source], bytes));
      return device_.ToHostAsync(Staged(action), address_[action.buffer], bytes);
    }
  }
  return OkStatus();
}

Status CudaProgram::Perform(const Action& action, cpu::StepEnv& env) {
  // A host step may read what a copy to the host brings (and a copy to the device may send it).
  bool reads_copied = action.kind == Action::Kind::kHost && !action.variable_read;
  for (const Action* pending : pending_to_host_)
    reads_copied = reads_copied ||
                   (action.kind == Action::Kind::kToDevice && pending->buffer == action.buffer);
  if (reads_copied) KILN_RETURN_IF_ERROR(ReadStagedCopies(env));
  KILN_RETURN_IF_ERROR(HostHalf(action, env));
  KILN_RETURN_IF_ERROR(DeviceHalf(action));
  if (action.kind == Action::Kind::kToHost) pending_to_host_.push_back(&action);
  return OkStatus();
}

Status CudaProgram::ReadStagedCopies(cpu::StepEnv& env) {
  if (pending_to_host_.empty()) return OkStatus();
  KILN_RETURN_IF_ERROR(device_.Synchronize());
  for (const Action* action : pending_to_host_) {
    const BufferDesc& b = plan_.executable.buffers[action->buffer];
    if (!env.data[action->buffer])
      return MakeError(ErrorCode::kInternal, "to_host of ", b.tensor,
                       " before its host twin was bound");
    std::memcpy(env.data[action->buffer], Staged(*action), b.bytes());
  }
  pending_to_host_.clear();
  return OkStatus();
}

Status CudaProgram::IssueDeviceSteps() {
  auto issue = [&]() -> Status {
    for (int i = capture_.first; i <= capture_.last; ++i)
      KILN_RETURN_IF_ERROR(DeviceHalf(actions_[i]));
    return OkStatus();
  };
  if (graph_) {
    ++replays_;
    return device_.Replay(*graph_);
  }
  // The first run goes step by step: it loads what loads lazily (kernels, cuBLASLt) outside a
  // capture, as PyTorch's warm-up does.
  if (!options_.cuda_graphs || runs_ < 2) return issue();
  Status began = device_.BeginCapture();
  if (began.ok()) {
    Status issued = issue();
    Result<std::unique_ptr<DeviceGraph>> graph = device_.EndCapture();
    if (issued.ok() && graph.ok()) {
      graph_ = std::move(*graph);
      ++replays_;
      return device_.Replay(*graph_);
    }
    capture_error_ = (issued.ok() ? graph.error() : issued.error()).message();
  } else {
    capture_error_ = began.error().message();
  }
  options_.cuda_graphs = false;
  std::fprintf(stderr,
               "kiln: warning: the device steps could not be captured as a CUDA graph (%s); "
               "they are issued one by one\n",
               capture_error_.c_str());
  return issue();
}

Result<std::vector<Tensor>> CudaProgram::RunInPhases(cpu::StepEnv& env, VariableStore& variables) {
  // 1: host work up to the last device step (host steps there are the prefix's and variable_reads:
  // AnalyzeGraphCapture); 2: the device steps; 3: the copies to the host, then the host steps
  // after the last device step.
  for (int i = 0; i <= capture_.last; ++i) KILN_RETURN_IF_ERROR(HostHalf(actions_[i], env));
  KILN_RETURN_IF_ERROR(IssueDeviceSteps());
  for (int i = capture_.first; i <= capture_.last; ++i)
    if (actions_[i].kind == Action::Kind::kToHost) pending_to_host_.push_back(&actions_[i]);
  KILN_RETURN_IF_ERROR(ReadStagedCopies(env));
  for (size_t i = capture_.last + 1; i < actions_.size(); ++i)
    KILN_RETURN_IF_ERROR(HostHalf(actions_[i], env));
  return Finish(env, variables);
}

Result<std::vector<Tensor>> CudaProgram::Finish(cpu::StepEnv& env, VariableStore& variables) {
  KILN_RETURN_IF_ERROR(ReadStagedCopies(env));
  KILN_RETURN_IF_ERROR(device_.Synchronize());
  const Executable& exe = plan_.executable;
  for (auto& [action, value] : assigned_) {
    std::memcpy(value.raw_data(), Staged(*action), value.byte_size());
    variables.Set(action->variable, value);
    variables_->Holds(action->variable, value);
  }
  assigned_.clear();
  return cpu::CopyFetches(exe, env);
}

Result<std::vector<Tensor>> CudaProgram::Run(const std::vector<Tensor>& feeds,
                                             VariableStore& variables,
                                             std::map<std::string, uint64_t>& counters) {
  const Executable& exe = plan_.executable;
  cpu::StepEnv env;
  env.variables = &variables;
  env.counters = &counters;
  env.threads = threads_;
  KILN_RETURN_IF_ERROR(cpu::BindBuffers(exe, host_arena_.get(), feeds, env));
  assigned_.clear();
  pending_to_host_.clear();
  ++runs_;
  if (profile_) return RunProfiled(env, variables);
  if (capture_.capturable) return RunInPhases(env, variables);
  for (const Action& action : actions_) KILN_RETURN_IF_ERROR(Perform(action, env));
  return Finish(env, variables);
}

Result<std::vector<Tensor>> CudaProgram::RunProfiled(cpu::StepEnv& env, VariableStore& variables) {
  // Host steps by the host's clock, the others between two marks on the stream.
  profile_->BeginRun();
  device_.ClearMarks();
  struct Marked {
    size_t step;
    int from, to;
    bool moved;
  };
  std::vector<Marked> marked;
  for (size_t i = 0; i < actions_.size(); ++i) {
    const Action& action = actions_[i];
    if (action.kind == Action::Kind::kHost) {
      // The wait for copies to the host is the device's time, not the step's.
      if (!action.variable_read) KILN_RETURN_IF_ERROR(ReadStagedCopies(env));
      const auto start = std::chrono::steady_clock::now();
      KILN_RETURN_IF_ERROR(Perform(action, env));
      profile_->Add(i, std::chrono::steady_clock::now() - start);
      continue;
    }
    KILN_ASSIGN_OR_RETURN(int from, device_.Mark());
    skipped_upload_ = false;
    KILN_RETURN_IF_ERROR(Perform(action, env));
    KILN_ASSIGN_OR_RETURN(int to, device_.Mark());
    marked.push_back({i, from, to, !skipped_upload_});
  }
  KILN_RETURN_IF_ERROR(device_.Synchronize());
  for (const Marked& m : marked) {
    KILN_ASSIGN_OR_RETURN(double ms, device_.Milliseconds(m.from, m.to));
    profile_->Add(m.step,
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double, std::milli>(ms)),
                  m.moved);
  }
  return Finish(env, variables);
}

}  // namespace kiln::cuda
