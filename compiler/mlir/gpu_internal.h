// Internal to compiler/mlir (included only by gpu_kernels.cc, gpu_host_translation.cc and
// ptx.cc): the stages of LowerKernelsForGpu that work on an outlined module (host funcs holding
// gpu.launch_func ops, and one gpu.module per GPU function); see gpu_kernels.h for the contract.
#pragma once

#include <string>

#include "ir/status.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln::compiler::internal {

class DiagnosticLog;

// The host translation of every gpu.func of `module`, as the text of a new module.
Result<std::string> TranslateGpuFunctionsForHost(mlir::ModuleOp module);

// Lowers the gpu.modules of `module` to NVVM (in place); then PtxForArchitecture translates them
// to LLVM IR and emits PTX for sm_<sm> (any number of times).
Status LowerGpuModulesToNvvm(mlir::ModuleOp module, const DiagnosticLog& log);
Result<std::string> PtxForArchitecture(mlir::ModuleOp module, int sm, const DiagnosticLog& log);

}  // namespace kiln::compiler::internal
