// CudaProgram's runs (cuda_program.h): each action's host and device halves, step by step or in
// the three phases of a capturable plan (graph_capture.h), the device steps issued, captured or
// replayed, the copies between host and device through the program's pinned staging, and the
// profiled run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "runtime/cpu/parallel_ranges.h"
#include "runtime/cpu/program.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/distributed/all_reduce_message.h"

namespace kiln::cuda {
namespace {

// The tensor the run bound a buffer to (a variable_read pins the value it binds).
const Tensor* PinnedAt(const cpu::StepEnv& env, const void* data) {
  for (const Tensor& t : env.pinned)
    if (t.raw_data() == data) return &t;
  return nullptr;
}

// Bytes between a host tensor and the pinned staging, over the program's threads where they are
// many (a batch of images: one thread's memcpy runs at a fraction of the host's memory bandwidth).
constexpr int64_t kParallelCopyBytes = int64_t{4} << 20;
constexpr int64_t kCopyChunk = int64_t{64} << 10;
void CopyBytes(void* to, const void* from, int64_t bytes, int threads) {
  if (bytes < kParallelCopyBytes || threads < 2) {
    std::memcpy(to, from, static_cast<size_t>(bytes));
    return;
  }
  const int64_t chunks = (bytes + kCopyChunk - 1) / kCopyChunk;
  cpu::ForEachRange(chunks, bytes, threads, [&](int64_t begin, int64_t end) {
    const int64_t first = begin * kCopyChunk, last = std::min(bytes, end * kCopyChunk);
    std::memcpy(static_cast<char*>(to) + first, static_cast<const char*>(from) + first,
                static_cast<size_t>(last - first));
  });
}

}  // namespace

Status CudaProgram::LaunchAll(const Action& action) {
  for (const KernelLaunch& launch : action.kernel->launches)
    KILN_RETURN_IF_ERROR(device_.Launch(*code_, launch, action.operands));
  return OkStatus();
}

Status CudaProgram::AllReduce(const Action& action) {
  const int64_t size = DTypeSize(action.reduced_dtype);
  if (!options_.collectives) {
    for (const ReduceBuffers& b : action.reduced)
      KILN_RETURN_IF_ERROR(device_.CopyOnDevice(b.recv, b.send, b.count * size));
    return OkStatus();
  }
  Communicator& ranks = *options_.communicator;
  const double scale = ScalesOf(action.reduction, ranks.share()).before;
  KILN_RETURN_IF_ERROR(
      options_.collectives->AllReduce(action.reduced, action.reduced_dtype, scale));
  int64_t bytes = 0;
  for (const ReduceBuffers& b : action.reduced) bytes += b.count * size;
  ranks.CountAllReduce(bytes, 0);  // the stream waits for it, not the host
  return OkStatus();
}

Status CudaProgram::HostHalf(const Action& action, cpu::StepEnv& env) {
  const Executable& exe = plan_.executable;
  switch (action.kind) {
    case Action::Kind::kHost:
      // A variable whose device copy holds the store's value needs no host value (it may live on
      // the device only).
      if (!action.variable.empty() && DeviceHolds(action.variable, *env.variables))
        return OkStatus();
      KILN_RETURN_IF_ERROR(action.runner->Run(env));
      // A step that finishes later (a host all-reduce) finishes at once: nothing overlaps it here.
      return action.runner->finishes_later() ? action.runner->Finish(env) : OkStatus();
    case Action::Kind::kToDevice: {
      const BufferDesc& b = exe.buffers[action.buffer];
      if (!action.variable.empty() && DeviceHolds(action.variable, *env.variables)) {
        skipped_upload_ = true;
        return OkStatus();
      }
      if (!env.data[action.buffer])
        return MakeError(ErrorCode::kInternal, "to_device of ", b.tensor,
                         " before anything bound it on the host");
      if (action.variable.empty()) {
        CopyBytes(Staged(action), env.data[action.buffer], b.bytes(), threads_);
        return OkStatus();
      }
      const Tensor* value = PinnedAt(env, env.data[action.buffer]);
      if (!value)
        return MakeError(ErrorCode::kInternal, "to_device of variable '", action.variable,
                         "': its buffer is not bound to a value of the store");
      KILN_ASSIGN_OR_RETURN(
          bool uploaded,
          variables_->Upload(action.variable, env.variables->Version(action.variable), *value));
      skipped_upload_ = !uploaded;
      return OkStatus();
    }
    case Action::Kind::kAssign: {
      // The new value goes into the variable's device copy (the device half); its host twin, bound
      // now for any reader on the host, is read back when the device is done (Finish).
      const BufferDesc& out = exe.buffers[action.buffer];
      variables_->Invalidate(action.variable);
      if (action.deferred) {
        assigned_.push_back({&action, Tensor()});
        return OkStatus();
      }
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
    case Action::Kind::kAllReduce:
      return AllReduce(action);
    case Action::Kind::kCopyOnDevice:
      return device_.CopyOnDevice(address_[action.buffer], address_[action.source],
                                  exe.buffers[action.buffer].bytes());
    case Action::Kind::kAssign: {
      // The new value, then (unless it stays on the device) its copy for the store, read out of
      // staging by Finish.
      const int64_t bytes = exe.buffers[action.buffer].bytes();
      KILN_RETURN_IF_ERROR(action.kernel ? LaunchAll(action)
                                         : device_.CopyOnDevice(address_[action.buffer],
                                                                address_[action.source], bytes));
      if (action.deferred) return OkStatus();
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
    CopyBytes(env.data[action->buffer], Staged(*action), b.bytes(), threads_);
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
  // Step by step until that has once succeeded: what loads lazily (kernels, cuBLASLt's and cuDNN's
  // engines) loads outside a capture, as PyTorch's warm-up does.
  if (!options_.cuda_graphs || !warmed_up_) return issue();
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
  Result<std::vector<Tensor>> out = Finish(env, variables);
  warmed_up_ = warmed_up_ || out.ok();  // the device work ran, not only was issued
  return out;
}

Result<std::vector<Tensor>> CudaProgram::Finish(cpu::StepEnv& env, VariableStore& variables) {
  KILN_RETURN_IF_ERROR(ReadStagedCopies(env));
  KILN_RETURN_IF_ERROR(device_.Synchronize());
  const Executable& exe = plan_.executable;
  for (auto& [action, value] : assigned_) {
    if (action->deferred) {
      KeepOnDevice(*action, variables);
      continue;
    }
    CopyBytes(value.raw_data(), Staged(*action), value.byte_size(), threads_);
    variables.Set(action->variable, value);
    variables_->Holds(action->variable, variables.Version(action->variable));
  }
  assigned_.clear();
  return cpu::CopyFetches(exe, env);
}

void CudaProgram::KeepOnDevice(const Action& assign, VariableStore& store) {
  const std::string& name = assign.variable;
  const TensorType type = plan_.executable.buffers[assign.buffer].type;
  std::weak_ptr<DeviceVariables> copies = variables_;
  store.SetElsewhere(name, variables_.get(), [copies, name, type]() -> Result<Tensor> {
    std::shared_ptr<DeviceVariables> device_copies = copies.lock();
    if (!device_copies)
      return MakeError(ErrorCode::kFailedPrecondition,
                       "its newest value was on a device the session or module has closed");
    return device_copies->ReadBack(name, type);
  });
  variables_->Holds(name, store.Version(name));
}

Result<std::vector<Tensor>> CudaProgram::Run(const std::vector<Tensor>& feeds,
                                             VariableStore& variables,
                                             std::map<std::string, uint64_t>& counters) {
  Result<std::vector<Tensor>> out = RunSteps(feeds, variables, counters);
  if (out.ok()) return out;
  // A failed run may leave work on the stream: wait for it, so that nothing it reads or writes is
  // reused (or freed) under it. A variable whose value lived only on the device and that a device
  // assign of this run may have overwritten keeps what its device copy now holds.
  (void)device_.Synchronize();
  for (auto& [action, value] : assigned_)
    if (action->deferred && variables.HolderOf(action->variable) == variables_.get())
      KeepOnDevice(*action, variables);
  assigned_.clear();
  return out;
}

Result<std::vector<Tensor>> CudaProgram::RunSteps(const std::vector<Tensor>& feeds,
                                                  VariableStore& variables,
                                                  std::map<std::string, uint64_t>& counters) {
  const Executable& exe = plan_.executable;
  cpu::StepEnv env;
  env.variables = &variables;
  env.counters = &counters;
  env.threads = threads_;
  env.communicator = options_.communicator.get();
  KILN_RETURN_IF_ERROR(cpu::BindBuffers(exe, host_arena_.get(), feeds, env));
  assigned_.clear();
  pending_to_host_.clear();
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
  std::chrono::steady_clock::time_point first_mark_host;  // the host's clock at the first mark
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
    if (marked.empty()) first_mark_host = std::chrono::steady_clock::now();
    KILN_ASSIGN_OR_RETURN(int from, device_.Mark());
    skipped_upload_ = false;
    KILN_RETURN_IF_ERROR(Perform(action, env));
    KILN_ASSIGN_OR_RETURN(int to, device_.Mark());
    marked.push_back({i, from, to, !skipped_upload_});
  }
  KILN_RETURN_IF_ERROR(device_.Synchronize());
  auto as_duration = [](double ms) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double, std::milli>(ms));
  };
  for (const Marked& m : marked) {
    KILN_ASSIGN_OR_RETURN(double ms, device_.Milliseconds(m.from, m.to));
    KILN_ASSIGN_OR_RETURN(double since_first, device_.Milliseconds(marked.front().from, m.from));
    profile_->Add(m.step, as_duration(ms), m.moved, first_mark_host + as_duration(since_first));
  }
  return Finish(env, variables);
}

}  // namespace kiln::cuda
