// libFuzzer target for the checkpoint reader (runtime/checkpoint.h): any bytes must parse into
// variables or give an error, never a crash, a hang or a sanitizer report. The bytes are read
// as they are, again as the payload of a format 1 file with a correct checksum trailer
// (ir/checksummed_proto.h), and again as a format 2 file whose header, index checksum and footer
// are made right (runtime/checkpoint_format.h), so that mutations reach the parsers, the index's
// entries and the tensor checks behind the checksums instead of stopping at them.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/checksummed_proto.h"
#include "runtime/checkpoint.h"
#include "runtime/checkpoint_format.h"

namespace {

// `bytes` as format 2: its header set; its index where its footer says (moved inside the file
// when the footer says nothing usable), the index's trailer and the footer recomputed.
std::string AsFormat2(std::string bytes) {
  const auto size = static_cast<int64_t>(bytes.size());
  if (size < kiln::kCheckpointHeaderBytes + kiln::kCheckpointFooterBytes) return bytes;
  bytes.replace(0, kiln::kCheckpointHeaderBytes, kiln::kCheckpointHeader,
                kiln::kCheckpointHeaderBytes);
  const uint64_t index_end = static_cast<uint64_t>(size - kiln::kCheckpointFooterBytes);
  uint64_t index_offset = 0, index_size = 0;
  // A damaged footer still gives an offset: its first 8 bytes.
  kiln::ReadCheckpointFooter(bytes.data() + index_end, &index_offset, &index_size);
  if (index_offset == 0)
    for (int i = 7; i >= 0; --i)
      index_offset = (index_offset << 8) | static_cast<unsigned char>(bytes[index_end + i]);
  const uint64_t room = index_end - kiln::kCheckpointHeaderBytes;
  index_offset = kiln::kCheckpointHeaderBytes + index_offset % (room + 1);
  // The index as a format 2 writer leaves it ends with its own trailer: replaced, not kept.
  std::string index = bytes.substr(index_offset, index_end - index_offset);
  if (index.size() >= 5) index.resize(index.size() - 5);
  index = kiln::AppendChecksumTrailer(index);
  return bytes.substr(0, index_offset) + index + kiln::CheckpointFooter(index_offset, index.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)kiln::ParseCheckpoint(bytes, "fuzz.kckpt");
  (void)kiln::ParseCheckpoint(kiln::AppendChecksumTrailer(bytes), "fuzz.kckpt");
  (void)kiln::ParseCheckpoint(AsFormat2(bytes), "fuzz.kckpt");
  return 0;
}
