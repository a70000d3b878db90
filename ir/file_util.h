// Reading and writing whole files safely: size limits on read, and atomic writes (temporary file,
// fsync, rename) so that a crash never leaves a half-written file in place of a good one.
#pragma once

#include <cstdint>
#include <string>

#include "ir/status.h"

namespace kiln {

// Reads a file; refuses (kResourceExhausted) files larger than `max_bytes`.
Result<std::string> ReadFileToString(const std::string& path, int64_t max_bytes);
// Writes `path` atomically: PATH.tmp.<pid>, fsync, rename over PATH. First removes what earlier
// writes of PATH that were killed before their rename left behind: files PATH.tmp.<pid> in PATH's
// folder whose process is gone (never another pattern, never one a live process may still write).
Status WriteFileAtomically(const std::string& path, const std::string& contents);
// "model.kgraph.txt" -> true when the path ends with `suffix`.
bool EndsWith(const std::string& text, const std::string& suffix);

}  // namespace kiln
