#include "runtime/invariant_steps.h"

#include <algorithm>
#include <set>
#include <string>

namespace kiln {
namespace {

// What the questions below need of a plan, gathered in one pass over its steps.
struct PlanFacts {
  std::vector<int> writer;  // by buffer: the first step that writes it (-1: none)
  std::vector<bool> kept;   // by buffer: KeptAcrossRuns

  explicit PlanFacts(const Executable& exe)
      : writer(exe.buffers.size(), -1), kept(exe.buffers.size(), false) {
    std::set<std::string> assigned;
    std::vector<std::pair<int, std::string>> reads;  // variable buffer, variable
    const int buffers = static_cast<int>(exe.buffers.size());
    for (size_t s = 0; s < exe.steps.size(); ++s) {
      const Step& step = exe.steps[s];
      for (int id : step.outputs)
        if (id >= 0 && id < buffers && writer[id] < 0) writer[id] = static_cast<int>(s);
      if (step.kind == Step::Kind::kLibrary && step.callee == "variable_read" &&
          step.outputs.size() == 1)
        reads.push_back({step.outputs[0], step.node.name});
      const bool assigns = (step.kind == Step::Kind::kLibrary && step.callee == "assign") ||
                           (step.kind == Step::Kind::kReference && step.node.op == "Assign");
      if (assigns && !step.node.inputs.empty()) assigned.insert(step.node.inputs[0].node);
    }
    for (int id = 0; id < buffers; ++id)
      kept[id] = exe.buffers[id].kind == BufferDesc::Kind::kConstant;
    for (const auto& [id, variable] : reads)
      if (id >= 0 && id < buffers && exe.buffers[id].kind == BufferDesc::Kind::kVariable &&
          writer[id] >= 0 && exe.steps[writer[id]].callee == "variable_read")
        kept[id] = !assigned.count(variable);
  }
};

}  // namespace

bool KeptAcrossRuns(const Executable& exe, int buffer) {
  if (buffer < 0 || buffer >= static_cast<int>(exe.buffers.size())) return false;
  return PlanFacts(exe).kept[buffer];
}

std::vector<bool> InvariantSteps(const Executable& exe) {
  const PlanFacts facts(exe);
  const std::vector<int>& writer = facts.writer;
  std::vector<bool> invariant(exe.steps.size(), false);
  for (size_t s = 0; s < exe.steps.size(); ++s) {
    const Step& step = exe.steps[s];
    if (step.kind != Step::Kind::kKernel || step.on_device || step.inputs.empty()) continue;
    bool all = true;
    for (int id : step.inputs) {
      const bool in_range = id >= 0 && id < static_cast<int>(writer.size());
      const bool from_invariant =
          in_range && writer[id] >= 0 && writer[id] < static_cast<int>(s) && invariant[writer[id]];
      all = all && in_range && (facts.kept[id] || from_invariant);
    }
    // Its outputs must be its own: written by no other step.
    for (int id : step.outputs)
      all = all && id >= 0 && id < static_cast<int>(writer.size()) &&
            writer[id] == static_cast<int>(s) && exe.buffers[id].kind == BufferDesc::Kind::kArena;
    invariant[s] = all;
  }
  return invariant;
}

Status CheckInvariantSteps(const Executable& exe) {
  const std::vector<bool> qualifies = InvariantSteps(exe);
  std::set<int> kept;
  for (size_t s = 0; s < exe.steps.size(); ++s) {
    const Step& step = exe.steps[s];
    if (!step.invariant) continue;
    if (!qualifies[s])
      return MakeError(ErrorCode::kInternal, "step ", s, " (", step.callee,
                       ") is marked invariant but reads a buffer that changes from run to run");
    kept.insert(step.outputs.begin(), step.outputs.end());
  }
  for (int id : kept) {
    const BufferDesc& b = exe.buffers[id];
    for (size_t other = 0; other < exe.buffers.size(); ++other) {
      const BufferDesc& o = exe.buffers[other];
      if (static_cast<int>(other) == id || o.kind != BufferDesc::Kind::kArena) continue;
      if (o.offset < b.offset + b.bytes() && b.offset < o.offset + o.bytes())
        return MakeError(ErrorCode::kInternal, "buffer %", id, " (", b.tensor,
                         "), the result of an invariant step, shares bytes with buffer %", other,
                         " (", o.tensor, ")");
    }
  }
  return OkStatus();
}

std::vector<int> InvariantRoots(const Executable& exe, int step) {
  const std::vector<int> writer = PlanFacts(exe).writer;
  std::set<int> roots, seen;
  std::vector<int> stack = {step};
  while (!stack.empty()) {
    const int s = stack.back();
    stack.pop_back();
    if (!seen.insert(s).second) continue;
    for (int id : exe.steps[s].inputs) {
      if (exe.buffers[id].kind == BufferDesc::Kind::kVariable)
        roots.insert(id);
      else if (writer[id] >= 0 && exe.steps[writer[id]].invariant)
        stack.push_back(writer[id]);
    }
  }
  return std::vector<int>(roots.begin(), roots.end());
}

}  // namespace kiln
