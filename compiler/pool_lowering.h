// Pooling lowering: MaxPool2D, AvgPool2D and their backward ops as oneDNN pooling library steps
// (runtime/cpu/onednn_pool_step.cc) instead of reference kernels. The routine's attributes are
// kiln's geometry restated as oneDNN's: the bottom and right pads become those that give kiln's
// output size (ceil mode's extra rows and columns included, never negative).
//
// Contract: each op above gets an OpLowering::pool (compiler/op_lowerings.h): on success `step`
// is a kLibrary step whose callee and attrs are set (the caller binds its buffers: the node's
// inputs and outputs, in order). Otherwise a kUnimplemented error says in a few words why not
// (the decision list of `kiln inspect --fusion`): a dtype other than f32, bf16 and f16, shapes not
// known, or an average over ceil-mode windows that count padding (oneDNN divides those by the
// whole kernel, kiln by the window's part inside the padded input).
#pragma once

#include "compiler/op_lowerings.h"

namespace kiln::compiler {

void RegisterPoolLowerings(OpLowerings& lowerings);

}  // namespace kiln::compiler
