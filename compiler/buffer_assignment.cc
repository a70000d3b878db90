#include "compiler/buffer_assignment.h"

#include <algorithm>
#include <numeric>

namespace kiln::compiler {
namespace {

int64_t AlignUp(int64_t n) {
  return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

struct Lifetime {
  int first = -1;  // the step that writes it
  int last = -1;   // the last step that reads it
  bool Overlaps(const Lifetime& o) const { return first <= o.last && o.first <= last; }
};

}  // namespace

MemoryStats AssignBuffers(Executable& exe) {
  const int end = static_cast<int>(exe.steps.size());
  std::vector<Lifetime> life(exe.buffers.size());
  for (int s = 0; s < end; ++s) {
    for (int id : exe.steps[s].outputs)
      if (life[id].first < 0) life[id].first = s;
    for (int id : exe.steps[s].inputs) life[id].last = std::max(life[id].last, s);
  }
  for (int id : exe.fetches) life[id].last = end;
  MemoryStats stats;
  std::vector<int> arena;
  for (size_t id = 0; id < exe.buffers.size(); ++id) {
    const BufferDesc& b = exe.buffers[id];
    if (b.kind == BufferDesc::Kind::kConstant) stats.constant_bytes += b.bytes();
    if (b.kind != BufferDesc::Kind::kArena) continue;
    if (life[id].first < 0) life[id].first = 0;  // never written: kept zero-sized lifetime at start
    life[id].last = std::max(life[id].last, life[id].first);
    stats.unshared_bytes += AlignUp(b.bytes());
    arena.push_back(static_cast<int>(id));
  }
  std::stable_sort(arena.begin(), arena.end(),
                   [&](int a, int b) { return exe.buffers[a].bytes() > exe.buffers[b].bytes(); });
  std::vector<int> placed;
  for (int id : arena) {
    // Intervals [offset, offset + size) of placed buffers alive at the same time, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int other : placed)
      if (life[id].Overlaps(life[other]))
        busy.push_back({exe.buffers[other].offset,
                        exe.buffers[other].offset + AlignUp(exe.buffers[other].bytes())});
    std::sort(busy.begin(), busy.end());
    const int64_t size = AlignUp(exe.buffers[id].bytes());
    int64_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + size <= lo) break;
      offset = std::max(offset, hi);
    }
    exe.buffers[id].offset = offset;
    stats.arena_bytes = std::max(stats.arena_bytes, offset + size);
    placed.push_back(id);
  }
  exe.arena_bytes = stats.arena_bytes;
  return stats;
}

}  // namespace kiln::compiler
