#include "runtime/module/module.h"

#include <optional>

#include "ir/file_util.h"
#include "runtime/checkpoint.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/cpu/program.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/distributed/broadcast_variables.h"
#include "runtime/module/cpu_features.h"
#include "runtime/module/kernel_object.h"

namespace kiln {
namespace {

// "x" and "x:0" name the same tensor.
std::string CanonicalName(const std::string& name) {
  return name.find(':') == std::string::npos ? name + ":0" : name;
}

}  // namespace

Module::Module() = default;
Module::~Module() = default;

Result<std::unique_ptr<Module>> Module::Load(const std::string& path,
                                             const ModuleOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path, kMaxModuleBytes));
  return LoadFromBytes(bytes, path, options);
}

Result<std::unique_ptr<Module>> Module::LoadFromBytes(const std::string& bytes,
                                                      const std::string& origin,
                                                      const ModuleOptions& options) {
  KILN_ASSIGN_OR_RETURN(ModuleFile file, ParseModule(bytes, origin));
  const std::string backend =
      options.backend.empty() || options.backend == "auto" ? file.target : options.backend;
  const bool runs = file.target == "cpu"    ? backend == "cpu"
                    : file.target == "cuda" ? backend == "cuda" || backend == "cuda-sim"
                                            : false;
  if (!runs)
    return MakeError(ErrorCode::kFailedPrecondition, origin,
                     ": the module was compiled for target '", file.target,
                     "', which this runtime cannot run on backend '", backend,
                     "' (cpu modules run on cpu; cuda modules on cuda and cuda-sim)");
  std::unique_ptr<Module> module(new Module());
  module->origin_ = origin;
  module->distributed_ = options.distributed;
  int threads = options.threads > 0 ? options.threads : cpu::AvailableCores();
  CompiledPlan plan;
  plan.executable = std::move(file.executable);  // the program keeps the plan
  if (file.target == "cuda") {
    // On cuda-sim the memory limit is the simulated device's size; on a GPU, the host's budget.
    Result<std::unique_ptr<cuda::Device>> device =
        cuda::OpenDevice(backend, threads, backend == "cuda-sim" ? options.memory_limit : 0);
    if (!device.ok())
      return device.error().WithContext(origin + ": a module of target 'cuda' on backend '" +
                                        backend + "'");
    module->device_ = std::move(*device);
  }
  // A cubin the driver refuses (one from a toolkit newer than the driver) falls back to the PTX of
  // the same architecture, which the driver JIT-compiles.
  std::optional<CompiledPlan> with_ptx;
  if (backend == "cuda") {
    if (!plan.executable.device_kernels.empty()) {
      Result<SelectedDeviceCode> code = SelectDeviceCode(
          file.device_code, module->device_->Architecture(), module->device_->Describe());
      if (!code.ok()) return code.error().WithContext(origin);
      if (code->cubin) {
        with_ptx = plan;
        with_ptx->device_code = file.device_code.at(code->sm).ptx;
      }
      plan.device_code = *code->code;
    }
  } else {
    KILN_RETURN_IF_ERROR(CheckHostCpuFeatures(file.cpu_features, origin));
    if (!file.kernels.empty()) {
      KILN_ASSIGN_OR_RETURN(plan.kernels, OpenKernelObject(file.kernels, origin));
    }
  }
  for (auto& [name, value] : file.variables) module->variables_.Set(name, std::move(value));
  file.variables.clear();  // now in the store
  if (backend == "cpu") {
    Result<std::unique_ptr<cpu::Program>> program =
        cpu::Program::Load(std::move(plan), threads, options.memory_limit, &module->variables_);
    if (!program.ok()) return program.error().WithContext(origin + ": its plan does not load");
    module->program_ = std::move(*program);
    module->program_->set_communicator(options.distributed);
  } else {
    cuda::ProgramOptions program_options = cuda::ProgramOptions::FromEnvironment();
    program_options.memory_limit = backend == "cuda-sim" ? 0 : options.memory_limit;
    program_options.stored_variables = &module->variables_;
    if (options.distributed) {
      program_options.communicator = options.distributed;
      Result<std::shared_ptr<cuda::DeviceCollectives>> collectives =
          module->device_->OpenCollectives(options.distributed);
      if (!collectives.ok())
        return collectives.error().WithContext(origin + ": its collectives among " +
                                               std::to_string(options.distributed->size()) +
                                               " ranks");
      program_options.collectives = std::move(*collectives);
    }
    Result<std::unique_ptr<cuda::CudaProgram>> program = cuda::CudaProgram::Load(
        std::move(plan), *module->device_, threads, nullptr, program_options);
    if (!program.ok() && with_ptx) {
      const Error from_cubin = program.error();
      program = cuda::CudaProgram::Load(std::move(*with_ptx), *module->device_, threads, nullptr,
                                        program_options);
      if (!program.ok())
        return program.error().WithContext(origin + ": its plan does not load (from its cubin: " +
                                           from_cubin.message() + "; from its PTX)");
    }
    if (!program.ok()) return program.error().WithContext(origin + ": its plan does not load");
    module->cuda_program_ = std::move(*program);
  }
  module->file_ = std::move(file);
  return module;
}

