// Kernel generation for NVIDIA GPUs: lowers the same module of kernels that the JIT runs on the
// host (compiler/codegen/emit_mlir.h) to PTX, keeping the generator target-neutral.
//
// Contract: EmitPtx(text, sm) parses the module and lowers it with the pipeline it shares with the
// host JIT (compiler/mlir/common.h), except that linalg becomes scf.parallel loops; their innermost
// dimension is tiled by 256 (64 for rank 3), mapped to GPU blocks and threads, outlined into one
// gpu.module per kernel (kernel `NAME_kernel` in module `NAME_kernel`), converted to NVVM,
// translated to LLVM IR, linked with CUDA's libdevice when it calls __nv_* math functions,
// optimized at O3 and compiled by LLVM's NVPTX back end for `sm_<sm>` (PTX ISA 7.0, or 7.8 for sm
// >= 89). The result is the PTX text of every kernel; the host side (gpu.launch_func) is not
// emitted: there is no launch ABI yet. Errors carry MLIR's diagnostics; nothing aborts. With
// $KILN_DUMP_DIR set the PTX is also written to <dir>/kiln_kernels.sm_<sm>.ptx.
#pragma once

#include <string>

#include "ir/status.h"

namespace kiln::compiler {

// CUDA's libdevice bitcode: $KILN_LIBDEVICE, else /usr/local/cuda/nvvm/libdevice/libdevice.10.bc.
std::string LibdevicePath();

Result<std::string> EmitPtx(const std::string& mlir_text, int sm);

}  // namespace kiln::compiler
