// Binary protobuf files that end with a CRC32C of everything before it, written as field 15
// (fixed32) so the file is still a valid message of its type. A file truncated anywhere, even at
// a field boundary, or with any flipped bit, is refused. Used by .kgraph and .kckpt files.
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <limits>
#include <string>

#include "ir/status.h"

namespace kiln {

// The most bytes one such file can hold: protobuf's limit for one message.
inline constexpr int64_t kMaxChecksummedFileBytes = std::numeric_limits<int>::max();

// Deterministic serialization (map entries in key order) plus the checksum trailer. The message
// must not set field 15 itself. A file over `max_bytes`, or over the 2 GiB protobuf can hold in
// one message, is refused naming `what` ("kiln graph"): protobuf would otherwise serialize nothing
// and the file would lose everything.
Result<std::string> SerializeWithChecksum(const google::protobuf::MessageLite& message,
                                          const std::string& what, int64_t max_bytes);
// `payload` followed by its checksum trailer (what SerializeWithChecksum appends).
std::string AppendChecksumTrailer(std::string payload);
// Verifies the trailer and parses. Errors name `origin` and `what` ("kiln graph", "checkpoint").
Status ParseWithChecksum(const std::string& bytes, const std::string& origin,
                         const std::string& what, google::protobuf::MessageLite* message);

}  // namespace kiln
