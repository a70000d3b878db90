// Data-movement lowering: Slice, SliceGrad, constant-mode Pad, BroadcastTo and BroadcastLike (a
// source stride of 0 on the repeated dims), Tile (each axis split into copies, with a source
// stride of 0, and the axis itself) and Transpose (the source's strides permuted) as one
// "strided_copy" library step
// (runtime/cpu/strided_copy_step.cc) instead of reference kernels; Concat as one "concat"
// step and Split and ConcatGrad (Concat's gradient) as one "split" step (concat_step.cc: attrs
// outer, the product of the dims before the axis, and blocks, each piece's elements per outer
// row; the whole tensor is Concat's output or the others' input 0). With the shapes known at
// compile time each is a copy between two strided views of its input and output, the output
// filled first where the copy does not cover it (Pad's value; zeros for SliceGrad, whose slice
// positions are distinct, so scattering dy into zeros is copying it). Pad's gradient for
// constant mode is a Pad (with negated pads), so residual networks' shortcut padding and its
// gradient both lower here.
//
// Step attributes (ints unless said): dims (the copied region's extent per axis), src_offset,
// src_strides, dst_offset, dst_strides (in elements; a slice's negative step gives a negative
// stride), fill (0/1) and fill_value (float). Input 0 is the source, output 0 the destination.
//
// Contract: each op above gets an OpLowering::copy (compiler/op_lowerings.h): on success `step`
// is a kLibrary step whose callee and attrs are set (the caller binds the node's inputs and
// outputs, in order). Otherwise kUnimplemented says why not in a few words (`kiln inspect
// --fusion`): Pad in reflect or edge mode, or shapes not known.
#pragma once

#include "compiler/op_lowerings.h"

namespace kiln::compiler {

void RegisterCopyLowerings(OpLowerings& lowerings);

}  // namespace kiln::compiler
