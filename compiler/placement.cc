#include "compiler/placement.h"

#include <set>

namespace kiln::compiler {
namespace {

struct Valid {
  bool host = false;
  bool device = false;
};

Step CopyStep(const Executable& exe, int buffer, bool to_device) {
  Step copy;
  copy.kind = Step::Kind::kLibrary;
  copy.callee = to_device ? "to_device" : "to_host";
  copy.inputs = {buffer};
  copy.outputs = {buffer};
  copy.node.name = exe.buffers[buffer].tensor;
  return copy;
}

}  // namespace

PlacementStats PlaceSteps(Executable& exe,
                          const std::function<Where(const Step&, const Executable&)>& where) {
  std::vector<Valid> valid(exe.buffers.size());
  for (size_t i = 0; i < exe.buffers.size(); ++i) {
    const BufferDesc::Kind kind = exe.buffers[i].kind;
    valid[i].host = kind != BufferDesc::Kind::kArena;
    valid[i].device = kind == BufferDesc::Kind::kConstant;
  }
  PlacementStats stats;
  std::vector<Step> placed;
  auto make_valid = [&](int id, bool device) {
    bool& here = device ? valid[id].device : valid[id].host;
    if (here) return;
    placed.push_back(CopyStep(exe, id, device));
    ++stats.copies;
    stats.copy_bytes += exe.buffers[id].bytes();
    here = true;
  };
  std::vector<Where> side;  // decided on the plan as it stands, before any step moves
  for (const Step& step : exe.steps) side.push_back(where(step, exe));
  for (size_t i = 0; i < exe.steps.size(); ++i) {
    Step& step = exe.steps[i];
    step.on_device = side[i] == Where::kDevice;
    if (side[i] == Where::kWhereInputsAre) {
      step.on_device = !step.inputs.empty();
      for (int id : step.inputs) step.on_device = step.on_device && valid[id].device;
    }
    if (side[i] == Where::kWhereValueIs)
      step.on_device = step.inputs.size() > 1 && valid[step.inputs[1]].device;
    ++(step.on_device ? stats.device_steps : stats.host_steps);
    for (int id : std::set<int>(step.inputs.begin(), step.inputs.end()))
      make_valid(id, step.on_device);
    for (int id : step.outputs) valid[id] = {!step.on_device, step.on_device};
    placed.push_back(std::move(step));
  }
  for (int id : exe.fetches) make_valid(id, /*device=*/false);
  exe.steps = std::move(placed);
  return stats;
}

}  // namespace kiln::compiler
