// Rewrites that a plan's concrete shapes allow, before fusion: a SumLike, BroadcastLike or
// BroadcastTo whose input already has its output's type becomes an Identity, and a ReshapeLike
// a Reshape to its known shape (which no longer reads, nor keeps alive, the tensor it took the
// shape of). The gradient builder
// emits those ops wherever shapes were unknown when it ran (both sides of every residual Add get a
// SumLike); once shapes are known most of them neither sum nor broadcast anything, and as an
// Identity they fuse into their neighbours' kernel (or are one copy) instead of running a strided
// reduction or a reference broadcast over the whole tensor. Then broadcasts fold into the
// elementwise ops that read them (compiler/broadcast_folding.h; `elementwise` says which nodes
// broadcast their inputs as numpy does, null: none) and Transposes into the MatMuls that read them
// (compiler/transpose_folding.h), adding the new tensors' types to `info`.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "compiler/static_types.h"
#include "runtime/executor.h"

namespace kiln::compiler {

struct SimplifiedPlan {
  RunPlan plan;                                  // `rewritten` nodes in place of the originals
  std::vector<std::unique_ptr<Node>> rewritten;  // owned here: plan.nodes points into them
};

SimplifiedPlan SimplifyWithStaticTypes(const RunPlan& plan, StaticInfo& info,
                                       const std::function<bool(const Node&)>& elementwise);

}  // namespace kiln::compiler
