// The framing of checkpoint format 2 (the layout is in runtime/checkpoint.h): its header, and its
// footer, which locates the index. Shared by the reader and writer, and by the tests and the fuzz
// target that build files by hand.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

// "KILNCKP2": the first bytes of a format 2 file.
inline constexpr char kCheckpointHeader[8] = {'K', 'I', 'L', 'N', 'C', 'K', 'P', '2'};
inline constexpr int64_t kCheckpointHeaderBytes = sizeof(kCheckpointHeader);
inline constexpr int64_t kCheckpointFooterBytes = 24;

// The footer of a file whose index (`index_size` bytes) starts at `index_offset`: both as u64
// little-endian, the CRC32C of those 16 bytes (u32), "KCK2".
std::string CheckpointFooter(uint64_t index_offset, uint64_t index_size);

// The index's offset and size from a footer of kCheckpointFooterBytes; false when its magic or
// its checksum is wrong.
bool ReadCheckpointFooter(const char* footer, uint64_t* index_offset, uint64_t* index_size);

}  // namespace kiln
