// Kernel generation for CUDA devices: the module of kernels the host JIT runs
// (compiler/codegen/emit_mlir.h) lowered through MLIR's gpu dialect, so that the generator stays
// target-neutral, into (1) the launches of every kernel, (2) PTX for each asked architecture and
// (3) the host translation of every launched GPU function, which the simulated device runs.
//
// Contract of LowerKernelsForGpu(text, rows, options):
// - Every func.func of `text` (kernel ABI of compiler/kernel_spec.h) is specialized to all of its
//   rows: `rows[name]` (the extent of dimension 0 of its KernelSpec::shape, 1 for rank 0) replaces
//   its begin/end arguments, which are dropped, so the GPU function's arguments are the step's
//   operands (inputs, then outputs) in order.
// - linalg becomes scf.parallel (a kernel of one element or one row, whose loop canonicalization
//   removed, gets a one-iteration loop back). A row reduction (softmax, layernorm, sums, max/min
//   over the last axis) of f32 with at least 32 columns gets one block per row: its threads
//   (kThreadsPerBlock, or fewer for narrower rows, a multiple of 32) stride over the columns and
//   fold their partial results with gpu.all_reduce (warp shuffles, then shared memory), thread 0
//   storing the per-row outputs (gpu_row_reductions.cc). Every other outermost loop nest is
//   collapsed into one dimension and tiled by kThreadsPerBlock, one thread per element (narrow or
//   f64 row reductions: one thread per row). Loops are mapped to blocks and threads and outlined
//   (kernel `NAME_kernel`, `NAME_kernel_0`, ... in the order of the loops). Grid and block sizes
//   are compile-time constants, recorded in the launches.
// - The host translation of a GPU function F is `func.func @kiln_sim_F(%block_begin, %block_end,
//   %grid_x, %grid_y, %grid_z, %block_x, %block_y, %block_z: index, %fault: memref<2xi64>, <F's
//   arguments>)` (runtime/executable.h, kSimulatedFunctionPrefix): it runs blocks
//   [block_begin, block_end) of the grid (linearized x fastest) and, in each, every thread of the
//   block in order, with gpu.block_id/thread_id/block_dim/grid_dim replaced by those values. It is
//   the very same kernel body (guards included), only without the GPU. A gpu.all_reduce or
//   gpu.barrier at the top of the body splits it into phases: every thread of the block runs one
//   phase before any runs the next, values crossing phases are kept per thread, and an
//   all_reduce is folded over the block's threads in order between them. A barrier inside control
//   flow, a shuffle or shared memory is refused (kUnimplemented). Every memref.load and
//   memref.store of an argument is bounds-checked in each statically sized dimension (kiln's
//   kernels have no other): an index outside its dimension skips the access (a load gives 0)
//   and sets %fault to [1, the argument's number], which the simulated device reports.
// - PTX: gpu.modules -> NVVM -> LLVM IR, linked with CUDA's libdevice when the code calls __nv_*
//   functions, optimized at O3 and compiled by LLVM's NVPTX back end for sm_<sm> (PTX ISA 7.0, or
//   7.8 for sm >= 89). Kernels keep MLIR's calling convention: a memref argument is passed as its
//   descriptor (allocated pointer, aligned pointer, offset, sizes, strides; see
//   runtime/executable.h, KernelLaunch).
// Errors carry MLIR's diagnostics (kInvalidArgument: the text does not parse; kUnimplemented: a
// kernel does not map to the GPU); nothing aborts. With $KILN_DUMP_DIR set, the PTX is written to
// <dir>/kiln_kernels.sm_<sm>.ptx and the host translations to <dir>/kiln_kernels.sim.mlir.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/executable.h"

namespace kiln::compiler {

inline constexpr int64_t kThreadsPerBlock = 256;

struct GpuLoweringOptions {
  std::vector<int> sms;  // PTX for each of these architectures (none: no PTX)
  bool host_translation = true;
};

struct GpuKernels {
  std::vector<DeviceKernel> kernels;  // one per func.func of the input, by its name
  std::string host_translation;       // MLIR module text (empty unless asked for)
  std::map<int, std::string> ptx;     // by architecture
};

Result<GpuKernels> LowerKernelsForGpu(const std::string& mlir_text,
                                      const std::map<std::string, int64_t>& rows,
                                      const GpuLoweringOptions& options);

// CUDA's libdevice bitcode: $KILN_LIBDEVICE, else /usr/local/cuda/nvvm/libdevice/libdevice.10.bc.
std::string LibdevicePath();

}  // namespace kiln::compiler
