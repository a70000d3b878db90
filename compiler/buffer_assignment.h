// Buffer assignment: fixes the arena offset of every arena buffer of an Executable from the
// buffers' lifetimes (the steps between the one that writes a buffer and the last one that reads
// it; fetched buffers live to the end). Buffers whose lifetimes do not overlap share bytes;
// placement is first fit, largest buffers first, 64-byte aligned. The resulting arena_bytes is the
// peak memory of the plan's intermediate values, known before anything runs. The outputs of
// invariant steps (Step::invariant, runtime/invariant_steps.h) live from the first step to the
// end: no other buffer ever takes their bytes, so they hold their values from one run to the next.
//
// In place: `in_place_inputs(step)` lists the positions of the step's inputs whose bytes its
// outputs may take: those of a step that computes each output element from the input elements at
// the same row-major index only (a generated elementwise kernel, bias_add, a "copy" that relabels
// a shape: every input), or that reads an input only to accumulate into the output first (a
// convolution's residual of its sum post-op). An output may take the very bytes of such an input
// that this step reads last (not fetched) and that holds as many elements of the same dtype in
// the same layout (a broadcast input never does); the two then share one placement, and chains of
// such steps (x -> relu -> reshape -> scale -> ...) reuse one buffer. A copy placed on its own
// input copies nothing (the runtimes skip a copy whose source is its destination), nor does a
// residual placed on its convolution's output.
#pragma once

#include <functional>
#include <vector>

#include "runtime/executable.h"

namespace kiln::compiler {

struct MemoryStats {
  int64_t arena_bytes = 0;     // after reuse
  int64_t unshared_bytes = 0;  // the sum of all arena buffers (no reuse)
  int64_t constant_bytes = 0;
  int in_place = 0;  // outputs computed into an input's bytes
};

MemoryStats AssignBuffers(
    Executable& exe, const std::function<std::vector<int>(const Step&)>& in_place_inputs = nullptr);

}  // namespace kiln::compiler
