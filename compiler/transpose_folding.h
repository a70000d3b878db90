// Transposes folded into the matrix products that read or write them, on a plan with static
// types (a step of compiler/static_simplify.h). A Transpose (swapping the last two dims) of a
// MatMul's product that nothing else reads becomes the product of the swapped operands,
// (a b)^T = b^T a^T, named as the Transpose was (a weight gradient through a tied, transposed
// embedding). A MatMul reading Transpose(x) whose permutation swaps the last
// two dims (and keeps the others) reads x instead with its transpose_a / transpose_b flipped: the
// gemm reads the operand transposed (trans flags of the cpu kernel, cuBLASLt), and the strided
// copy that the Transpose was goes away. A scalar Mul, Div, Add or Sub between the Transpose and
// such MatMuls (attention's scaling of K before Q K^T) is moved above the Transpose first:
// op(Transpose(x), s) = Transpose(op(x, s)) for a one-element s, the new op named
// "<op's name>/before_transpose" and the Transpose taking the op's name (so its output, which a
// caller may fetch, keeps its name and value). Transposes and ops left without a reader by these
// rewrites leave the plan; a fetched one stays.
#pragma once

#include <memory>
#include <vector>

#include "compiler/static_types.h"
#include "runtime/executor.h"

namespace kiln::compiler {

// Rewrites `plan` (its nodes in order); new nodes are appended to `owned`, and their tensors'
// types to `info`. Returns the number of Transposes folded.
int FoldTransposesIntoMatMuls(RunPlan& plan, std::vector<std::unique_ptr<Node>>& owned,
                              StaticInfo& info);

}  // namespace kiln::compiler
