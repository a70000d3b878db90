// The C API (kiln_c.h) over kiln::Module. Every entry point catches everything: errors and
// exceptions become a kiln_status, never an exception crossing into C.
#include "runtime/c_api/kiln_c.h"

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/dtype.h"
#include "runtime/distributed/communicator.h"
#include "runtime/module/module.h"
#include "runtime/plugins.h"

struct kiln_status {
  kiln_code code;
  std::string message;
};

struct kiln_module {
  std::unique_ptr<kiln::Module> module;
  std::shared_ptr<kiln::Communicator> ranks;  // a data-parallel run's (or null)
};

namespace kiln {
namespace {

// kiln_dtype mirrors DType value for value.
static_assert(KILN_DTYPE_INVALID == static_cast<int>(DType::kInvalid));
static_assert(KILN_DTYPE_F32 == static_cast<int>(DType::kF32));
static_assert(KILN_DTYPE_F64 == static_cast<int>(DType::kF64));
static_assert(KILN_DTYPE_F16 == static_cast<int>(DType::kF16));
static_assert(KILN_DTYPE_BF16 == static_cast<int>(DType::kBF16));
static_assert(KILN_DTYPE_I8 == static_cast<int>(DType::kI8));
static_assert(KILN_DTYPE_U8 == static_cast<int>(DType::kU8));
static_assert(KILN_DTYPE_I32 == static_cast<int>(DType::kI32));
static_assert(KILN_DTYPE_I64 == static_cast<int>(DType::kI64));
static_assert(KILN_DTYPE_BOOL == static_cast<int>(DType::kBool));
static_assert(KILN_DTYPE_I16 == static_cast<int>(DType::kI16));
static_assert(KILN_DTYPE_U16 == static_cast<int>(DType::kU16));
static_assert(KILN_DTYPE_U32 == static_cast<int>(DType::kU32));
static_assert(KILN_DTYPE_U64 == static_cast<int>(DType::kU64));
// kiln_code is ErrorCode + 1 (0 is KILN_OK).
static_assert(KILN_INVALID_ARGUMENT == static_cast<int>(ErrorCode::kInvalidArgument) + 1);
static_assert(KILN_NOT_FOUND == static_cast<int>(ErrorCode::kNotFound) + 1);
static_assert(KILN_ALREADY_EXISTS == static_cast<int>(ErrorCode::kAlreadyExists) + 1);
static_assert(KILN_FAILED_PRECONDITION == static_cast<int>(ErrorCode::kFailedPrecondition) + 1);
static_assert(KILN_DATA_LOSS == static_cast<int>(ErrorCode::kDataLoss) + 1);
static_assert(KILN_UNIMPLEMENTED == static_cast<int>(ErrorCode::kUnimplemented) + 1);
static_assert(KILN_OUT_OF_RANGE == static_cast<int>(ErrorCode::kOutOfRange) + 1);
static_assert(KILN_RESOURCE_EXHAUSTED == static_cast<int>(ErrorCode::kResourceExhausted) + 1);
static_assert(KILN_INTERNAL == static_cast<int>(ErrorCode::kInternal) + 1);

// Handed out when a status itself cannot be allocated; kiln_status_free leaves it alone.
kiln_status out_of_memory{KILN_RESOURCE_EXHAUSTED, "out of memory"};

// Sets *status (when there is one) to a new status; returns `code`. Never throws.
int Report(kiln_status** status, kiln_code code, std::string_view message) noexcept {
  if (status) {
    try {
      *status = new kiln_status{code, std::string(message)};
    } catch (...) {
      *status = &out_of_memory;
    }
  }
  return code;
}

// Runs `body` (returning a Status) and reports its outcome: 0, or the error's code.
template <typename Body>
int Guard(kiln_status** status, Body&& body) noexcept {
  try {
    Status s = body();
    if (s.ok()) {
      if (status) *status = nullptr;
      return KILN_OK;
    }
    return Report(status, static_cast<kiln_code>(static_cast<int>(s.error().code()) + 1),
                  s.error().message());
  } catch (const std::bad_alloc&) {
    return Report(status, KILN_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return Report(status, KILN_INTERNAL, e.what());
  } catch (...) {
    return Report(status, KILN_INTERNAL, "unknown exception");
  }
}

Error NullArgument(const char* function, const char* argument) {
  return MakeError(ErrorCode::kInvalidArgument, function, ": ", argument, " is NULL");
}

const std::vector<ModuleTensorSpec>* Specs(const kiln_module* m, bool input) {
  if (!m) return nullptr;
  return input ? &m->module->inputs() : &m->module->outputs();
}

int Count(const kiln_module* m, bool input) {
  const std::vector<ModuleTensorSpec>* specs = Specs(m, input);
  return specs ? static_cast<int>(specs->size()) : -1;
}

const ModuleTensorSpec* Spec(const kiln_module* m, bool input, int i) {
  const std::vector<ModuleTensorSpec>* specs = Specs(m, input);
  if (!specs || i < 0 || i >= static_cast<int>(specs->size())) return nullptr;
  return &(*specs)[i];
}

int64_t Bytes(const ModuleTensorSpec& s) {
  return s.type.shape.NumElements() * DTypeSize(s.type.dtype);
}

int Find(const kiln_module* m, bool input, const char* name) {
  const std::vector<ModuleTensorSpec>* specs = Specs(m, input);
  if (!specs || !name) return -1;
  for (size_t i = 0; i < specs->size(); ++i)
    if ((*specs)[i].name == name) return static_cast<int>(i);
  return -1;
}

int64_t Dim(const kiln_module* m, bool input, int i, int d) {
  const ModuleTensorSpec* s = Spec(m, input, i);
  if (!s || d < 0 || d >= s->type.shape.rank()) return -1;
  return s->type.shape.dim(d);
}

// Checks the caller's buffers for `specs` ("input"/"output" in messages): none NULL unless empty,
// sizes (when given) equal to (inputs) or at least (outputs) the tensors' sizes.
template <typename Pointer>
Status CheckBuffers(const std::vector<ModuleTensorSpec>& specs, const char* kind,
                    const Pointer* buffers, const int64_t* sizes) {
  if (!buffers && !specs.empty())
    return MakeError(ErrorCode::kInvalidArgument, "kiln_module_run: ", kind,
                     "s is NULL but the module has ", specs.size(), " ", kind, "(s)");
  bool exact = std::string_view(kind) == "input";
  for (size_t i = 0; i < specs.size(); ++i) {
    int64_t bytes = Bytes(specs[i]);
    std::string what = std::string(kind) + " " + std::to_string(i) + " ('" + specs[i].name + "', " +
                       specs[i].type.ToString() + ", " + std::to_string(bytes) + " bytes)";
    if (!buffers[i] && bytes > 0)
      return MakeError(ErrorCode::kInvalidArgument, "kiln_module_run: the buffer of ", what,
                       " is NULL");
    if (sizes && (exact ? sizes[i] != bytes : sizes[i] < bytes))
      return MakeError(ErrorCode::kInvalidArgument, "kiln_module_run: the buffer of ", what,
                       " has ", sizes[i], " bytes");
  }
  return OkStatus();
}

Status Run(kiln_module* m, const void* const* inputs, const int64_t* input_bytes,
           void* const* outputs, const int64_t* output_bytes) {
  if (!m) return NullArgument("kiln_module_run", "module");
  const std::vector<ModuleTensorSpec>& in = m->module->inputs();
  const std::vector<ModuleTensorSpec>& out = m->module->outputs();
  KILN_RETURN_IF_ERROR(CheckBuffers(in, "input", inputs, input_bytes));
  KILN_RETURN_IF_ERROR(CheckBuffers(out, "output", outputs, output_bytes));
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < in.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(in[i].type.dtype, in[i].type.shape));
    if (t.byte_size() > 0) std::memcpy(t.raw_data(), inputs[i], t.byte_size());
    feeds.emplace_back(in[i].name, std::move(t));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> results, m->module->Run(feeds));
  if (results.size() != out.size())
    return MakeError(ErrorCode::kInternal, "kiln_module_run: the module returned ", results.size(),
                     " outputs for a signature of ", out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (results[i].byte_size() != Bytes(out[i]))
      return MakeError(ErrorCode::kInternal, "kiln_module_run: output '", out[i].name, "' is ",
                       results[i].byte_size(), " bytes, not ", Bytes(out[i]));
    if (results[i].byte_size() > 0)
      std::memcpy(outputs[i], results[i].raw_data(), results[i].byte_size());
  }
  return OkStatus();
}

// The loads' shared body: `ranks` null, or a data-parallel run's (whose variables become rank
// 0's once loaded).
kiln_module* LoadModule(const char* function, const char* path, const char* backend, int threads,
                        int64_t memory_limit, double timeout_seconds, bool distributed,
                        kiln_status** status) {
  kiln_module* loaded = nullptr;
  Guard(status, [&]() -> Status {
    if (!path) return NullArgument(function, "path");
    if (threads < 0)
      return MakeError(ErrorCode::kInvalidArgument, function,
                       ": threads must be 0 (every core) or more, got ", threads);
    if (memory_limit < 0)
      return MakeError(ErrorCode::kInvalidArgument, function,
                       ": memory_limit must be 0 (what the process can get) or more bytes, got ",
                       memory_limit);
    std::shared_ptr<Communicator> ranks;
    if (distributed) {
      if (!(timeout_seconds > 0))
        return MakeError(ErrorCode::kInvalidArgument, function,
                         ": timeout_seconds must be positive, got ", timeout_seconds);
      KILN_ASSIGN_OR_RETURN(ranks, OpenMpiCommunicator(timeout_seconds));
    }
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<Module> module,
                          Module::Load(path, ModuleOptions{.threads = threads,
                                                           .backend = backend ? backend : "",
                                                           .memory_limit = memory_limit,
                                                           .distributed = ranks}));
    KILN_RETURN_IF_ERROR(module->BroadcastVariables());
    loaded = new kiln_module{std::move(module), std::move(ranks)};
    return OkStatus();
  });
  return loaded;
}

}  // namespace
}  // namespace kiln

