// Checkpoint files (.kckpt): variable name -> tensor, each tensor with a CRC32C of its data and
// the whole file with a trailing CRC32C (ir/checksummed_proto.h). Written to a temporary file,
// fsynced and renamed, so a crash mid-write leaves the previous checkpoint intact.
#pragma once

#include <map>
#include <string>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

inline constexpr int kCheckpointFormatVersion = 1;
inline constexpr int64_t kMaxCheckpointBytes = int64_t{64} << 30;

Status WriteCheckpoint(const std::string& path, const std::map<std::string, Tensor>& variables);
// Refuses empty, truncated, corrupt (file or any tensor checksum), newer-version or malformed
// files.
Result<std::map<std::string, Tensor>> ReadCheckpoint(const std::string& path);

}  // namespace kiln
