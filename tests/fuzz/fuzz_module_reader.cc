// libFuzzer target for the compiled-module reader (runtime/module/module_file.h): any bytes must
// parse into a ModuleFile or give an error, never a crash, a hang or a sanitizer report. Only the
// reader is fuzzed: the embedded machine code is never loaded (a module is code, to be trusted
// like a shared library; its checksum guards against damage, not against an attacker). The bytes
// are also read as the payload of a file with a correct checksum trailer, so that mutations
// reach the plan, tensor and manifest checks behind the checksum.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/checksummed_proto.h"
#include "runtime/module/module_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)kiln::ParseModule(bytes, "fuzz.kmod");
  (void)kiln::ParseModule(kiln::AppendChecksumTrailer(bytes), "fuzz.kmod");
  return 0;
}
