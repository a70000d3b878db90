// The x86-64 CPU features a compiled module may require, and whether this host has them. Names are
// LLVM's ("avx2", "avx512bf16"), the way the compiler reports the features it generated code for;
// the compiler records those of its features that appear in KnownCpuFeatures() in the module, and
// the loader refuses a module that needs one this host lacks (or one this runtime does not know).
#pragma once

#include <string>
#include <vector>

#include "ir/status.h"

namespace kiln {

const std::vector<std::string>& KnownCpuFeatures();
// False for a feature not in KnownCpuFeatures().
bool HostHasCpuFeature(const std::string& name);
// OK when the host has every feature in `required`; otherwise an error naming `origin` and all the
// missing features at once.
Status CheckHostCpuFeatures(const std::vector<std::string>& required, const std::string& origin);

}  // namespace kiln
