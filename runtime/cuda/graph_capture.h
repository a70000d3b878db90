// CUDA graphs for a placed plan (runtime/executable.h): whether the device work of one run can be
// captured once, as a graph, and replayed by later runs (no launch cost per kernel), and if not,
// why. CudaProgram decides with this at load; `kiln inspect --placement` prints the answer.
//
// A run of a capturable plan has three phases:
//   1. on the host, in step order up to the last device step: the host steps before the first
//      device step and every variable_read, the uploads of variables (skipped when the device copy
//      holds the value already, device_variables.h), the bookkeeping of device assigns, and the
//      staging of every other copy to the device into the program's pinned memory;
//   2. the device steps from the first to the last, in order: launches, matmuls, copies on the
//      device, device assigns, and the copies between pinned staging and the device. This is what
//      the graph holds: the warm-up run issues it step by step, the second captures and replays
//      it, later runs replay it;
//   3. after the device is done: the staged copies to the host read out, then the host steps after
//      the last device step, in order.
// Phase 1 moves only host work that reads no device result and writes no memory the device steps
// read, so a run gives bitwise what the step-by-step run gives.
//
// Contract: a plan is capturable when it has a device step, no host step other than
// variable_read lies between its first and last device step, no variable is uploaded after a
// device step assigned it, and no buffer goes back to the device after a copy to the host;
// otherwise `why_not` names the first step that prevents it.
#pragma once

#include <string>

#include "runtime/executable.h"

namespace kiln::cuda {

struct GraphCapture {
  bool capturable = false;
  std::string why_not;  // when not capturable
  int first = -1;       // the first and the last device step (-1: none)
  int last = -1;
  int64_t operations = 0;  // device operations the graph holds (launches, matmuls, copies)
};

// Whether `step` runs on the device or moves a buffer between the host and the device.
bool IsDeviceWork(const Step& step);

GraphCapture AnalyzeGraphCapture(const Executable& exe);

}  // namespace kiln::cuda
