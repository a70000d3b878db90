// UTF-8 validity of the names and strings kiln's files keep in protobuf `string` fields. Protobuf
// refuses to parse such a field that is not valid UTF-8 (though it serializes one, with a logged
// error), so a graph or checkpoint holding one could be saved but never loaded again: the verifier
// (ir/verifier.cc) and the checkpoint writer refuse them instead.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

// The offset of the first byte of `s` that does not begin a valid UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF, no truncated sequence), or -1 when all of
// `s` is valid.
int64_t FirstInvalidUtf8(std::string_view s);

// `s` with each byte that does not begin a valid UTF-8 sequence written as "\xNN": for fields that
// only inform (where a node was built or imported from, a model's path), which a file keeps
// readable rather than refusing.
std::string EscapeInvalidUtf8(std::string_view s);

}  // namespace kiln
