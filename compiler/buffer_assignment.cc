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

// Whether two buffers hold their elements alike: the same dtype, element count and layout (a
// shape that differs only in how those elements are grouped into dimensions is alike).
bool SameBytes(const BufferDesc& a, const BufferDesc& b) {
  return a.type.dtype == b.type.dtype && a.bytes() == b.bytes() && a.layout == b.layout;
}

}  // namespace

MemoryStats AssignBuffers(Executable& exe,
                          const std::function<std::vector<int>(const Step&)>& in_place_inputs) {
  const int end = static_cast<int>(exe.steps.size());
  std::vector<Lifetime> life(exe.buffers.size());
  for (int s = 0; s < end; ++s) {
    for (int id : exe.steps[s].outputs)
      if (life[id].first < 0) life[id].first = s;
    for (int id : exe.steps[s].inputs) life[id].last = std::max(life[id].last, s);
  }
  for (int id : exe.fetches) life[id].last = end;
  // An invariant step's results keep their bytes from run to run: alive from start to end.
  for (const Step& step : exe.steps)
    if (step.invariant)
      for (int id : step.outputs) life[id] = Lifetime{0, end};
  MemoryStats stats;
  auto is_arena = [&](int id) { return exe.buffers[id].kind == BufferDesc::Kind::kArena; };
  for (size_t id = 0; id < exe.buffers.size(); ++id) {
    const BufferDesc& b = exe.buffers[id];
    if (b.kind == BufferDesc::Kind::kConstant) stats.constant_bytes += b.bytes();
    if (!is_arena(id)) continue;
    if (life[id].first < 0) life[id].first = 0;  // never written: kept zero-sized lifetime at start
    life[id].last = std::max(life[id].last, life[id].first);
    stats.unshared_bytes += AlignUp(b.bytes());
  }

  // In-place groups: group[id] is the buffer whose placement `id` shares (itself if none).
  std::vector<int> group(exe.buffers.size());
  std::iota(group.begin(), group.end(), 0);
  for (int s = 0; in_place_inputs && s < end; ++s) {
    const Step& step = exe.steps[s];
    const std::vector<int> positions = in_place_inputs(step);
    if (positions.empty()) continue;
    // A buffer that the step also reads at another position is never overwritten.
    auto only_at_allowed = [&](int in) {
      for (size_t p = 0; p < step.inputs.size(); ++p)
        if (step.inputs[p] == in &&
            std::find(positions.begin(), positions.end(), static_cast<int>(p)) == positions.end())
          return false;
      return true;
    };
    std::vector<int> taken;
    for (int out : step.outputs) {
      if (!is_arena(out) || life[out].first != s) continue;
      for (int p : positions) {
        if (p < 0 || p >= static_cast<int>(step.inputs.size())) continue;
        const int in = step.inputs[p];
        const bool dies_here = life[in].last == s;
        if (in == out || !is_arena(in) || !dies_here || life[in].first >= s ||
            !SameBytes(exe.buffers[in], exe.buffers[out]) || !only_at_allowed(in) ||
            std::find(taken.begin(), taken.end(), in) != taken.end())
          continue;
        taken.push_back(in);
        group[out] = group[in];
        ++stats.in_place;
        break;
      }
    }
  }
  // A group lives from its first member's write to its last member's last read.
  std::vector<Lifetime> group_life(exe.buffers.size());
  std::vector<int> roots;
  for (size_t id = 0; id < exe.buffers.size(); ++id) {
    if (!is_arena(id)) continue;
    Lifetime& g = group_life[group[id]];
    if (group[id] == static_cast<int>(id)) {
      roots.push_back(static_cast<int>(id));
      g = life[id];
    }
  }
  for (size_t id = 0; id < exe.buffers.size(); ++id) {
    if (!is_arena(id) || group[id] == static_cast<int>(id)) continue;
    Lifetime& g = group_life[group[id]];
    g.first = std::min(g.first, life[id].first);
    g.last = std::max(g.last, life[id].last);
  }

  std::stable_sort(roots.begin(), roots.end(),
                   [&](int a, int b) { return exe.buffers[a].bytes() > exe.buffers[b].bytes(); });
  std::vector<int> placed;
  for (int id : roots) {
    // Intervals [offset, offset + size) of placed groups alive at the same time, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int other : placed)
      if (group_life[id].Overlaps(group_life[other]))
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
  for (size_t id = 0; id < exe.buffers.size(); ++id)
    if (is_arena(id)) exe.buffers[id].offset = exe.buffers[group[id]].offset;
  exe.arena_bytes = stats.arena_bytes;
  return stats;
}

}  // namespace kiln::compiler
