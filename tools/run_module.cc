#include "tools/run_module.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "runtime/module/module.h"
#include "tools/distributed_flags.h"

namespace kiln::cli {

int RunModuleFile(const Command& cmd, const Flags& flags, const std::string& path) {
  Result<int64_t> threads = ParseCount("threads", flags.Get("threads", "0"), 0);
  if (!threads.ok()) return UsageError(cmd, threads.error().message());
  Result<int64_t> memory_limit = ParseMemoryLimit(flags);
  if (!memory_limit.ok()) return UsageError(cmd, memory_limit.error().message());
  Result<Ranks> ranks = RanksFromFlags(flags, flags.Get("backend"));
  if (!ranks.ok()) {
    if (ranks.error().code() == ErrorCode::kInvalidArgument)
      return UsageError(cmd, ranks.error().message());
    return Fail(cmd, ranks.error());
  }
  Communicator* const comm = ranks->comm.get();
  // A rank that fails ends the others (each would otherwise wait for it until the timeout).
  auto fail = [&](const Error& error) {
    const int code = Fail(cmd, error);
    if (comm) comm->Abort(code);
    return code;
  };
  Result<std::unique_ptr<Module>> module =
      Module::Load(path, ModuleOptions{.threads = static_cast<int>(*threads),
                                       .backend = flags.Get("backend"),
                                       .memory_limit = *memory_limit,
                                       .distributed = ranks->comm});
  if (!module.ok()) return fail(module.error());
  if (Status s = (*module)->BroadcastVariables(); !s.ok()) return fail(s.error());
  std::vector<std::string> input_specs;
  for (const std::string& spec : flags.GetAll("input")) input_specs.push_back(ForRank(spec, comm));
  Result<std::vector<std::pair<std::string, Tensor>>> inputs = LoadInputs(input_specs);
  if (!inputs.ok()) return fail(inputs.error());

  const std::vector<ModuleTensorSpec>& outputs = (*module)->outputs();
  std::vector<std::string> names = flags.GetAll("fetch");
  std::vector<size_t> picked;
  if (names.empty()) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      names.push_back(outputs[i].name);
      picked.push_back(i);
    }
  }
  for (size_t n = 0; picked.size() < names.size(); ++n) {
    size_t i = 0;
    while (i < outputs.size() && outputs[i].name != names[n]) ++i;
    if (i == outputs.size()) {
      std::string all;
      for (const ModuleTensorSpec& o : outputs) all += (all.empty() ? "" : ", ") + o.name;
      return fail(MakeError(ErrorCode::kInvalidArgument, path, ": '", names[n],
                            "' is not an output of the module (its outputs: ",
                            all.empty() ? "none" : all, "); compile it with --fetch ", names[n]));
    }
    picked.push_back(i);
  }
  Result<int64_t> repeat = ParseCount("repeat", flags.Get("repeat", "0"), 0);
  if (!repeat.ok()) return UsageError(cmd, repeat.error().message());
  Result<std::vector<Tensor>> results = (*module)->Run(*inputs);
  if (!results.ok()) return fail(results.error());
  if (*repeat > 0) {
    // Timed runs after the first (which loads code and warms caches): inputs in, outputs out.
    std::vector<double> ms;
    for (int64_t r = 0; r < *repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      results = (*module)->Run(*inputs);
      if (!results.ok()) return fail(results.error());
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(ms.begin(), ms.end());
    if (!comm || comm->rank() == 0)
      std::fprintf(stderr, "timed runs: %zu, median_ms: %.4f, min_ms: %.4f\n", ms.size(),
                   ms[ms.size() / 2], ms[0]);
  }
  // Under --distributed rank 0 alone prints or writes the outputs, unless --out names a folder
  // per rank ("{rank}" in it).
  const std::string out = flags.Has("out") ? flags.Get("out") : "";
  if (comm && comm->rank() != 0 && out.find("{rank}") == std::string::npos) return 0;
  std::vector<Tensor> chosen;
  for (size_t i : picked) chosen.push_back((*results)[i]);
  return EmitOutputsTo(cmd, ForRank(out, comm), names, chosen);
}

int DescribeModuleFile(const Command& cmd, const std::string& path) {
  Result<ModuleFile> file = ReadModuleFile(path);
  if (!file.ok()) return Fail(cmd, file.error());
  const ModuleFile& m = *file;
  std::printf(
      "module %s\n  format %d, target %s, precision %s, build %s\n  produced by %s from %s\n",
      path.c_str(), m.format_version, m.target.c_str(), m.precision.c_str(), m.build_id.c_str(),
      m.producer.c_str(), m.source.empty() ? "?" : m.source.c_str());
  std::string features;
  for (const std::string& f : m.cpu_features) features += " " + f;
  std::printf("  cpu %s, needs:%s\n", m.cpu.empty() ? "(no generated code)" : m.cpu.c_str(),
              features.empty() ? " nothing" : features.c_str());
  for (const ModuleTensorSpec& s : m.inputs)
    std::printf("  input  %s: %s\n", s.name.c_str(), s.type.ToString().c_str());
  for (const ModuleTensorSpec& s : m.outputs)
    std::printf("  output %s: %s\n", s.name.c_str(), s.type.ToString().c_str());
  for (const std::string& t : m.targets)
    std::printf("  target %s (run by every call)\n", t.c_str());
  int64_t variable_bytes = 0;
  for (const auto& [name, value] : m.variables) variable_bytes += value.byte_size();
  for (const auto& [sm, code] : m.device_code)
    std::printf("  device code sm_%d: %zu bytes of PTX, %zu bytes of cubin\n", sm, code.ptx.size(),
                code.cubin.size());
  std::printf("  %zu variables (%lld bytes), %zu steps, arena %lld bytes, code %zu bytes\n",
              m.variables.size(), static_cast<long long>(variable_bytes), m.executable.steps.size(),
              static_cast<long long>(m.executable.arena_bytes), m.kernels.size());
  return 0;
}

}  // namespace kiln::cli
