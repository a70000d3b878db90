// Checkpoint files (.kckpt): variable name -> tensor. Written to a temporary file, fsynced and
// renamed, so a crash mid-write leaves the previous checkpoint intact.
//
// Format 2 (written since 2026-11; any size, each tensor at most kMaxTensorBytes):
//   "KILNCKP2"                                   8 bytes
//   each variable's bytes (row-major, little-endian), starting at a multiple of 64, zero padding
//   between them
//   the index: a CheckpointIndexProto (proto/kiln.proto) naming each variable's dtype, shape,
//   offset, size and CRC32C, ending with its own CRC32C
//   footer: the index's offset and size (u64 little-endian each), the CRC32C of those 16 bytes
//   (u32), "KCK2"                               24 bytes
// The tensors are written from and read into their own memory (no copy of the whole file), and a
// reader that wants some variables reads only those. Format 1 (one CheckpointProto holding every
// tensor, at most 2 GiB) is still read.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

inline constexpr int kCheckpointFormatVersion = 2;

Status WriteCheckpoint(const std::string& path, const std::map<std::string, Tensor>& variables);
// Refuses empty, truncated, corrupt (index, footer or any tensor checksum), newer-version or
// malformed files.
Result<std::map<std::string, Tensor>> ReadCheckpoint(const std::string& path);
// The same for a checkpoint's bytes, read from `path` (which names it in errors).
Result<std::map<std::string, Tensor>> ParseCheckpoint(const std::string& bytes,
                                                      const std::string& path);
// Reads a checkpoint for the variables `expected` (name -> type): every one must be in the file
// with exactly its dtype and shape, or nothing is returned; entries for other names are ignored
// (e.g. optimizer slots when restoring an inference graph) and, in format 2, not read.
Result<std::map<std::string, Tensor>> ReadCheckpointFor(
    const std::string& path, const std::map<std::string, TensorType>& expected);

}  // namespace kiln
