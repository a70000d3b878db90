// Placement, the last stage of a CUDA plan: says where each step runs (`where(step, exe)`: on the
// device, on the host, or, for steps that are mere copies, on the device when every buffer it reads
// is already valid there, so that a copy never costs a transfer of its own, and for variable
// updates on the device when the value they apply is valid there, as a training step's weight
// updates and its counter's increment, a constant, are) and inserts the copies
// that make every buffer valid where it is read.
//
// Contract: every buffer has a host and a device copy (arena buffers at the same offset of two
// arenas, since the memory plan's lifetimes hold on both sides; feeds, constants and variables
// with device twins). Walking the steps in order, a buffer is valid on the side that last wrote
// it (feeds and variables start valid on the host; constants on both, uploaded once at load);
// before a step reads a buffer not valid on its side, a "to_device" or "to_host" library step
// (that buffer as its one input and output) is inserted, and after the last step every fetch is
// made valid on the host. A copy never leaves a buffer's lifetime, so the arenas' sharing stays
// correct. Runs after buffer assignment.
#pragma once

#include <cstdint>
#include <functional>

#include "runtime/executable.h"

namespace kiln::compiler {

struct PlacementStats {
  int device_steps = 0;
  int host_steps = 0;
  int copies = 0;
  int64_t copy_bytes = 0;  // per run
};

enum class Where {
  kHost,
  kDevice,
  kWhereInputsAre,  // on the device when every input is valid there
  kWhereValueIs,    // on the device when input 1 (an assign's value) is valid there
};

PlacementStats PlaceSteps(Executable& exe,
                          const std::function<Where(const Step&, const Executable&)>& where);

}  // namespace kiln::compiler
