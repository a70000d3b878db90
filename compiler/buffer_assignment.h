// Buffer assignment: fixes the arena offset of every arena buffer of an Executable from the
// buffers' lifetimes (the steps between the one that writes a buffer and the last one that reads
// it; fetched buffers live to the end). Buffers whose lifetimes do not overlap share bytes;
// placement is first fit, largest buffers first, 64-byte aligned. The resulting arena_bytes is the
// peak memory of the plan's intermediate values, known before anything runs.
#pragma once

#include "runtime/executable.h"

namespace kiln::compiler {

struct MemoryStats {
  int64_t arena_bytes = 0;     // after reuse
  int64_t unshared_bytes = 0;  // the sum of all arena buffers (no reuse)
  int64_t constant_bytes = 0;
};

MemoryStats AssignBuffers(Executable& exe);

}  // namespace kiln::compiler
