// Steps a CUDA device runs as device-to-device copies, no kernel needed:
//   "copy"    (Reshape, Flatten, ...: a dense buffer relabelled) copies input 0's bytes;
//   "assign"  of mode 0 (Assign: the variable's new value is the value's bytes) copies the value
//             into the variable's device copy (runtime/cuda/device_variables.h); of mode +1 or -1
//             (AssignAdd, AssignSub) it launches the generated kernel the step's attribute
//             "kernel" names, which adds or subtracts the value (times the scale, a third input,
//             where there is one) in that copy. Either when it is
//             safe: the plan reads the variable once (that read is the assign's input 0), assigns
//             it once, and reads the old value nowhere after the assign. The assign's output (the
//             new value) lives in the variable's device copy; its host twin is a new tensor that a
//             to_host fills where the host reads it, and that is read back and put in the store
//             when the run ends, so the next run finds the value on the device already.
// Placement (compiler/placement.h) and CudaProgram's load use these same predicates; placement
// puts such a step on the device only where the buffers it reads are already there.
#pragma once

#include "runtime/executable.h"

namespace kiln::cuda {

bool IsDeviceCopy(const Step& step, const Executable& exe);
// `step` must be an element of exe.steps.
bool IsDeviceAssign(const Step& step, const Executable& exe);

}  // namespace kiln::cuda
