// Widening casts folded into the variable updates that read them, on a cpu plan's steps (after
// lowering, before buffers are placed).
//
// Mixed precision keeps f32 master weights and computes their gradients in bf16, so a training
// step updates each weight by AssignSub(w, Cast(g, f32), lr): a generated kernel widens the
// whole gradient into an f32 buffer that only the update reads, writing and reading again twice
// the gradient's bytes. Where an "assign" step's value (input 1) is the one output of a kernel
// step that is a single Cast from bf16 to f32 over the whole value (no broadcast), read by no
// other step and not fetched, and the variable is f32, the assign reads the kernel's bf16 input
// instead (the "assign" step widens each element as it reads it: runtime/cpu/state_steps.cc) and
// the kernel step leaves the plan, its spec too when no other step calls it. Bitwise the same
// result: widening bf16 to f32 is exact.
#pragma once

#include "compiler/lower.h"

namespace kiln::compiler {

// Rewrites `lowered` in place; returns the number of casts folded.
int FoldWideningIntoAssigns(LoweredPlan& lowered);

}  // namespace kiln::compiler
