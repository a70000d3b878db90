#include "runtime/module/cpu_features.h"

#include <algorithm>

namespace kiln {
namespace {

struct Feature {
  const char* name;
  bool present;
};

// __builtin_cpu_supports takes a literal, hence one entry per feature.
const std::vector<Feature>& Features() {
  static const std::vector<Feature> features = [] {
    __builtin_cpu_init();
    return std::vector<Feature>{
        {"sse4.2", static_cast<bool>(__builtin_cpu_supports("sse4.2"))},
        {"popcnt", static_cast<bool>(__builtin_cpu_supports("popcnt"))},
        {"avx", static_cast<bool>(__builtin_cpu_supports("avx"))},
        {"avx2", static_cast<bool>(__builtin_cpu_supports("avx2"))},
        {"fma", static_cast<bool>(__builtin_cpu_supports("fma"))},
        {"bmi", static_cast<bool>(__builtin_cpu_supports("bmi"))},
        {"bmi2", static_cast<bool>(__builtin_cpu_supports("bmi2"))},
        {"avx512f", static_cast<bool>(__builtin_cpu_supports("avx512f"))},
        {"avx512bw", static_cast<bool>(__builtin_cpu_supports("avx512bw"))},
        {"avx512dq", static_cast<bool>(__builtin_cpu_supports("avx512dq"))},
        {"avx512vl", static_cast<bool>(__builtin_cpu_supports("avx512vl"))},
        {"avx512vnni", static_cast<bool>(__builtin_cpu_supports("avx512vnni"))},
        {"avx512bf16", static_cast<bool>(__builtin_cpu_supports("avx512bf16"))},
    };
  }();
  return features;
}

}  // namespace

const std::vector<std::string>& KnownCpuFeatures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Feature& f : Features()) v.push_back(f.name);
    return v;
  }();
  return names;
}

bool HostHasCpuFeature(const std::string& name) {
  for (const Feature& f : Features())
    if (name == f.name) return f.present;
  return false;
}

Status CheckHostCpuFeatures(const std::vector<std::string>& required, const std::string& origin) {
  std::string missing, unknown;
  for (const std::string& name : required) {
    const std::vector<std::string>& known = KnownCpuFeatures();
    if (std::find(known.begin(), known.end(), name) == known.end())
      unknown += (unknown.empty() ? "" : ", ") + name;
    else if (!HostHasCpuFeature(name))
      missing += (missing.empty() ? "" : ", ") + name;
  }
  if (!unknown.empty())
    return MakeError(ErrorCode::kFailedPrecondition, origin,
                     ": the module needs CPU features this runtime does not know: ", unknown);
  if (!missing.empty())
    return MakeError(ErrorCode::kFailedPrecondition, origin,
                     ": the module was compiled for a CPU with features this one lacks: ", missing,
                     "; compile it on (or for) this machine");
  return OkStatus();
}

}  // namespace kiln
