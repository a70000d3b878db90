// The fuzz targets' folder for an ONNX model's external data: an empty temporary folder made once
// per process, so that every external-data path is checked (absolute, "..", missing file) but
// nothing outside it can be read.
#pragma once

#include <stdlib.h>

#include <string>

namespace kiln::fuzz {

inline const std::string& EmptyModelDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/kiln_fuzz_onnx_XXXXXX";
    const char* made = mkdtemp(tmpl);
    return std::string(made ? made : "/nonexistent-kiln-fuzz-dir");
  }();
  return dir;
}

}  // namespace kiln::fuzz
