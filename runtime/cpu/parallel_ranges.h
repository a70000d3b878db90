// Splitting a loop over the session's threads (OpenMP's pool, shared with oneDNN): [0, count) in
// contiguous ranges, one per thread, but only as many ranges as give each at least
// kMinWorkPerThread units of `work` (below that, one thread does it all: starting threads would
// cost more than it saves). Used by generated kernel steps (rows, output elements) and by the
// simulated CUDA device (blocks, GPU threads).
#pragma once

#include <cstdint>
#include <functional>

namespace kiln::cpu {

inline constexpr int64_t kMinWorkPerThread = int64_t{1} << 15;

// Calls run(begin, end) for each range, concurrently when there are several.
void ForEachRange(int64_t count, int64_t work, int threads,
                  const std::function<void(int64_t begin, int64_t end)>& run);

}  // namespace kiln::cpu
