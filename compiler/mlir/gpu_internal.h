// Internal to compiler/mlir (included only by gpu_kernels.cc, gpu_row_reductions.cc,
// gpu_vector_width.cc, gpu_host_translation.cc and ptx.cc): the stages of LowerKernelsForGpu; see
// gpu_kernels.h for the contract. All but the first work on an outlined module (host funcs holding
// gpu.launch_func ops, and one gpu.module per GPU function).
#pragma once

#include <string>

#include "ir/status.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln::compiler::internal {

class DiagnosticLog;

// Row kernels of at least this many columns get one block per row (below it, one thread a row).
inline constexpr int64_t kMinColumnsForBlockReduction = 32;

// Before the loops are mapped to the GPU: every row kernel (an scf.parallel over rows whose
// column loops fold f32 values, as emit_reduction.cc writes them) of at least
// kMinColumnsForBlockReduction columns becomes a gpu.launch of one block per row whose threads
// stride over the columns, folding partial results with gpu.all_reduce.
void MapRowReductionsToBlocks(mlir::ModuleOp module);

// Elements a thread of a contiguous elementwise loop takes (WidenContiguousLoops).
inline constexpr int64_t kVectorWidth = 4;

// After the loops are collapsed, before they are tiled into blocks: every outermost 1-D
// scf.parallel over [0, N), N a multiple of kVectorWidth, whose body accesses rank-1 memrefs only
// at the induction variable (or at constant indices) becomes a loop over N / kVectorWidth groups
// whose body is the old one for each of the group's elements, op by op (the loads of a buffer
// adjacent, then the stores), after memref.assume_alignment 16 of those buffers (every device
// buffer starts 16-byte aligned), so that LLVM's load/store vectorizer makes 128-bit accesses.
void WidenContiguousLoops(mlir::ModuleOp module);

// The host translation of every gpu.func of `module`, as the text of a new module.
Result<std::string> TranslateGpuFunctionsForHost(mlir::ModuleOp module);

// Lowers the gpu.modules of `module` to NVVM (in place); then PtxForArchitecture translates them
// to LLVM IR and emits PTX for sm_<sm> (any number of times).
Status LowerGpuModulesToNvvm(mlir::ModuleOp module, const DiagnosticLog& log);
Result<std::string> PtxForArchitecture(mlir::ModuleOp module, int sm, const DiagnosticLog& log);

}  // namespace kiln::compiler::internal
