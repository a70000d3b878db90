#include "compiler/mlir/gpu_kernels.h"

#include <cstdlib>
#include <set>

#include "compiler/mlir/common.h"
#include "compiler/mlir/gpu_internal.h"
#include "llvm/ADT/BitVector.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace kiln::compiler {
namespace {

// Replaces each kernel's begin/end arguments with the constants 0 and its rows, and drops them.
Status SpecializeRows(mlir::ModuleOp module, const std::map<std::string, int64_t>& rows) {
  for (mlir::func::FuncOp func : module.getOps<mlir::func::FuncOp>()) {
    const std::string name = func.getName().str();
    auto it = rows.find(name);
    if (it == rows.end())
      return MakeError(ErrorCode::kInvalidArgument, "kernel '", name, "' has no row count");
    if (func.getNumArguments() < 2 || !func.getArgument(0).getType().isInteger(64) ||
        !func.getArgument(1).getType().isInteger(64))
      return MakeError(ErrorCode::kInvalidArgument, "kernel '", name,
                       "' does not start with the (begin: i64, end: i64) arguments");
    mlir::OpBuilder b(func.getBody());
    mlir::Location loc = func.getLoc();
    func.getArgument(0).replaceAllUsesWith(b.create<mlir::arith::ConstantIntOp>(loc, 0, 64));
    func.getArgument(1).replaceAllUsesWith(
        b.create<mlir::arith::ConstantIntOp>(loc, it->second, 64));
    llvm::BitVector erase(func.getNumArguments());
    erase.set(0, 2);
    func.eraseArguments(erase);
  }
  return OkStatus();
}

// A loop of one iteration (a kernel of one element or one row, or one of a kernel's loops, e.g. a
// final sum over rows) has been inlined by canonicalization: each run of work left between the
// function's loops becomes the body of a one-iteration scf.parallel again, in place, so that it
// still runs on the device (a run whose values are used after it is left, and fails later).
void WrapSerialWork(mlir::ModuleOp module) {
  for (mlir::func::FuncOp func : module.getOps<mlir::func::FuncOp>()) {
    mlir::Block& body = func.getBody().front();
    std::vector<std::vector<mlir::Operation*>> runs(1);
    for (mlir::Operation& op : body.without_terminator()) {
      if (mlir::isa<mlir::scf::ParallelOp>(op)) {
        if (!runs.back().empty()) runs.emplace_back();
      } else if (!mlir::isa<mlir::arith::ConstantOp>(op)) {
        runs.back().push_back(&op);
      }
    }
    for (const std::vector<mlir::Operation*>& run : runs) {
      if (run.empty()) continue;
      const std::set<mlir::Operation*> members(run.begin(), run.end());
      bool escapes = false;
      for (mlir::Operation* op : run)
        for (mlir::Operation* user : op->getUsers())
          escapes = escapes || !members.count(body.findAncestorOpInBlock(*user));
      if (escapes) continue;
      mlir::OpBuilder b(run.front());
      mlir::Location loc = run.front()->getLoc();
      mlir::Value zero = b.create<mlir::arith::ConstantIndexOp>(loc, 0);
      mlir::Value one = b.create<mlir::arith::ConstantIndexOp>(loc, 1);
      auto loop = b.create<mlir::scf::ParallelOp>(loc, mlir::ValueRange{zero},
                                                  mlir::ValueRange{one}, mlir::ValueRange{one});
      for (mlir::Operation* op : run) op->moveBefore(loop.getBody()->getTerminator());
    }
  }
}

// One thread per element (per row for row reductions): every outermost scf.parallel is collapsed
// into one dimension and tiled into blocks of kThreadsPerBlock threads (with in-bounds guards).
void CollapseAndTile(mlir::ModuleOp module) {
  std::vector<mlir::scf::ParallelOp> loops;
  module.walk([&](mlir::scf::ParallelOp op) {
    if (!op->getParentOfType<mlir::scf::ParallelOp>()) loops.push_back(op);
  });
  for (mlir::scf::ParallelOp op : loops) {
    if (op.getNumLoops() > 1) {
      std::vector<unsigned> all(op.getNumLoops());
      for (unsigned d = 0; d < all.size(); ++d) all[d] = d;
      mlir::collapseParallelLoops(op, {all});
    }
  }
  internal::WidenContiguousLoops(module);
  loops.clear();
  module.walk([&](mlir::scf::ParallelOp op) {
    if (!op->getParentOfType<mlir::scf::ParallelOp>()) loops.push_back(op);
  });
  for (mlir::scf::ParallelOp op : loops)
    mlir::scf::tileParallelLoop(op, {kThreadsPerBlock}, /*noMinMaxBounds=*/true);
}

// Outlining names a second kernel module of one function NAME_kernel_0 but leaves its function
// NAME_kernel: each GPU function takes its module's (unique) name, so that names are unique in the
// device code and in the host translation.
void MakeKernelNamesUnique(mlir::ModuleOp module) {
  for (auto gpu_module : module.getOps<mlir::gpu::GPUModuleOp>())
    for (auto kernel : gpu_module.getOps<mlir::gpu::GPUFuncOp>())
      if (kernel.getName() != gpu_module.getName()) kernel.setName(gpu_module.getName());
  module.walk([](mlir::gpu::LaunchFuncOp launch) {
    mlir::StringAttr root = launch.getKernel().getRootReference();
    launch.setKernelAttr(mlir::SymbolRefAttr::get(
        root, {mlir::FlatSymbolRefAttr::get(launch.getContext(), root.getValue())}));
  });
}

Result<int64_t> ConstantOf(mlir::Value v, const std::string& kernel, const char* what) {
  std::optional<int64_t> c = mlir::getConstantIntValue(v);
  if (!c)
    return MakeError(ErrorCode::kUnimplemented, "kernel '", kernel, "': its ", what,
                     " is not a compile-time constant");
  return *c;
}

// The launches of each host function, in order; nothing else may remain on the host.
Result<std::vector<DeviceKernel>> ExtractLaunches(mlir::ModuleOp module) {
  std::vector<DeviceKernel> kernels;
  for (mlir::func::FuncOp func : module.getOps<mlir::func::FuncOp>()) {
    DeviceKernel kernel;
    kernel.name = func.getName().str();
    for (mlir::Operation& op : func.getBody().front()) {
      if (mlir::isa<mlir::arith::ConstantOp, mlir::func::ReturnOp>(op)) continue;
      auto launch = mlir::dyn_cast<mlir::gpu::LaunchFuncOp>(op);
      if (!launch)
        return MakeError(ErrorCode::kUnimplemented, "kernel '", kernel.name, "': '",
                         op.getName().getStringRef().str(),
                         "' would run on the host, outside any GPU launch");
      KernelLaunch l;
      l.function = launch.getKernelName().str();
      mlir::gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
      mlir::gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
      mlir::Value sizes[6] = {grid.x, grid.y, grid.z, block.x, block.y, block.z};
      for (int d = 0; d < 6; ++d) {
        KILN_ASSIGN_OR_RETURN(int64_t size, ConstantOf(sizes[d], kernel.name, "launch size"));
        (d < 3 ? l.grid[d] : l.block[d - 3]) = size;
      }
      for (mlir::Value operand : launch.getKernelOperands()) {
        KernelLaunch::Arg arg;
        if (auto block_arg = operand.dyn_cast<mlir::BlockArgument>();
            block_arg && block_arg.getOwner() == &func.getBody().front()) {
          auto type = operand.getType().dyn_cast<mlir::MemRefType>();
          if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
            return MakeError(ErrorCode::kUnimplemented, "kernel '", kernel.name, "': argument ",
                             block_arg.getArgNumber(), " is not a statically shaped dense memref");
          arg.operand = static_cast<int>(block_arg.getArgNumber());
          arg.dims.assign(type.getShape().begin(), type.getShape().end());
        } else {
          KILN_ASSIGN_OR_RETURN(arg.value, ConstantOf(operand, kernel.name, "launch argument"));
        }
        l.args.push_back(std::move(arg));
      }
      kernel.launches.push_back(std::move(l));
    }
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}

}  // namespace

std::string LibdevicePath() {
  const char* env = std::getenv("KILN_LIBDEVICE");
  return env && *env ? env : "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
}

Result<GpuKernels> LowerKernelsForGpu(const std::string& mlir_text,
                                      const std::map<std::string, int64_t>& rows,
                                      const GpuLoweringOptions& options) {
  internal::InitializeLlvmTargets();
  std::unique_ptr<mlir::MLIRContext> context = internal::MakeContext();
  internal::DiagnosticLog log(context.get());
  KILN_ASSIGN_OR_RETURN(mlir::OwningOpRef<mlir::ModuleOp> module,
                        internal::ParseModule(*context, mlir_text, log));
  KILN_RETURN_IF_ERROR(SpecializeRows(*module, rows));

  mlir::PassManager front(context.get());
  internal::AddFrontPasses(front, internal::Target::kNvptx);  // canonicalizes first: rows folded
  KILN_RETURN_IF_ERROR(internal::RunPasses(front, *module, log, "lowering linalg failed"));
  WrapSerialWork(*module);
  internal::MapRowReductionsToBlocks(*module);
  CollapseAndTile(*module);

  mlir::PassManager pm(context.get());
  mlir::OpPassManager& fpm = pm.nest<mlir::func::FuncOp>();
  fpm.addPass(mlir::createGpuMapParallelLoopsPass());
  fpm.addPass(mlir::createParallelLoopToGpuPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createGpuLauchSinkIndexComputationsPass());
  pm.addPass(mlir::createGpuKernelOutliningPass());
  pm.addPass(mlir::createCanonicalizerPass());
  KILN_RETURN_IF_ERROR(internal::RunPasses(pm, *module, log, "mapping kernels to the GPU failed"));

  MakeKernelNamesUnique(*module);
  GpuKernels out;
  KILN_ASSIGN_OR_RETURN(out.kernels, ExtractLaunches(*module));
  if (options.host_translation) {
    KILN_ASSIGN_OR_RETURN(out.host_translation, internal::TranslateGpuFunctionsForHost(*module));
    internal::WriteDump("kiln_kernels.sim.mlir", out.host_translation);
  }
  if (!options.sms.empty()) {
    KILN_RETURN_IF_ERROR(internal::LowerGpuModulesToNvvm(*module, log));
    for (int sm : options.sms) {
      KILN_ASSIGN_OR_RETURN(out.ptx[sm], internal::PtxForArchitecture(*module, sm, log));
    }
  }
  return out;
}

}  // namespace kiln::compiler
