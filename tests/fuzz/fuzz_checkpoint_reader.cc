// libFuzzer target for the checkpoint reader (runtime/checkpoint.h): any bytes must parse into
// variables or give an error, never a crash, a hang or a sanitizer report. The bytes are read
// as they are and again as the payload of a file with a correct checksum trailer
// (ir/checksummed_proto.h), so that mutations reach the parser and the tensor checks behind the
// file's checksum instead of stopping at it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/checksummed_proto.h"
#include "runtime/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)kiln::ParseCheckpoint(bytes, "fuzz.kckpt");
  (void)kiln::ParseCheckpoint(kiln::AppendChecksumTrailer(bytes), "fuzz.kckpt");
  return 0;
}
