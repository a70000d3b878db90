// libFuzzer target for the ONNX importer: any bytes, read as a serialized ModelProto, must give a
// kiln graph or an error, never a crash, a hang or a sanitizer report. External data is resolved
// against an empty temporary folder, so every external-data path is checked (absolute, "..",
// missing file) but nothing outside it can be read.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/onnx/import.h"
#include "tests/fuzz/empty_model_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)kiln::ImportOnnxFromBytes(bytes, kiln::fuzz::EmptyModelDir(), "fuzz.onnx");
  return 0;
}
