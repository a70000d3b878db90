// Internal to compiler/mlir (included only by gpu_kernels.cc, gpu_row_reductions.cc,
// gpu_host_translation.cc and ptx.cc): the stages of LowerKernelsForGpu; see gpu_kernels.h for
// the contract. All but the first work on an outlined module (host funcs holding gpu.launch_func
// ops, and one gpu.module per GPU function).
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

// The host translation of every gpu.func of `module`, as the text of a new module.
Result<std::string> TranslateGpuFunctionsForHost(mlir::ModuleOp module);

// Lowers the gpu.modules of `module` to NVVM (in place); then PtxForArchitecture translates them
// to LLVM IR and emits PTX for sm_<sm> (any number of times).
Status LowerGpuModulesToNvvm(mlir::ModuleOp module, const DiagnosticLog& log);
Result<std::string> PtxForArchitecture(mlir::ModuleOp module, int sm, const DiagnosticLog& log);

}  // namespace kiln::compiler::internal
