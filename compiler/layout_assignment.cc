#include "compiler/layout_assignment.h"

#include <cstdlib>
#include <numeric>
#include <tuple>

#include "runtime/cpu/layouts.h"

namespace kiln::compiler {
namespace {

class Groups {
 public:
  explicit Groups(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Join(int a, int b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<int> parent_;
};

int OperandBuffer(const Step& step, size_t i) {
  return i < step.inputs.size() ? step.inputs[i] : step.outputs[i - step.inputs.size()];
}

struct Wish {
  int buffer;
  std::string layout;
};

// Where a step that reads or writes only dense buffers meets a buffer with a layout, a "reorder"
// step converts between the buffer and a dense twin, which the step uses instead: before its
// first dense reader (later ones share the twin), after a dense writer; fetches read twins too.
// Returns the number of reorder steps.
int InsertBoundaryReorders(Executable& exe) {
  std::vector<int> twin(exe.buffers.size(), -1);
  auto make_twin = [&](int id) {
    BufferDesc dense = exe.buffers[id];
    dense.layout.clear();
    dense.tensor += " (dense)";
    exe.buffers.push_back(std::move(dense));
    return twin[id] = static_cast<int>(exe.buffers.size()) - 1;
  };
  auto reorder = [&](int from, int to) {
    Step r;
    r.kind = Step::Kind::kLibrary;
    r.callee = "reorder";
    r.inputs = {from};
    r.outputs = {to};
    r.node.name = "reorder " + exe.buffers[from].tensor;
    return r;
  };
  int count = 0;
  std::vector<Step> steps;
  for (Step& step : exe.steps) {
    const std::vector<cpu::LayoutRole> roles = cpu::OperandLayoutRoles(step, exe);
    std::vector<Step> after;
    for (size_t i = 0; i < roles.size(); ++i) {
      const int id = OperandBuffer(step, i);
      if (roles[i] != cpu::LayoutRole::kPlain || exe.buffers[id].layout.empty()) continue;
      ++count;
      if (i < step.inputs.size()) {
        if (twin[id] < 0)
          steps.push_back(reorder(id, make_twin(id)));
        else
          --count;
        step.inputs[i] = twin[id];
      } else {
        step.outputs[i - step.inputs.size()] = make_twin(id);
        after.push_back(reorder(twin[id], id));
      }
    }
    steps.push_back(std::move(step));
    for (Step& r : after) steps.push_back(std::move(r));
  }
  for (int& id : exe.fetches) {
    if (exe.buffers[id].layout.empty()) continue;
    if (twin[id] < 0) {
      steps.push_back(reorder(id, make_twin(id)));
      ++count;
    }
    id = twin[id];
  }
  exe.steps = std::move(steps);
  return count;
}

}  // namespace

LayoutQuery DefaultLayoutQuery() {
  const char* env = std::getenv("KILN_LAYOUTS");
  if (env && std::string(env) == "dense") return nullptr;
  return cpu::PreferredLayouts;
}

LayoutStats AssignLayouts(Executable& exe, const LayoutQuery& preferred) {
  const size_t n = exe.buffers.size();
  Groups groups(n);
  std::vector<bool> fixed(n, false);  // stays dense: not a floating-point rank-4 arena buffer
  for (size_t id = 0; id < n; ++id) {
    const BufferDesc& b = exe.buffers[id];
    const DType t = b.type.dtype;
    fixed[id] = b.kind != BufferDesc::Kind::kArena || b.type.shape.rank() != 4 ||
                (t != f32 && t != bf16 && t != f16);
  }
  // Each operand's wish for its buffer's layout: a convolution's activation the layout its
  // primitive computes it in, a dense-only operand "" (one reorder per buffer, read or written).
  std::vector<Wish> wishes, library_wishes;  // library_wishes: every convolution operand's
  std::vector<bool> wants_dense(n, false);
  auto want_dense = [&](int id) {
    if (!wants_dense[id]) wishes.push_back({id, ""});
    wants_dense[id] = true;
  };
  for (const Step& step : exe.steps) {
    const std::vector<cpu::LayoutRole> roles = cpu::OperandLayoutRoles(step, exe);
    int shared = -1;
    bool owns = false;
    for (size_t i = 0; i < roles.size(); ++i) {
      const int id = OperandBuffer(step, i);
      if (roles[i] == cpu::LayoutRole::kPlain) want_dense(id);
      if (roles[i] == cpu::LayoutRole::kShared) {
        if (shared >= 0) groups.Join(id, shared);
        shared = id;
      }
      owns = owns || roles[i] == cpu::LayoutRole::kOwn;
    }
    if (!owns) continue;
    Result<std::vector<std::string>> layouts = preferred(step, exe);
    const bool answered = layouts.ok() && layouts->size() == roles.size();
    for (size_t i = 0; i < roles.size(); ++i) {
      const int id = OperandBuffer(step, i);
      // Without an answer (the runtime will report why it cannot run the step), dense.
      if (!answered && roles[i] == cpu::LayoutRole::kOwn) fixed[id] = true;
      if (!answered || roles[i] == cpu::LayoutRole::kUnread || roles[i] == cpu::LayoutRole::kAny)
        continue;
      library_wishes.push_back({id, (*layouts)[i]});
      if (roles[i] == cpu::LayoutRole::kOwn) wishes.push_back({id, (*layouts)[i]});
    }
  }
  for (int id : exe.fetches) want_dense(id);

  // Each group takes the layout most wished for by its members (on a tie dense, which needs no
  // twin buffers, else the larger channel block), unless one member must stay dense.
  std::vector<bool> group_fixed(n, false);
  for (size_t id = 0; id < n; ++id)
    if (fixed[id]) group_fixed[groups.Find(id)] = true;
  std::vector<std::map<std::string, int>> votes(n);
  for (const Wish& w : wishes)
    if (cpu::LayoutChannelBlock(w.layout) > 0) ++votes[groups.Find(w.buffer)][w.layout];
  std::vector<std::string> chosen(n);
  for (size_t root = 0; root < n; ++root) {
    if (group_fixed[root]) continue;
    auto rank = [&](const std::string& layout, int count) {
      return std::make_tuple(count, layout.empty(), cpu::LayoutChannelBlock(layout));
    };
    auto best = rank("", votes[root].count("") ? votes[root][""] : 0);
    for (const auto& [layout, count] : votes[root]) {
      if (exe.buffers[root].type.shape[1] % cpu::LayoutChannelBlock(layout) != 0) continue;
      if (rank(layout, count) > best) {
        best = rank(layout, count);
        chosen[root] = layout;
      }
    }
  }
  LayoutStats stats;
  for (size_t id = 0; id < n; ++id) {
    exe.buffers[id].layout = chosen[groups.Find(id)];
    if (!exe.buffers[id].layout.empty()) ++stats.buffers[exe.buffers[id].layout];
  }
  for (const Wish& w : library_wishes) {
    stats.reorders_if_dense += !w.layout.empty();
    stats.reorders += w.layout != exe.buffers[w.buffer].layout;
  }
  stats.reorders += InsertBoundaryReorders(exe);
  return stats;
}

}  // namespace kiln::compiler
