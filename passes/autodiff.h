// Reverse-mode symbolic differentiation (like tf.gradients): adds to the graph the nodes that
// compute d(sum of ys * grad_ys)/d(x) for each x, built from each op's registered gradient.
//
// - A value used by several consumers sums the gradients flowing back from each.
// - Gradients of broadcasting ops are reduced back to the input's shape by the op's gradient.
// - Integer and bool tensors get no gradient; StopGradient and ops marked not differentiable stop
// it.
// - Only nodes on a path from some x to some y are differentiated; other paths are pruned.
// - An x that no y depends on gets zeros (a tensor, so callers such as optimizers need no special
//   case), unlike TensorFlow's None.
// - grad_ys defaults to ones of each y's shape. Errors name the node whose op has no gradient.
#pragma once

#include <vector>

#include "ir/builder.h"
#include "ir/status.h"

namespace kiln {

Result<std::vector<Value>> Gradients(const std::vector<Value>& ys, const std::vector<Value>& xs,
                                     const std::vector<Value>& grad_ys = {});

}  // namespace kiln
