// simplify: algebraic simplification, one walk in topological order (so chains collapse in one
// run: the result of simplifying a node is what its consumers see).
//
// Contract. A node is replaced by a tensor x only when its output type (dtype and shape, unknown
// dims included) equals x's, so no rewrite changes a broadcast; and only when it has no control
// inputs (replacing it would drop them). Replaced nodes are deleted and their uses (consumers,
// control inputs on them, graph outputs) move to x. Nodes that merely lose consumers stay: that
// is dce's job. Pinned nodes (passes/graph_edit.h) are never touched. The rules:
// - Identity(x) -> x.
// - x*1, 1*x, x+0, 0+x, x-0, x/1 -> x, where 1 and 0 are Constants with every element equal to
//   it (any shape that broadcasts to x's). x+0 turns -0.0 into +0.0; the rewrite ignores that
//   (as XLA and TensorFlow do); x-0 keeps it.
// - Transpose(Transpose(x, p), q) -> Transpose(x, r) with r[i] = p[q[i]] (edited in place, the
//   outer node keeps its name); a Transpose whose permutation is the identity -> x.
// - Reshape(Reshape(x, a), b) -> Reshape(x, b') in place, where b' is b with each 0 ("copy this
//   dim of the input") replaced by the inner result's dim, which must be known (else no rewrite);
//   a Reshape whose output type is fully known and equal to x's -> x.
// - Cast(x, to = dtype(x)) -> x; Cast(Cast(x, T), dtype(x)) -> x when T holds every value of
//   x's dtype exactly (bool -> anything; i8, u8 -> i32, i64, f16, bf16, f32, f64; i32 -> i64,
//   f64; f16, bf16 -> f32, f64; f32 -> f64), so the round trip is the identity. Narrowing first
//   (f32 -> f16 -> f32) rounds and is kept.
// - A While that recomputes another (attribute "recomputes": a While's gradient records the loop
//   by running it again with more variables) from the same loop variables and maximum replaces
//   it: the loop runs once. (The recomputing loop's first loop variables are the other's, and
//   its first scan outputs, after all of its loop variables, are the other's scan outputs.)
// The inner node of a chain is bypassed only when it is not pinned and has no control inputs.
// Reads of state are safe to look through: a Variable node's output is the value it had when the
// node ran (an Assign replaces the stored value, it never mutates it), so Identity(v) is v.
#pragma once

#include "passes/pass.h"

namespace kiln {

class AlgebraicSimplifier : public Pass {
 public:
  std::string name() const override { return "simplify"; }
  Result<bool> Run(Graph& graph) override;
};

}  // namespace kiln
