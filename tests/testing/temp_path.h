// Test helper: file paths in a per-process temporary folder, removed when the tests exit.
#pragma once

#include <string>

namespace kiln::testing {

std::string TempPath(const std::string& name);

}  // namespace kiln::testing
