#include "runtime/cuda/graph_capture.h"

#include <map>
#include <set>

#include "runtime/cpu/program.h"
#include "runtime/cuda/collectives.h"
#include "runtime/cuda/device_variables.h"

namespace kiln::cuda {
namespace {

std::string Describe(const Step& step) {
  return "step " + step.callee + " (" + step.node.name + ")";
}

// The device operations `step` issues: its kernel's launches, or one matmul or copy.
int64_t Operations(const Step& step, const Executable& exe) {
  std::string kernel = step.kind == Step::Kind::kKernel ? step.callee : std::string();
  if (Result<std::string> named = step.attrs.GetString("kernel"); named.ok()) kernel = *named;
  if (kernel.empty()) return 1;
  const DeviceKernel* found = exe.FindDeviceKernel(kernel);
  return found ? static_cast<int64_t>(found->launches.size()) : 1;
}

}  // namespace

bool IsDeviceWork(const Step& step) { return step.on_device || cpu::IsCopyAcross(step); }

GraphCapture AnalyzeGraphCapture(const Executable& exe) {
  GraphCapture capture;
  const int n = static_cast<int>(exe.steps.size());
  for (int i = 0; i < n; ++i) {
    if (!IsDeviceWork(exe.steps[i])) continue;
    if (capture.first < 0) capture.first = i;
    capture.last = i;
  }
  if (capture.first < 0) {
    capture.why_not = "the plan runs nothing on the device";
    return capture;
  }
  const std::map<int, std::string> shared = SharedVariableBuffers(exe);
  std::set<std::string> assigned;  // variables a device step has assigned so far
  std::set<int> to_host;           // buffers copied to the host so far
  for (int i = capture.first; i <= capture.last; ++i) {
    const Step& step = exe.steps[i];
    if (!IsDeviceWork(step)) {
      if (step.kind == Step::Kind::kLibrary && step.callee == "variable_read") continue;
      capture.why_not = Describe(step) + " runs on the host between device steps";
      return capture;
    }
    if (step.on_device && IsDeviceCollective(step, exe)) {
      capture.why_not = Describe(step) +
                        " all-reduces over the ranks, with each run's share of the batch as its "
                        "scale";
      return capture;
    }
    if (step.callee == "to_host") to_host.insert(step.inputs[0]);
    if (step.callee == "to_device" && to_host.count(step.inputs[0])) {
      capture.why_not =
          Describe(step) + " copies back to the device what a copy to the host brought";
      return capture;
    }
    if (step.callee == "to_device") {
      auto variable = shared.find(step.inputs[0]);
      if (variable != shared.end() &&
          exe.buffers[step.inputs[0]].kind == BufferDesc::Kind::kVariable) {
        if (assigned.count(variable->second)) {
          capture.why_not =
              "variable '" + variable->second + "' is uploaded after a device step assigned it";
          return capture;
        }
        continue;  // an upload before the graph (phase 1), no operation in it
      }
    }
    if (step.on_device && step.callee == "assign") assigned.insert(step.node.inputs[0].node);
    capture.operations += Operations(step, exe);
  }
  capture.capturable = true;
  return capture;
}

}  // namespace kiln::cuda
