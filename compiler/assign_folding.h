// The producers of a variable update's value folded into the update, on a cpu plan's steps (after
// lowering, before buffers are placed). All three shapes come from training steps:
//
// - A widening cast. Mixed precision keeps f32 master weights and computes their gradients in
//   bf16, so a step updates each weight by AssignSub(w, Cast(g, f32), lr): a generated kernel
//   widens the whole gradient into an f32 buffer that only the update reads, writing and reading
//   again twice the gradient's bytes. Where an "assign" step's value is the one output of a kernel
//   step that is a single Cast from bf16 to f32 over the whole value (no broadcast) and the
//   variable is f32, the assign reads the kernel's bf16 input instead (the "assign" step widens
//   each element as it reads it). Bitwise the same: widening bf16 to f32 is exact.
// - A zero-filled strided copy. A gradient computed for part of a weight is scattered into zeros
//   (conv-taps' Pad of the kept taps' gradient: a 3 x 3 filter over a 1 x 1 input) and the whole
//   weight updated by it. Where an AssignAdd or AssignSub of an f32 or f64 variable reads the
//   output of a "strided_copy" step that fills with 0 (a Pad, or a SliceGrad), the assign reads
//   the copy's input and updates only the copied region (the step's region attributes, as
//   strided_copy's: runtime/cpu/strided_region.h); the rest of the weight is neither read nor
//   written. The same values, except that an element of -0 outside the region stays -0 under
//   AssignAdd (+0 before: -0 + 0) and a non-finite scale no longer turns it NaN (scale * 0).
// - A matrix product. A weight's gradient (a MatMul x^T dy into f32, of f32 or, under mixed
//   precision, bf16 operands) is written whole, then read by its update and the weight read and
//   written again. Where an f32 AssignAdd or AssignSub of the whole variable reads the output of
//   a "gemm" step (batch 1, no epilogue), the assign adds the product itself (attribute
//   "product", gemm's attributes, inputs variable, a, b and the scale): scale * op(a) op(b) is
//   accumulated into the weights (runtime/cpu/product_adder.h). Rounded as a blocked gemm's sum
//   is: within the differential tests' tolerance of the unfused update, not bitwise.
//
// Each fold needs the value read by that assign alone and not fetched; the cast folds first, so
// a bf16 gradient scattered into zeros and widened folds both ways. The folded steps leave the
// plan, a cast kernel's spec too when no other step calls it.
#pragma once

#include "compiler/lower.h"

namespace kiln::compiler {

// Rewrites `lowered` in place; returns the number of steps folded.
int FoldIntoAssigns(LoweredPlan& lowered);

}  // namespace kiln::compiler
