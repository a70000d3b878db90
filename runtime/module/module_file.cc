#include "runtime/module/module_file.h"

#include <cstdio>

#include "ir/checksummed_proto.h"
#include "ir/file_util.h"
#include "ir/plugin_uses.h"
#include "ir/serialize.h"
#include "ir/utf8.h"
#include "proto/kiln.pb.h"
#include "runtime/executable_proto.h"

namespace kiln {
namespace {

// FNV-1a, 64 bits: the build id names a build; the CRC32C trailer guards against damage.
std::string Digest(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

void SpecToProto(const ModuleTensorSpec& spec, proto::ModuleProto::TensorSpec* p) {
  p->set_name(spec.name);
  p->set_dtype(DTypeToProto(spec.type.dtype));
  *p->mutable_shape() = ShapeToProto(spec.type.shape);
}

Result<ModuleTensorSpec> SpecFromProto(const proto::ModuleProto::TensorSpec& p,
                                       const std::string& what) {
  ModuleTensorSpec spec;
  spec.name = p.name();
  if (spec.name.empty()) return MakeError(ErrorCode::kInvalidArgument, what, " has no name");
  Result<DType> dtype = DTypeFromProto(p.dtype());
  if (!dtype.ok()) return dtype.error().WithContext(what + " '" + spec.name + "'");
  if (IsContainer(*dtype))
    return MakeError(ErrorCode::kInvalidArgument, what, " '", spec.name, "' has dtype ",
                     DTypeName(*dtype), "; a module's inputs and outputs are tensors");
  Result<Shape> shape = ShapeFromProto(p.shape());
  if (!shape.ok()) return shape.error().WithContext(what + " '" + spec.name + "'");
  if (!shape->IsFullyKnown())
    return MakeError(ErrorCode::kInvalidArgument, what, " '", spec.name, "' has shape ",
                     shape->ToString(), "; a module's shapes are all known");
  spec.type = {*dtype, *shape};
  return spec;
}

proto::ModuleProto ToProto(const ModuleFile& m) {
  proto::ModuleProto p;
  p.set_format_version(m.format_version);
  p.set_target(m.target);
  p.set_cpu(m.cpu);
  for (const std::string& f : m.cpu_features) p.add_cpu_features(f);
  p.set_build_id(m.build_id);
  p.set_producer(m.producer);
  p.set_precision(m.precision);
  p.set_source(EscapeInvalidUtf8(m.source));  // a model's path: any bytes
  for (const ModuleTensorSpec& s : m.inputs) SpecToProto(s, p.add_inputs());
  for (const ModuleTensorSpec& s : m.outputs) SpecToProto(s, p.add_outputs());
  for (const std::string& t : m.targets) p.add_targets(t);
  *p.mutable_executable() = ExecutableToProto(m.executable);
  for (const auto& [name, value] : m.variables) {
    proto::ModuleProto::Variable* v = p.add_variables();
    v->set_name(name);
    *v->mutable_value() = TensorToProto(value);
  }
  p.set_kernels(m.kernels);
  for (const auto& [sm, code] : m.device_code) {
    proto::ModuleProto::DeviceCode* c = p.add_device_code();
    c->set_sm(sm);
    c->set_ptx(code.ptx);
    c->set_cubin(code.cubin);
  }
  std::vector<std::string> ops;
  for (const proto::StepProto& step : p.executable().steps())
    if (step.has_node()) ops.push_back(step.node().op());
  WritePluginUses(PluginUsesOf(ops), p.mutable_plugins());
  return p;
}

}  // namespace

Result<std::string> SerializeModule(ModuleFile module) {
  module.build_id.clear();
  KILN_ASSIGN_OR_RETURN(std::string unsigned_bytes,
                        SerializeWithChecksum(ToProto(module), "kiln module", kMaxModuleBytes));
  module.build_id = Digest(unsigned_bytes);  // deterministic bytes
  return SerializeWithChecksum(ToProto(module), "kiln module", kMaxModuleBytes);
}

Status WriteModuleFile(const std::string& path, const ModuleFile& module) {
  Result<std::string> bytes = SerializeModule(module);
  if (!bytes.ok()) return bytes.error().WithContext(path + ": not written");
  return WriteFileAtomically(path, *bytes);
}

Result<ModuleFile> ParseModule(const std::string& bytes, const std::string& origin) {
  proto::ModuleProto p;
  KILN_RETURN_IF_ERROR(ParseWithChecksum(bytes, origin, "kiln module", &p));
  auto fail = [&origin](auto&&... parts) {
    return MakeError(ErrorCode::kInvalidArgument, origin, ": ", parts...);
  };
  if (p.format_version() > kModuleFormatVersion)
    return MakeError(ErrorCode::kFailedPrecondition, origin, ": module format version ",
                     p.format_version(), " is newer than this runtime supports (",
                     kModuleFormatVersion, "); rebuild it with this kiln or update the runtime");
  if (p.format_version() < 1) return fail("missing module format version");
  KILN_RETURN_IF_ERROR(CheckPluginsLoaded(ReadPluginUses(p.plugins()), origin));
  ModuleFile m;
  m.format_version = p.format_version();
  m.target = p.target();
  m.cpu = p.cpu();
  m.cpu_features.assign(p.cpu_features().begin(), p.cpu_features().end());
  m.build_id = p.build_id();
  m.producer = p.producer();
  m.precision = p.precision();
  m.source = p.source();
  for (const auto& s : p.inputs()) {
    Result<ModuleTensorSpec> spec = SpecFromProto(s, "input");
    if (!spec.ok()) return spec.error().WithContext(origin);
    m.inputs.push_back(std::move(*spec));
  }
  for (const auto& s : p.outputs()) {
    Result<ModuleTensorSpec> spec = SpecFromProto(s, "output");
    if (!spec.ok()) return spec.error().WithContext(origin);
    m.outputs.push_back(std::move(*spec));
  }
  m.targets.assign(p.targets().begin(), p.targets().end());
  Result<Executable> exe = ExecutableFromProto(p.executable());
  if (!exe.ok()) return exe.error().WithContext(origin + ": its plan");
  m.executable = std::move(*exe);
  if (m.format_version < kFirstSignedModuleFormat && m.target != "cuda" &&
      m.executable.CountSteps(Step::Kind::kKernel) > 0)
    return MakeError(ErrorCode::kFailedPrecondition, origin, ": module format version ",
                     m.format_version,
                     " predates the kernel-step signatures this runtime checks; recompile it with "
                     "`kiln compile`");
  for (const auto& v : p.variables()) {
    Result<Tensor> value = TensorFromProto(v.value());
    if (!value.ok()) return value.error().WithContext(origin + ": variable '" + v.name() + "'");
    if (v.name().empty()) return fail("a variable has no name");
    if (!m.variables.emplace(v.name(), std::move(*value)).second)
      return fail("variable '", v.name(), "' appears twice");
  }
  m.kernels = p.kernels();
  for (const auto& code : p.device_code()) {
    if (code.sm() <= 0 || code.ptx().empty() ||
        !m.device_code.emplace(code.sm(), ModuleDeviceCode{code.ptx(), code.cubin()}).second)
      return fail("device code for sm_", code.sm(), " is invalid, has no PTX or appears twice");
  }
  if (m.target == "cuda" && !m.executable.device_kernels.empty() && m.device_code.empty())
    return fail("a cuda module with device kernels but no device code");
  // The signature must agree with the plan it describes.
  if (m.inputs.size() != m.executable.feeds.size())
    return fail("the signature has ", m.inputs.size(), " inputs but the plan binds ",
                m.executable.feeds.size(), " feeds");
  if (m.outputs.size() != m.executable.fetches.size())
    return fail("the signature has ", m.outputs.size(), " outputs but the plan fetches ",
                m.executable.fetches.size());
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    int b = m.executable.fetches[i];
    if (b < 0 || b >= static_cast<int>(m.executable.buffers.size()))
      return fail("output '", m.outputs[i].name, "' refers to buffer ", b, " of ",
                  m.executable.buffers.size());
    if (!(m.executable.buffers[b].type == m.outputs[i].type))
      return fail("output '", m.outputs[i].name, "' is ", m.outputs[i].type.ToString(),
                  " in the signature but ", m.executable.buffers[b].type.ToString(),
                  " in the plan");
  }
  for (const BufferDesc& b : m.executable.buffers) {
    if (b.kind != BufferDesc::Kind::kFeed) continue;
    if (b.index < 0 || b.index >= static_cast<int>(m.inputs.size()))
      return fail("a feed buffer refers to input ", b.index, " of ", m.inputs.size());
    if (!(b.type == m.inputs[b.index].type))
      return fail("input '", m.inputs[b.index].name, "' is ", m.inputs[b.index].type.ToString(),
                  " in the signature but ", b.type.ToString(), " in the plan");
  }
  return m;
}

Result<ModuleFile> ReadModuleFile(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path, kMaxModuleBytes));
  return ParseModule(bytes, path);
}

Result<SelectedDeviceCode> SelectDeviceCode(const std::map<int, ModuleDeviceCode>& device_code,
                                            int gpu_sm, const std::string& gpu) {
  SelectedDeviceCode best;
  for (const auto& [sm, code] : device_code)  // ascending: the last fit is the highest
    if (!code.cubin.empty() && sm / 10 == gpu_sm / 10 && sm <= gpu_sm)
      best = {sm, true, &code.cubin};
  if (best.code) return best;
  for (const auto& [sm, code] : device_code)
    if (sm <= gpu_sm) best = {sm, false, &code.ptx};
  if (best.code) return best;
  std::string archs;
  for (const auto& [sm, code] : device_code)
    archs += (archs.empty() ? "sm_" : ", sm_") + std::to_string(sm);
  return MakeError(ErrorCode::kFailedPrecondition, "the module has code for ",
                   archs.empty() ? "no architecture" : archs, " only, which ", gpu, " (sm_", gpu_sm,
                   ") cannot run");
}

}  // namespace kiln
