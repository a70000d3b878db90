#include "runtime/invariant_steps.h"

#include <algorithm>
#include <set>
#include <string>

namespace kiln {
namespace {

// The variable whose value a variable_read step binds to `buffer`, or "".
std::string VariableOf(const Executable& exe, int buffer) {
  for (const Step& s : exe.steps)
    if (s.kind == Step::Kind::kLibrary && s.callee == "variable_read" && s.outputs.size() == 1 &&
        s.outputs[0] == buffer)
      return s.node.name;
  return "";
}

// The step that writes each buffer (-1: none).
std::vector<int> Writers(const Executable& exe) {
  std::vector<int> writer(exe.buffers.size(), -1);
  for (size_t s = 0; s < exe.steps.size(); ++s)
    for (int id : exe.steps[s].outputs)
      if (id >= 0 && id < static_cast<int>(writer.size()) && writer[id] < 0)
        writer[id] = static_cast<int>(s);
  return writer;
}

}  // namespace

bool KeptAcrossRuns(const Executable& exe, int buffer) {
  if (buffer < 0 || buffer >= static_cast<int>(exe.buffers.size())) return false;
  const BufferDesc& b = exe.buffers[buffer];
  if (b.kind == BufferDesc::Kind::kConstant) return true;
  if (b.kind != BufferDesc::Kind::kVariable) return false;
  const std::string variable = VariableOf(exe, buffer);
  if (variable.empty()) return false;
  for (const Step& s : exe.steps) {
    const bool assigns = (s.kind == Step::Kind::kLibrary && s.callee == "assign") ||
                         (s.kind == Step::Kind::kReference && s.node.op == "Assign");
    if (assigns && !s.node.inputs.empty() && s.node.inputs[0].node == variable) return false;
  }
  return true;
}

std::vector<bool> InvariantSteps(const Executable& exe) {
  const std::vector<int> writer = Writers(exe);
  std::vector<bool> invariant(exe.steps.size(), false);
  for (size_t s = 0; s < exe.steps.size(); ++s) {
    const Step& step = exe.steps[s];
    if (step.kind != Step::Kind::kKernel || step.on_device || step.inputs.empty()) continue;
    bool all = true;
    for (int id : step.inputs) {
      const bool from_invariant = id >= 0 && id < static_cast<int>(writer.size()) &&
                                  writer[id] >= 0 && writer[id] < static_cast<int>(s) &&
                                  invariant[writer[id]];
      all = all && (KeptAcrossRuns(exe, id) || from_invariant);
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
  const std::vector<int> writer = Writers(exe);
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