Result<std::vector<Tensor>> Module::Run(const std::vector<std::pair<std::string, Tensor>>& feeds) {
  const std::vector<ModuleTensorSpec>& inputs = file_.inputs;
  std::vector<Tensor> bound(inputs.size());
  std::vector<bool> given(inputs.size(), false);
  for (const auto& [name, tensor] : feeds) {
    size_t i = 0;
    while (i < inputs.size() && CanonicalName(inputs[i].name) != CanonicalName(name)) ++i;
    if (i == inputs.size()) {
      std::string names;
      for (const ModuleTensorSpec& s : inputs) names += (names.empty() ? "" : ", ") + s.name;
      return MakeError(ErrorCode::kInvalidArgument, origin_, ": the module has no input '", name,
                       "' (its inputs: ", names.empty() ? "none" : names, ")");
    }
    if (given[i])
      return MakeError(ErrorCode::kInvalidArgument, origin_, ": input '", name, "' is fed twice");
    if (tensor.dtype() != inputs[i].type.dtype || tensor.shape() != inputs[i].type.shape)
      return MakeError(ErrorCode::kInvalidArgument, origin_, ": input '", inputs[i].name, "' is ",
                       DTypeName(tensor.dtype()), tensor.shape().ToString(), " but the module ",
                       "was compiled for ", inputs[i].type.ToString());
    bound[i] = tensor;
    given[i] = true;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!given[i])
      return MakeError(ErrorCode::kInvalidArgument, origin_, ": missing input '", inputs[i].name,
                       "' (", inputs[i].type.ToString(), ")");
  Result<std::vector<Tensor>> out = program_ ? program_->Run(bound, variables_, counters_)
                                             : cuda_program_->Run(bound, variables_, counters_);
  if (!out.ok()) return out.error().WithContext(origin_);
  return out;
}

Status Module::SaveCheckpoint(const std::string& path) const {
  KILN_RETURN_IF_ERROR(variables_.MaterializeAll());
  return WriteCheckpoint(path, variables_.values());
}

Status Module::BroadcastVariables(int root) {
  if (!distributed_ || distributed_->size() == 1) return OkStatus();
  KILN_RETURN_IF_ERROR(variables_.MaterializeAll());
  return kiln::BroadcastVariables(*distributed_, variables_, root);
}

Status Module::RestoreCheckpoint(const std::string& path) {
  std::map<std::string, TensorType> expected;
  KILN_RETURN_IF_ERROR(variables_.MaterializeAll());
  for (const auto& [name, value] : variables_.values())
    expected[name] = TensorType{value.dtype(), value.shape()};
  KILN_ASSIGN_OR_RETURN(auto restored, ReadCheckpointFor(path, expected));
  for (auto& [name, tensor] : restored) variables_.Set(name, std::move(tensor));
  return OkStatus();
}

}  // namespace kiln
