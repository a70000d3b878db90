// libFuzzer target for the .npy reader (ir/io/npy.h): any bytes must give a tensor or an error,
// never a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kiln::ParseNpy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  return 0;
}
