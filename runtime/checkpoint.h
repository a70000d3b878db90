// Checkpoint files (.kckpt): variable name -> tensor, each tensor with a CRC32C of its data and
// the whole file with a trailing CRC32C (ir/checksummed_proto.h). Written to a temporary file,
// fsynced and renamed, so a crash mid-write leaves the previous checkpoint intact.
#pragma once

#include <map>
#include <string>

#include "ir/checksummed_proto.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

inline constexpr int kCheckpointFormatVersion = 1;
// Protobuf's limit for one message (ir/checksummed_proto.h): what a checkpoint file can hold.
inline constexpr int64_t kMaxCheckpointBytes = kMaxChecksummedFileBytes;

Status WriteCheckpoint(const std::string& path, const std::map<std::string, Tensor>& variables);
// Refuses empty, truncated, corrupt (file or any tensor checksum), newer-version or malformed
// files.
Result<std::map<std::string, Tensor>> ReadCheckpoint(const std::string& path);
// The same for a checkpoint's bytes, read from `path` (which names it in errors).
Result<std::map<std::string, Tensor>> ParseCheckpoint(const std::string& bytes,
                                                      const std::string& path);
// Reads a checkpoint for the variables `expected` (name -> type): every one must be in the file
// with exactly its dtype and shape, or nothing is returned; entries for other names are ignored
// (e.g. optimizer slots when restoring an inference graph).
Result<std::map<std::string, Tensor>> ReadCheckpointFor(
    const std::string& path, const std::map<std::string, TensorType>& expected);

}  // namespace kiln
