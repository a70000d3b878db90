// CRC32C (Castagnoli), the checksum of kiln's binary graph, checkpoint and module files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kiln {

// Extends `crc` (0 to start) over `data`.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);
inline uint32_t Crc32c(std::string_view s) { return Crc32c(s.data(), s.size()); }

}  // namespace kiln
