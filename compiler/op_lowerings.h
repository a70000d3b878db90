// How the compiler lowers each op, found by the op's name: the compiler's part of "an op is
// defined once" (DESIGN.md). Each lowering family registers its ops, one entry per op, in its own
// file:
//   library        a routine of the runtime runs the node: gemm, conv2d*, batch_norm*,
//                  softmax_cross_entropy*, reduce_sum, bias_add, copy, assign, variable_read
//                  (library_lowering.cc, RegisterLibraryLowerings);
//   copy           a strided, concat or split copy (copy_lowering.cc, RegisterCopyLowerings);
//   pool           a pooling routine (pool_lowering.cc, RegisterPoolLowerings);
//   row_reduction  one generated row-reduction kernel (reduction_fusion.cc,
//                  RegisterRowReductionLowerings);
//   cpu_routine    a routine of the cpu runtime, chosen after placement for the host's steps
//                  (library_lowering.cc's LowerCpuRoutineSteps: one_hot, gather, reduce_integer);
//   reference      none of the above: the compiled backends run the op's reference kernel, and
//                  this says why (op_lowerings.cc).
// An op with a scalar body (compiler/codegen/scalar_ops.h) fuses into generated kernels and needs
// no entry. A lowering may still refuse one node (its dtype, its shapes are not known): the node
// then runs its reference kernel, the reason in `kiln inspect --fusion`. The registry test fails
// for an op of the IR registry that has neither a scalar body nor an entry here.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "compiler/kernel_spec.h"
#include "compiler/static_types.h"
#include "ir/graph.h"
#include "runtime/executable.h"

namespace kiln::compiler {

struct OpLowering {
  // What the op's library call computes, for the cost model's rates (compiler/cost_model.h).
  enum class Call { kOther, kGemm, kConvolution };
  Call call = Call::kOther;
  // Its library call takes a fused epilogue (compiler/epilogue_fusion.h): Conv2D, MatMul.
  bool takes_epilogue = false;
  // Its output is input 0 broadcast to the output's shape (numpy rules): elementwise readers
  // may broadcast the source themselves (compiler/broadcast_folding.h).
  bool broadcast = false;
  // Whether a node keeps its reference kernel although the op has a scalar body (integer Div:
  // the reference reports a zero divisor, a generated kernel would not).
  std::function<bool(const Node&, const StaticInfo&)> keeps_reference;

  // Sets step.kind (kLibrary), callee and attrs and returns true when a routine runs the node;
  // false leaves `step` as it was.
  std::function<Result<bool>(const Node&, const StaticInfo&, Step&)> library;
  // Set the step as `library` does; kUnimplemented says in a few words why not.
  std::function<Status(const Node&, const StaticInfo&, Step&)> copy;
  std::function<Status(const Node&, const StaticInfo&, Step&)> pool;
  // The node as one row-reduction kernel, or kUnimplemented saying why not.
  std::function<Result<KernelSpec>(const Node&, const StaticInfo&)> row_reduction;
  // Rewrites a reference step of the host into a cpu routine; false leaves it.
  std::function<bool(Step&, const Executable&)> cpu_routine;
  std::string reference;  // why the compiled backends run the reference kernel ("" otherwise)
};

class OpLowerings {
 public:
  // Every family's registrations.
  static const OpLowerings& Global();

  // The op's entry, or nullptr (an elementwise op, or an op without a lowering).
  const OpLowering* Find(const std::string& op) const;
  // The entry to fill in, registering the op on first use.
  OpLowering& Add(const std::string& op) { return ops_[op]; }
  const std::map<std::string, OpLowering>& ops() const { return ops_; }

 private:
  std::map<std::string, OpLowering> ops_;
};

}  // namespace kiln::compiler
