// KernelSpec: what the fusion planner hands to the kernel generator. One spec is one generated
// kernel: a single loop nest over `shape` that evaluates a DAG of scalar ops (kiln's elementwise
// ops: Add, Relu, Cast, Select, ...) and writes some of its values to output buffers.
//
// The kernel's calling convention (the ABI the runtime relies on, for JIT and ahead-of-time code
// alike): the generated function is
//     void NAME(int64_t begin, int64_t end, const T0* in0, ..., Tk* out0, ...)
// and computes the rows [begin, end) of dimension 0 of `shape` (for rank 0: begin=0, end=1), so
// that the runtime can split the work over threads. Buffers are dense row-major arrays of their
// full shapes; each output has exactly `shape`; an input has its own shape, broadcast to `shape`
// by numpy's rules (right-aligned, size-1 or missing dims repeat). bool is one byte (0 or 1).
// The packed entry point the runtime calls is `void(void** args)`, args[i] pointing at the i-th
// argument above. An output may be the very buffer of an input of its type (the memory plan
// computes elementwise kernels in place), so no argument may be assumed not to alias another.
//
// Row-reduction kernels (`row_reduction` set; see compiler/codegen/emit_reduction.h): `shape` is
// [rows, cols] and inputs have rank <= 2, broadcast to it. Ops may also be "ReduceSum",
// "ReduceMax" or "ReduceMin" (one float argument, result of its dtype): the reduction of that
// value over the columns of one row, a per-row value that later ops use broadcast over the
// columns. A value is per row when it depends on no input with cols > 1 except through a
// reduction. An output that is per row is a buffer of `rows` elements, the others of [rows, cols].
// begin/end still split the rows, so the ABI is unchanged.
#pragma once

#include <string>
#include <vector>

#include "ir/attr.h"
#include "ir/dtype.h"
#include "ir/shape.h"

namespace kiln::compiler {

struct KernelSpec {
  struct Operand {
    DType dtype;
    Shape shape;  // broadcastable to KernelSpec::shape
  };
  // One scalar op. `args` index the kernel's values: [0, inputs.size()) are the inputs, then
  // inputs.size() + k is the result of ops[k]. `op` is a kiln op name (see ir/ops/math.h for the
  // semantics; the reference kernels in runtime/reference/math.cc are the oracle), or "Constant"
  // with attribute "value" (a double) producing a scalar of `dtype`.
  struct Op {
    std::string op;
    std::vector<int> args;
    AttrMap attrs;     // with defaults filled
    DType dtype;       // the result's dtype
    std::string node;  // the graph node it came from (for messages and dumps)
  };

  std::string name;  // the symbol, unique in its module: [A-Za-z_][A-Za-z0-9_]*
  Shape shape;       // the iteration space, fully known
  std::vector<Operand> inputs;
  std::vector<Op> ops;
  std::vector<int> outputs;  // value indices written to the output buffers, in order
  bool row_reduction = false;
  // A kernel written directly as MLIR (its func.func text, same ABI; inputs, ops and outputs
  // unused), for what the scalar DAG cannot say (compiler/strided_copy_kernel.h).
  std::string raw_mlir;

  // A raw_mlir kernel of `iterations` rows (its iteration space [iterations]).
  static KernelSpec Raw(std::string name, int64_t iterations, std::string mlir) {
    KernelSpec spec;
    spec.name = std::move(name);
    spec.shape = Shape{iterations};
    spec.raw_mlir = std::move(mlir);
    return spec;
  }

  int num_values() const { return static_cast<int>(inputs.size() + ops.size()); }
  DType ValueType(int v) const {
    return v < static_cast<int>(inputs.size()) ? inputs[v].dtype : ops[v - inputs.size()].dtype;
  }
};

}  // namespace kiln::compiler
