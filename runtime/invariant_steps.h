// Steps whose results do not change from run to run of a plan: generated kernels that read only
// constants, variables that no step of the plan assigns, and the results of such steps (the bf16
// copies of an inference plan's f32 weights, say). The compiler marks them (Step::invariant) and
// gives their outputs bytes of their own for the whole run (compiler/buffer_assignment.h), so
// that the runtime can skip them while the variables they read keep their versions: they run on
// the first run and after a variable they depend on changes (an Assign in another plan, a
// checkpoint restore, variables().Set).
//
// Contract: InvariantSteps says which steps qualify; CheckInvariantSteps refuses (kInternal) an
// Executable whose marked steps do not qualify or whose marked outputs share bytes with another
// arena buffer, naming the step; InvariantRoots lists, for a marked step, the variable buffers
// its inputs come from (directly or through other marked steps): the versions that decide whether
// it runs.
#pragma once

#include <vector>

#include "ir/status.h"
#include "runtime/executable.h"

namespace kiln {

// Whether `buffer` holds the same bytes on every run of `exe`: a constant, or a variable that
// no "assign" step (or reference Assign) of `exe` writes.
bool KeptAcrossRuns(const Executable& exe, int buffer);

// By step index: whether the step qualifies (a kKernel step on the host whose every input is
// kept across runs or written by a qualifying step).
std::vector<bool> InvariantSteps(const Executable& exe);

Status CheckInvariantSteps(const Executable& exe);

// For a marked step: the variable buffers its value depends on, sorted.
std::vector<int> InvariantRoots(const Executable& exe, int step);

}  // namespace kiln
