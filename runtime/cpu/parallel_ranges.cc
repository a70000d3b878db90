#include "runtime/cpu/parallel_ranges.h"

#include <omp.h>

#include <algorithm>

namespace kiln::cpu {

void ForEachRange(int64_t count, int64_t work, int threads,
                  const std::function<void(int64_t begin, int64_t end)>& run) {
  const int chunks = static_cast<int>(
      std::min<int64_t>({threads, count, std::max<int64_t>(1, work / kMinWorkPerThread)}));
  if (chunks <= 1) {
    run(0, count);
    return;
  }
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) run(count * c / chunks, count * (c + 1) / chunks);
}

}  // namespace kiln::cpu
