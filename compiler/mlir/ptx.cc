// PTX from an outlined module: gpu.modules -> NVVM -> LLVM IR (+ libdevice) -> NVPTX.
#include <cstdlib>
#include <set>

#include "compiler/mlir/common.h"
#include "compiler/mlir/gpu_internal.h"
#include "compiler/mlir/gpu_kernels.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Target/LLVMIR/Export.h"

namespace kiln::compiler::internal {
namespace {

constexpr char kTriple[] = "nvptx64-nvidia-cuda";

Result<std::unique_ptr<llvm::TargetMachine>> MakeTargetMachine(int sm) {
  static const std::set<int> known = {20, 21, 30, 32, 35, 37, 50, 52, 53, 60,
                                      61, 62, 70, 72, 75, 80, 86, 87, 89, 90};
  if (!known.count(sm))
    return MakeError(ErrorCode::kInvalidArgument, "sm_", sm,
                     " is not a GPU architecture LLVM 16 knows");
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (!target) return MakeError(ErrorCode::kUnimplemented, "no NVPTX target in LLVM: ", error);
  const char* ptx = sm >= 89 ? "+ptx78" : sm == 87 ? "+ptx74" : sm == 86 ? "+ptx71" : "+ptx70";
  return std::unique_ptr<llvm::TargetMachine>(
      target->createTargetMachine(kTriple, "sm_" + std::to_string(sm), ptx, llvm::TargetOptions(),
                                  std::nullopt, std::nullopt, llvm::CodeGenOpt::Aggressive));
}

Status LinkLibdevice(llvm::Module& module) {
  bool needed = false;
  for (const llvm::Function& f : module)
    needed = needed || (f.isDeclaration() && f.getName().startswith("__nv_"));
  if (!needed) return OkStatus();
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> lib = llvm::parseIRFile(LibdevicePath(), diag, module.getContext());
  if (!lib)
    return MakeError(ErrorCode::kNotFound, "cannot read CUDA libdevice '", LibdevicePath(),
                     "' (set KILN_LIBDEVICE): ", diag.getMessage().str());
  lib->setTargetTriple(module.getTargetTriple());
  lib->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(lib), llvm::Linker::Flags::LinkOnlyNeeded))
    return MakeError(ErrorCode::kInternal, "linking CUDA libdevice failed");
  return OkStatus();
}

// The device code of every gpu.module in one LLVM module; kernels stay external, the rest internal.
Result<std::unique_ptr<llvm::Module>> TranslateDeviceCode(mlir::ModuleOp module,
                                                          llvm::LLVMContext& context,
                                                          llvm::TargetMachine& tm,
                                                          const DiagnosticLog& log) {
  auto all = std::make_unique<llvm::Module>("kiln_kernels", context);
  all->setTargetTriple(kTriple);
  all->setDataLayout(tm.createDataLayout());
  std::set<std::string> kernels;
  for (auto gpu_module : module.getOps<mlir::gpu::GPUModuleOp>()) {
    std::unique_ptr<llvm::Module> m =
        mlir::translateModuleToLLVMIR(gpu_module, context, gpu_module.getName());
    if (!m) return log.Fail(ErrorCode::kUnimplemented, "translating device code to LLVM IR failed");
    m->setTargetTriple(kTriple);
    m->setDataLayout(all->getDataLayout());
    for (const llvm::Function& f : *m)
      if (!f.isDeclaration()) kernels.insert(f.getName().str());
    if (llvm::Linker::linkModules(*all, std::move(m)))
      return MakeError(ErrorCode::kInternal, "linking device modules failed");
  }
  KILN_RETURN_IF_ERROR(LinkLibdevice(*all));
  for (llvm::Function& f : *all)
    if (!f.isDeclaration() && !kernels.count(f.getName().str()))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable& g : all->globals())
    if (!g.isDeclaration()) g.setLinkage(llvm::GlobalValue::InternalLinkage);
  return all;
}

}  // namespace

Status LowerGpuModulesToNvvm(mlir::ModuleOp module, const DiagnosticLog& log) {
  mlir::PassManager pm(module.getContext());
  mlir::OpPassManager& gpm = pm.nest<mlir::gpu::GPUModuleOp>();
  AddScalarPasses(gpm, Target::kNvptx);
  gpm.addPass(mlir::createLowerGpuOpsToNVVMOpsPass(/*indexBitwidth=*/64));
  gpm.addPass(mlir::createConvertMathToLLVMPass());
  gpm.addPass(mlir::createReconcileUnrealizedCastsPass());
  return RunPasses(pm, module, log, "lowering to NVVM failed");
}

Result<std::string> PtxForArchitecture(mlir::ModuleOp module, int sm, const DiagnosticLog& log) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, MakeTargetMachine(sm));
  llvm::LLVMContext llvm_context;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> device,
                        TranslateDeviceCode(module, llvm_context, *tm, log));
  if (llvm::Error e = mlir::makeOptimizingTransformer(3, 0, tm.get())(device.get()))
    return MakeError(ErrorCode::kInternal,
                     "optimizing device code failed: ", ToString(std::move(e)));
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager codegen;
  if (tm->addPassesToEmitFile(codegen, os, nullptr, llvm::CGFT_AssemblyFile))
    return MakeError(ErrorCode::kInternal, "the NVPTX target cannot emit PTX");
  codegen.run(*device);
  std::string text(ptx);
  WriteDump("kiln_kernels.sm_" + std::to_string(sm) + ".ptx", text);
  return text;
}

}  // namespace kiln::compiler::internal
