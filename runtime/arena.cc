#include "runtime/arena.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "runtime/memory_budget.h"

namespace kiln {

Result<std::shared_ptr<uint8_t[]>> AllocateArena(int64_t bytes) {
  if (bytes < 0) return MakeError(ErrorCode::kInternal, "an arena of ", bytes, " bytes");
  const size_t size = static_cast<size_t>(bytes > 0 ? bytes : 1);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return MakeError(ErrorCode::kResourceExhausted, "cannot map the plan's arena of ",
                     FormatBytes(bytes), ": ", std::strerror(errno));
  // Huge pages where the kernel allows them: a large arena faults in 2 MiB at a time, not 4 KiB.
  if (size >= (size_t{2} << 20)) madvise(p, size, MADV_HUGEPAGE);
  return std::shared_ptr<uint8_t[]>(static_cast<uint8_t*>(p),
                                    [size](uint8_t* q) { munmap(q, size); });
}

}  // namespace kiln
