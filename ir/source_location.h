// Where in the user's C++ source a node was built, recorded on every node by the builder.
//
// Equivalent to C++20 std::source_location (file and line of the call site when used as a default
// argument), but built on __builtin_FILE/__builtin_LINE so that the clang 14 used for the
// sanitizer and libFuzzer builds, whose libstdc++ pairing lacks std::source_location, compiles it.
// File names are relative to the repository root (CMake passes -fmacro-prefix-map).
#pragma once

#include <string>

namespace kiln {

struct SourceLocation {
  const char* file = "";
  int line = 0;

  static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                          int line = __builtin_LINE()) {
    return SourceLocation{file, line};
  }
  // "models/mlp.cc:42", or "" when unknown.
  std::string ToString() const {
    return (file && *file) ? std::string(file) + ":" + std::to_string(line) : std::string();
  }
};

}  // namespace kiln
