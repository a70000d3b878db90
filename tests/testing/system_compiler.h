// Test helper: compiles a source text with the host's C or C++ compiler (`cc` or `c++` on PATH),
// syntax only, with kiln's source root on the include path. It checks that what kiln hands to its
// users' own builds compiles there: the C API header as C99, generated module headers as C++20.
#pragma once

#include <string>

namespace kiln::testing {

struct SourceCheck {
  bool compiler_found = false;  // false: the host has no such compiler (the check did not run)
  bool ok = false;
  std::string diagnostics;  // the compiler's output
};

// Writes `source` to TempPath(file_name) (so it can include other files written there) and
// compiles it: a ".c" file with `cc -std=c99 -pedantic-errors`, anything else with
// `c++ -std=c++20`; both with -Wall -Wextra -Werror.
SourceCheck CheckCompiles(const std::string& file_name, const std::string& source);

}  // namespace kiln::testing
