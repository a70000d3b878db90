#include "runtime/cpu/program.h"

#include <omp.h>

#include <cstring>

#include "runtime/arena.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/cpu/layouts.h"
#include "runtime/invariant_steps.h"

namespace kiln::cpu {
namespace {

// OpenMP's default team on this thread is `threads` for as long as it lives, then what it was
// (the caller's own parallel regions keep theirs).
class DefaultTeam {
 public:
  explicit DefaultTeam(int threads) : before_(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~DefaultTeam() { omp_set_num_threads(before_); }
  DefaultTeam(const DefaultTeam&) = delete;
  DefaultTeam& operator=(const DefaultTeam&) = delete;

 private:
  const int before_;
};

// A variable buffer points at its variable's storage only once a variable_read or assign step
// binds it at run time (BindBuffers leaves it null): a step that reads one, or a fetch of one,
// before any such step would read through a null pointer.
Status CheckVariableBinding(const Executable& exe) {
  std::vector<bool> bound(exe.buffers.size(), false);
  const auto unbound = [&](int id) {
    return exe.buffers[id].kind == BufferDesc::Kind::kVariable && !bound[id];
  };
  for (const Step& step : exe.steps) {
    for (int id : step.inputs)
      if (unbound(id))
        return MakeError(ErrorCode::kInternal, "step ", step.callee, " reads variable buffer %", id,
                         " (", exe.buffers[id].tensor,
                         ") before a variable_read or assign step binds it");
    if (step.kind == Step::Kind::kLibrary &&
        (step.callee == "variable_read" || step.callee == "assign"))
      for (int id : step.outputs) bound[id] = true;
  }
  for (int id : exe.fetches)
    if (unbound(id))
      return MakeError(ErrorCode::kInternal, "fetch of variable buffer %", id, " (",
                       exe.buffers[id].tensor, "), which no variable_read or assign step binds");
  return OkStatus();
}

}  // namespace

bool IsCopyAcross(const Step& step) {
  return step.kind == Step::Kind::kLibrary &&
         (step.callee == "to_device" || step.callee == "to_host");
}

Status CheckExecutable(const Executable& exe) {
  for (size_t i = 0; i < exe.buffers.size(); ++i) {
    const BufferDesc& b = exe.buffers[i];
    if (!b.type.shape.IsFullyKnown())
      return MakeError(ErrorCode::kInternal, "buffer %", i, " (", b.tensor, ") has type ",
                       b.type.ToString(), ": a compiled plan needs fully known shapes");
    bool in_range = b.kind == BufferDesc::Kind::kVariable ? true
                    : b.kind == BufferDesc::Kind::kArena
                        ? b.offset >= 0 && b.offset % kBufferAlignment == 0 &&
                              b.offset + b.bytes() <= exe.arena_bytes
                    : b.kind == BufferDesc::Kind::kConstant
                        ? b.index >= 0 && b.index < static_cast<int>(exe.constants.size()) &&
                              exe.constants[b.index].byte_size() == b.bytes()
                        : b.index >= 0 && b.index < static_cast<int>(exe.feeds.size());
    if (!in_range)
      return MakeError(ErrorCode::kInternal, "buffer %", i, " (", b.tensor,
                       ") lies outside the arena, its constant or the feeds");
  }
  for (int id : exe.fetches)
    if (id < 0 || id >= static_cast<int>(exe.buffers.size()))
      return MakeError(ErrorCode::kInternal, "fetch of buffer %", id, " of ", exe.buffers.size());
  for (const Step& step : exe.steps) {
    for (const std::vector<int>* ids : {&step.inputs, &step.outputs})
      for (int id : *ids)
        if (id < 0 || id >= static_cast<int>(exe.buffers.size()))
          return MakeError(ErrorCode::kInternal, "step ", step.callee, " uses buffer %", id, " of ",
                           exe.buffers.size());
    const bool binds_variable = step.kind == Step::Kind::kLibrary &&
                                (step.callee == "variable_read" || step.callee == "assign");
    if (IsCopyAcross(step)) {
      if (step.inputs.size() != 1 || step.outputs != step.inputs)
        return MakeError(ErrorCode::kInternal, "step ", step.callee,
                         " must have one buffer as its input and output");
      continue;
    }
    for (int id : step.outputs) {
      const BufferDesc::Kind kind = exe.buffers[id].kind;
      if (binds_variable ? kind != BufferDesc::Kind::kVariable : kind != BufferDesc::Kind::kArena)
        return MakeError(ErrorCode::kInternal, "step ", step.callee, " writes buffer %", id,
                         binds_variable ? ", which is not a variable buffer"
                                        : ", which is a constant, a feed or a variable");
    }
  }
  KILN_RETURN_IF_ERROR(CheckVariableBinding(exe));
  KILN_RETURN_IF_ERROR(CheckInvariantSteps(exe));
  return CheckLayouts(exe);
}

Status BindBuffers(const Executable& exe, uint8_t* arena, const std::vector<Tensor>& feeds,
                   StepEnv& env, const std::vector<uint64_t>* feed_versions) {
  if (feeds.size() != exe.feeds.size())
    return MakeError(ErrorCode::kInvalidArgument, "the compiled plan takes ", exe.feeds.size(),
                     " feeds, got ", feeds.size());
  env.executable = &exe;
  env.data.assign(exe.buffers.size(), nullptr);
  env.versions.assign(exe.buffers.size(), 0);
  for (size_t i = 0; i < exe.buffers.size(); ++i) {
    const BufferDesc& b = exe.buffers[i];
    switch (b.kind) {
      case BufferDesc::Kind::kArena:
        env.data[i] = arena + b.offset;
        break;
      case BufferDesc::Kind::kConstant:
        // Steps never write constants or feeds (checked at load).
        env.data[i] = const_cast<void*>(exe.constants[b.index].raw_data());
        env.versions[i] = VariableStore::kConstantVersion;
        break;
      case BufferDesc::Kind::kVariable:
        env.data[i] = nullptr;  // bound by its variable_read step
        break;
      case BufferDesc::Kind::kFeed: {
        const Tensor& feed = feeds[b.index];
        if (feed.dtype() != b.type.dtype || feed.shape() != b.type.shape)
          return MakeError(ErrorCode::kInvalidArgument, "feed '", exe.feeds[b.index].ToString(),
                           "' is ", DTypeName(feed.dtype()), feed.shape().ToString(),
                           " but the compiled plan expects ", b.type.ToString());
        env.data[i] = const_cast<void*>(feed.raw_data());
        if (feed_versions) env.versions[i] = (*feed_versions)[b.index];
        break;
      }
    }
  }
  return OkStatus();
}

std::vector<Tensor> CopyFetches(const Executable& exe, const StepEnv& env) {
  std::vector<Tensor> fetched;
  for (int id : exe.fetches) {
    const BufferDesc& b = exe.buffers[id];
    Tensor t = Tensor::Uninitialized(b.type.dtype, b.type.shape);
    std::memcpy(t.raw_data(), env.data[id], b.bytes());
    fetched.push_back(std::move(t));
  }
  return fetched;
}

Result<std::unique_ptr<Program>> Program::Load(CompiledPlan plan, int threads, int64_t memory_limit,
                                               const VariableStore* variables) {
  std::unique_ptr<Program> program(new Program());
  program->threads_ = threads < 1 ? 1 : threads;
  // Libraries that size their work by OpenMP's default team (oneDNN, as its primitives are made
  // and run) get the plan's threads, not every core: two processes of one thread each must not
  // each start teams of all cores (their barriers would wait on each other's descheduled threads).
  const DefaultTeam team(program->threads_);
  program->plan_ = std::move(plan);  // steps keep references into it
  const Executable& exe = program->plan_.executable;
  KILN_RETURN_IF_ERROR(CheckExecutable(exe));
  PlanMemory& memory = program->memory_;
  memory = MeasurePlan(exe, variables);
  const MemoryBudget budget = HostBudget(memory_limit);
  KILN_RETURN_IF_ERROR(CheckFits(memory, budget, "the plan"));
  for (const Step& step : exe.steps)
    if (step.on_device || IsCopyAcross(step))
      return MakeError(ErrorCode::kInvalidArgument, "step ", step.callee,
                       " belongs to a CUDA plan, which the cpu backend does not run");
  for (const Step& step : exe.steps) {
    Result<std::unique_ptr<StepRunner>> runner =
        step.kind == Step::Kind::kKernel ? MakeKernelStep(step, exe, program->plan_.kernels.get())
        : step.kind == Step::Kind::kLibrary ? MakeLibraryStep(step, exe)
                                            : MakeReferenceStep(step, exe);
    KILN_RETURN_IF_ERROR(runner.status());
    program->steps_.push_back(std::move(*runner));
  }
  for (const std::unique_ptr<StepRunner>& step : program->steps_)
    memory.workspace += step->kept_bytes();
  KILN_RETURN_IF_ERROR(CheckFits(memory, budget, "the plan"));
  program->profile_ = StepProfile::FromEnvironment(exe);
  program->invariant_.resize(exe.steps.size());
  for (size_t s = 0; s < exe.steps.size(); ++s)
    if (exe.steps[s].invariant)
      program->invariant_[s] = InvariantState{InvariantRoots(exe, static_cast<int>(s)), {}, false};
  KILN_ASSIGN_OR_RETURN(program->arena_, AllocateArena(exe.arena_bytes));
  // Control-flow ops run their bodies as compiled plans of their own where the compiler is linked.
  program->compile_bodies_ = GetPlanCompiler() != nullptr;  // executors made when a body asks
  program->memory_limit_ = memory_limit;
  return program;
}

Result<std::vector<Tensor>> Program::Run(const std::vector<Tensor>& feeds, VariableStore& variables,
                                         std::map<std::string, uint64_t>& counters,
                                         const std::vector<uint64_t>* feed_versions) {
  const Executable& exe = plan_.executable;
  StepEnv env;
  env.variables = &variables;
  env.counters = &counters;
  env.communicator = communicator_.get();
  env.threads = threads_;
  const DefaultTeam team(threads_);  // as at load
  if (compile_bodies_)
    env.bodies = [this](const Graph& body) -> Executor* {
      std::unique_ptr<Executor>& executor = bodies_[&body];
      if (!executor)
        executor = std::make_unique<CpuExecutor>(threads_, memory_limit_, communicator_);
      return executor.get();
    };
  KILN_RETURN_IF_ERROR(BindBuffers(exe, arena_.get(), feeds, env, feed_versions));
  if (profile_) profile_->BeginRun();
  std::vector<size_t> in_flight;  // steps whose work goes on after their Run (collectives)
  Status status = OkStatus();
  for (size_t i = 0; i < steps_.size() && status.ok(); ++i) {
    status = FinishTouched(i, in_flight, env);
    if (status.ok()) status = RunStep(i, env);
    if (status.ok() && steps_[i]->finishes_later()) in_flight.push_back(i);
  }
  // Everything started is finished, also after a failure (its messages must not outlive the run).
  for (size_t p : in_flight) {
    Status finished = steps_[p]->Finish(env);
    if (status.ok()) status = finished;
  }
  KILN_RETURN_IF_ERROR(status);
  return CopyFetches(exe, env);
}

namespace {

// Whether buffer `a`'s memory and buffer `b`'s overlap in this run.
bool Overlap(const StepEnv& env, const Executable& exe, int a, int b) {
  const int n = static_cast<int>(env.data.size());
  if (a < 0 || b < 0 || a >= n || b >= n) return false;
  const char* pa = static_cast<const char*>(env.data[a]);
  const char* pb = static_cast<const char*>(env.data[b]);
  return pa && pb && pa < pb + exe.buffers[b].bytes() && pb < pa + exe.buffers[a].bytes();
}

}  // namespace

Status Program::FinishTouched(size_t i, std::vector<size_t>& in_flight, StepEnv& env) {
  if (in_flight.empty()) return OkStatus();
  const Executable& exe = plan_.executable;
  const Step& step = exe.steps[i];
  // The last in-flight step whose outputs step i reads or overwrites: it and every one started
  // before it finish (in the order they started).
  size_t last = 0;
  for (size_t k = 0; k < in_flight.size(); ++k)
    for (int out : exe.steps[in_flight[k]].outputs)
      for (const std::vector<int>* ids : {&step.inputs, &step.outputs})
        for (int id : *ids)
          if (Overlap(env, exe, out, id)) last = k + 1;
  for (size_t k = 0; k < last; ++k) KILN_RETURN_IF_ERROR(steps_[in_flight[k]]->Finish(env));
  in_flight.erase(in_flight.begin(), in_flight.begin() + static_cast<std::ptrdiff_t>(last));
  return OkStatus();
}

bool Program::InvariantState::Current(const StepEnv& env,
                                      std::vector<std::pair<uint64_t, const void*>>& key) const {
  key.clear();
  bool known = true;
  for (int id : roots) {
    known = known && env.version(id) != 0;
    key.push_back({env.version(id), env.data[id]});
  }
  return ran && known && key == kept;
}

Status Program::RunStep(size_t i, StepEnv& env) {
  std::vector<std::pair<uint64_t, const void*>> key;
  std::optional<InvariantState>& invariant = invariant_[i];
  if (invariant && invariant->Current(env, key)) return OkStatus();  // its results are current
  if (invariant) invariant->ran = false;                             // until it succeeds
  if (profile_) {
    const auto start = std::chrono::steady_clock::now();
    KILN_RETURN_IF_ERROR(steps_[i]->Run(env));
    profile_->Add(i, std::chrono::steady_clock::now() - start);
  } else {
    KILN_RETURN_IF_ERROR(steps_[i]->Run(env));
  }
  if (invariant) invariant->kept = std::move(key), invariant->ran = true;
  return OkStatus();
}

}  // namespace kiln::cpu