using kiln::Spec;

extern "C" {

const char* kiln_status_message(const kiln_status* status) {
  return status ? status->message.c_str() : "";
}

kiln_code kiln_status_code(const kiln_status* status) { return status ? status->code : KILN_OK; }

void kiln_status_free(kiln_status* status) {
  if (status != &kiln::out_of_memory) delete status;
}

const char* kiln_dtype_name(kiln_dtype dtype) {
  if (dtype <= KILN_DTYPE_INVALID || dtype > KILN_DTYPE_U64) return nullptr;
  // DTypeName's views are of string literals, hence NUL-terminated.
  return kiln::DTypeName(static_cast<kiln::DType>(dtype)).data();
}

int kiln_dtype_size(kiln_dtype dtype) {
  if (dtype <= KILN_DTYPE_INVALID || dtype > KILN_DTYPE_U64) return -1;
  return kiln::DTypeSize(static_cast<kiln::DType>(dtype));
}

kiln_module* kiln_module_load(const char* path, int threads, kiln_status** status) {
  return kiln_module_load_on(path, nullptr, threads, status);
}

kiln_module* kiln_module_load_on(const char* path, const char* backend, int threads,
                                 kiln_status** status) {
  return kiln_module_load_within(path, backend, threads, 0, status);
}

kiln_module* kiln_module_load_within(const char* path, const char* backend, int threads,
                                     int64_t memory_limit, kiln_status** status) {
  return kiln::LoadModule("kiln_module_load", path, backend, threads, memory_limit, 0,
                          /*distributed=*/false, status);
}

kiln_module* kiln_module_load_distributed(const char* path, const char* backend, int threads,
                                          double timeout_seconds, kiln_status** status) {
  return kiln::LoadModule("kiln_module_load_distributed", path, backend, threads, 0,
                          timeout_seconds, /*distributed=*/true, status);
}

int kiln_module_rank(const kiln_module* m) {
  if (!m) return -1;
  return m->ranks ? m->ranks->rank() : 0;
}

int kiln_module_ranks(const kiln_module* m) {
  if (!m) return -1;
  return m->ranks ? m->ranks->size() : 1;
}

int kiln_module_set_share(kiln_module* m, double share, kiln_status** status) {
  return kiln::Guard(status, [&]() -> kiln::Status {
    if (!m) return kiln::NullArgument("kiln_module_set_share", "module");
    if (!(share > 0 && share <= 1))
      return kiln::MakeError(kiln::ErrorCode::kInvalidArgument,
                             "kiln_module_set_share: a share is in (0, 1], got ", share);
    if (!m->ranks)
      return kiln::MakeError(kiln::ErrorCode::kFailedPrecondition,
                             "kiln_module_set_share: the module was not loaded as a rank of a "
                             "data-parallel run (kiln_module_load_distributed)");
    m->ranks->set_share(share);
    return kiln::OkStatus();
  });
}

void kiln_module_free(kiln_module* module) { delete module; }

int kiln_load_plugin(const char* path, kiln_status** status) {
  return kiln::Guard(status, [&]() -> kiln::Status {
    if (!path) return kiln::NullArgument("kiln_load_plugin", "path");
    return kiln::LoadPlugin(path);
  });
}

int kiln_module_num_inputs(const kiln_module* m) { return kiln::Count(m, true); }
int kiln_module_num_outputs(const kiln_module* m) { return kiln::Count(m, false); }

const char* kiln_module_input_name(const kiln_module* m, int i) {
  const kiln::ModuleTensorSpec* s = Spec(m, true, i);
  return s ? s->name.c_str() : nullptr;
}
const char* kiln_module_output_name(const kiln_module* m, int i) {
  const kiln::ModuleTensorSpec* s = Spec(m, false, i);
  return s ? s->name.c_str() : nullptr;
}

kiln_dtype kiln_module_input_dtype(const kiln_module* m, int i) {
  const kiln::ModuleTensorSpec* s = Spec(m, true, i);
  return s ? static_cast<kiln_dtype>(s->type.dtype) : KILN_DTYPE_INVALID;
}
kiln_dtype kiln_module_output_dtype(const kiln_module* m, int i) {
  const kiln::ModuleTensorSpec* s = Spec(m, false, i);
  return s ? static_cast<kiln_dtype>(s->type.dtype) : KILN_DTYPE_INVALID;
}

int kiln_module_input_rank(const kiln_module* m, int i) {
  const kiln::ModuleTensorSpec* s = Spec(m, true, i);
  return s ? s->type.shape.rank() : -1;
}
int kiln_module_output_rank(const kiln_module* m, int i) {
  const kiln::ModuleTensorSpec* s = Spec(m, false, i);
  return s ? s->type.shape.rank() : -1;
}

int64_t kiln_module_input_dim(const kiln_module* m, int i, int d) {
  return kiln::Dim(m, true, i, d);
}
int64_t kiln_module_output_dim(const kiln_module* m, int i, int d) {
  return kiln::Dim(m, false, i, d);
}

int64_t kiln_module_input_bytes(const kiln_module* m, int i) {
  const kiln::ModuleTensorSpec* s = Spec(m, true, i);
  return s ? kiln::Bytes(*s) : -1;
}
int64_t kiln_module_output_bytes(const kiln_module* m, int i) {
  const kiln::ModuleTensorSpec* s = Spec(m, false, i);
  return s ? kiln::Bytes(*s) : -1;
}

int kiln_module_find_input(const kiln_module* m, const char* name) {
  return kiln::Find(m, true, name);
}
int kiln_module_find_output(const kiln_module* m, const char* name) {
  return kiln::Find(m, false, name);
}

int kiln_module_run(kiln_module* m, const void* const* inputs, void* const* outputs,
                    kiln_status** status) {
  return kiln::Guard(status, [&] { return kiln::Run(m, inputs, nullptr, outputs, nullptr); });
}

int kiln_module_run_checked(kiln_module* m, const void* const* inputs, const int64_t* input_bytes,
                            void* const* outputs, const int64_t* output_bytes,
                            kiln_status** status) {
  return kiln::Guard(status,
                     [&] { return kiln::Run(m, inputs, input_bytes, outputs, output_bytes); });
}

int kiln_module_save_checkpoint(const kiln_module* m, const char* path, kiln_status** status) {
  return kiln::Guard(status, [&]() -> kiln::Status {
    if (!m) return kiln::NullArgument("kiln_module_save_checkpoint", "module");
    if (!path) return kiln::NullArgument("kiln_module_save_checkpoint", "path");
    return m->module->SaveCheckpoint(path);
  });
}

int kiln_module_restore_checkpoint(kiln_module* m, const char* path, kiln_status** status) {
  return kiln::Guard(status, [&]() -> kiln::Status {
    if (!m) return kiln::NullArgument("kiln_module_restore_checkpoint", "module");
    if (!path) return kiln::NullArgument("kiln_module_restore_checkpoint", "path");
    return m->module->RestoreCheckpoint(path);
  });
}

}  // extern "C"
