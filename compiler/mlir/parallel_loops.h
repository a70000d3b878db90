// Parallel-loop annotation of generated kernels, on the LLVM IR of a host module before it is
// optimized (JIT and ahead-of-time code alike).
//
// The memory plan computes elementwise kernels in place (an output may be an input's very
// buffer), so LLVM cannot prove that a kernel's pointers do not overlap; its loop vectorizer then
// versions each loop with a run-time overlap check that fails exactly when the buffers coincide,
// and an in-place kernel runs its scalar loop. A kernel whose function carries the attribute
// kParallelLoopsAttribute (compiler/codegen/emit_mlir.h) promises that no iteration of its loops
// touches an element another iteration touches; AnnotateParallelLoops states that to LLVM the
// standard way (every memory access in one access group, every loop's llvm.loop metadata listing
// it in llvm.loop.parallel_accesses), so those loops vectorize without overlap checks. The
// attribute is removed afterwards; functions without it are left alone.
#pragma once

namespace llvm {
class Module;
}

namespace kiln::compiler::internal {

// Returns the number of loops annotated.
int AnnotateParallelLoops(llvm::Module& module);

}  // namespace kiln::compiler::internal
