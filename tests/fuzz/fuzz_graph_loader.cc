// libFuzzer target for the model loader: any bytes, as a binary or a text graph, must give a
// graph or an error, never a crash, a hang or a sanitizer report. As a binary graph the bytes are
// also read as the payload of a file with a correct checksum trailer (ir/checksummed_proto.h), so
// that mutations reach the parser behind the checksum.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/checksummed_proto.h"
#include "ir/serialize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)kiln::GraphFromBinary(bytes, "fuzz.kgraph");
  (void)kiln::GraphFromBinary(kiln::AppendChecksumTrailer(bytes), "fuzz.kgraph");
  (void)kiln::GraphFromText(bytes, "fuzz.kgraph.txt");
  return 0;
}
