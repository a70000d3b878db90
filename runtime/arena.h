// The arena of a loaded plan (runtime/executable.h): one block of host memory for all of its
// intermediate values, allocated once at load. It is mapped from the kernel as anonymous memory:
// zero until written, and resident only where a step has written it, so a plan pays for the
// pages its steps touch, not for a memset of the whole block up front, and an arena larger than
// one tensor may be (kMaxTensorBytes) is fine where the memory budget allows it
// (runtime/memory_budget.h checks it before). Page-aligned, so every buffer offset (a multiple of
// kBufferAlignment) is aligned. A size the system cannot map is kResourceExhausted.
#pragma once

#include <cstdint>
#include <memory>

#include "ir/status.h"

namespace kiln {

Result<std::shared_ptr<uint8_t[]>> AllocateArena(int64_t bytes);

}  // namespace kiln
