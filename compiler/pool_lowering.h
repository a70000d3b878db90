// Pooling lowering: MaxPool2D, AvgPool2D and their backward ops as oneDNN pooling library steps
// (runtime/cpu/onednn_pool_step.cc) instead of reference kernels. The routine's attributes are
// kiln's geometry restated as oneDNN's: the bottom and right pads become those that give kiln's
// output size (ceil mode's extra rows and columns included, never negative).
//
// Contract: on success `step` is a kLibrary step whose callee and attrs are set (the caller binds
// its buffers: the node's inputs and outputs, in order). Otherwise a kUnimplemented error says in
// a few words why not (the decision list of `kiln inspect --fusion`): a dtype other than f32,
// bf16 and f16, shapes not known, or an average over ceil-mode windows that count padding (oneDNN
// divides those by the whole kernel, kiln by the window's part inside the padded input).
#pragma once

#include <string>

#include "compiler/static_types.h"
#include "ir/graph.h"
#include "runtime/executable.h"

namespace kiln::compiler {

// Whether `op` is one of the pooling ops above.
bool HasPoolLowering(const std::string& op);

Status LowerPool(const Node& node, const StaticInfo& info, Step& step);

}  // namespace kiln::compiler
