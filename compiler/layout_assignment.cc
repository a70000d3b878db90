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

// One line per group of buffers that some convolution wished in a layout: what it got, the
// votes, and why not the most wished layout when it stays dense.
std::vector<std::string> Explain(const Executable& exe, Groups& groups,
                                 const std::vector<std::map<std::string, int>>& votes,
                                 const std::vector<std::string>& chosen,
                                 const std::vector<std::string>& why) {
  std::map<int, std::vector<int>> members;
  for (size_t id = 0; id < exe.buffers.size(); ++id)
    members[groups.Find(static_cast<int>(id))].push_back(static_cast<int>(id));
  std::vector<std::string> lines;
  for (const auto& [root, ids] : members) {
    bool wished = false;
    std::string tally;
    for (const auto& [layout, count] : votes[root]) {
      wished = wished || !layout.empty();
      tally += (tally.empty() ? "" : ", ") + (layout.empty() ? "dense" : layout) + " " +
               std::to_string(count);
    }
    if (!wished) continue;
    std::string line =
        (chosen[root].empty() ? "dense" : chosen[root]) + ": " + exe.buffers[ids[0]].tensor;
    if (ids.size() > 1) line += " and " + std::to_string(ids.size() - 1) + " more";
    line += " (votes: " + tally + ")";
    if (chosen[root].empty() && !why[root].empty()) line += ": " + why[root];
    lines.push_back(std::move(line));
  }
  return lines;
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
  // Why a buffer stays dense whatever its group wishes ("" if it need not).
  std::vector<std::string> fixed(n);
  for (size_t id = 0; id < n; ++id) {
    const BufferDesc& b = exe.buffers[id];
    const DType t = b.type.dtype;
    if (b.kind != BufferDesc::Kind::kArena)
      fixed[id] = "is a feed, a constant or a variable";
    else if (b.type.shape.rank() != 4)
      fixed[id] = "is not rank 4";
    else if (t != f32 && t != bf16 && t != f16)
      fixed[id] = "is " + std::string(DTypeName(t));
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
      if (!answered && roles[i] == cpu::LayoutRole::kOwn)
        fixed[id] = "is read or written by " + step.callee + ", which the runtime cannot describe";
      if (!answered || roles[i] == cpu::LayoutRole::kUnread || roles[i] == cpu::LayoutRole::kAny)
        continue;
      library_wishes.push_back({id, (*layouts)[i]});
      if (roles[i] == cpu::LayoutRole::kOwn) wishes.push_back({id, (*layouts)[i]});
    }
  }
  for (int id : exe.fetches) want_dense(id);

  // A group with a member that must stay dense stays dense; the others decide by their votes.
  std::vector<int> group_fixed(n, -1);  // a member that must stay dense
  for (size_t id = 0; id < n; ++id)
    if (!fixed[id].empty() && group_fixed[groups.Find(id)] < 0)
      group_fixed[groups.Find(id)] = static_cast<int>(id);
  std::vector<std::map<std::string, int>> votes(n);
  for (const Wish& w : wishes)
    if (cpu::LayoutChannelBlock(w.layout) > 0) ++votes[groups.Find(w.buffer)][w.layout];
  std::vector<std::string> chosen(n), why(n);
  for (size_t root = 0; root < n; ++root) {
    if (group_fixed[root] >= 0) {
      const int id = group_fixed[root];
      why[root] = exe.buffers[id].tensor + " " + fixed[id];
      continue;
    }
    // Convolutions compute in any blocked layout that oneDNN has fast code for (and reorder
    // otherwise: runtime/cpu/onednn_conv_step.cc), so their wishes for blocked layouts count
    // together against the dense wishes; the group takes the most wished of them (on a tie, the
    // larger block) if they outnumber the dense ones.
    int blocked = 0;
    std::tuple<int, int> best{0, 0};
    for (const auto& [layout, count] : votes[root]) {
      if (layout.empty()) continue;
      const int64_t channels = exe.buffers[root].type.shape[1];
      const int block = cpu::LayoutChannelBlock(layout);
      if (channels % block != 0) {
        why[root] = std::to_string(channels) + " channels fill no block of " + layout;
        continue;
      }
      blocked += count;
      if (std::make_tuple(count, block) > best) {
        best = {count, block};
        chosen[root] = layout;
      }
    }
    const int dense = votes[root].count("") ? votes[root].at("") : 0;
    if (blocked <= dense) chosen[root].clear();
  }
  LayoutStats stats;
  for (size_t id = 0; id < n; ++id) {
    exe.buffers[id].layout = chosen[groups.Find(id)];
    if (!exe.buffers[id].layout.empty()) ++stats.buffers[exe.buffers[id].layout];
  }
  // A convolution computes in its buffers' layouts, so it reorders a dense buffer it wants in
  // another layout, and a weight ("other"), but not an activation in another blocked layout.
  for (const Wish& w : library_wishes) {
    const std::string& has = exe.buffers[w.buffer].layout;
    stats.reorders_if_dense += !w.layout.empty();
    stats.reorders += w.layout != has && (has.empty() || w.layout == "other");
  }
  stats.decisions = Explain(exe, groups, votes, chosen, why);
  stats.reorders += InsertBoundaryReorders(exe);
  return stats;
}

}  // namespace kiln::compiler
