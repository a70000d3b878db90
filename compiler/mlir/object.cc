#include "compiler/mlir/object.h"

#include "compiler/mlir/common.h"
#include "compiler/mlir/parallel_loops.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"

namespace kiln::compiler {
namespace {

// For every function defined in `module`, `_mlir_NAME(ptr args)`: loads argument i from the
// pointer args[i] and calls NAME (what mlir::ExecutionEngine generates for the JIT).
void AddPackedEntryPoints(llvm::Module& module) {
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  std::vector<llvm::Function*> functions;
  for (llvm::Function& f : module)
    if (!f.isDeclaration()) functions.push_back(&f);
  for (llvm::Function* f : functions) {
    auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
    auto* packed = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                                          "_mlir_" + f->getName(), module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", packed));
    llvm::Value* args = packed->getArg(0);
    std::vector<llvm::Value*> call_args;
    for (llvm::Argument& a : f->args()) {
      llvm::Value* slot = b.CreateGEP(ptr, args, b.getInt64(a.getArgNo()));
      llvm::Value* arg_ptr = b.CreateLoad(ptr, slot);
      call_args.push_back(b.CreateLoad(a.getType(), arg_ptr));
    }
    b.CreateCall(f, call_args);
    b.CreateRetVoid();
  }
}

}  // namespace

Result<HostObject> CompileHostObject(const std::string& mlir_text, const JitOptions& options) {
  KILN_ASSIGN_OR_RETURN(internal::HostModule host, internal::ParseAndLowerForHost(mlir_text));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm,
                        internal::HostTargetMachine(options.opt_level, /*pic=*/true));

  llvm::LLVMContext llvm_context;
  std::unique_ptr<llvm::Module> llvm_module =
      mlir::translateModuleToLLVMIR(*host.module, llvm_context, options.name);
  if (!llvm_module)
    return host.log->Fail(ErrorCode::kUnimplemented, "translating the module to LLVM IR failed");
  llvm_module->setDataLayout(tm->createDataLayout());
  llvm_module->setTargetTriple(tm->getTargetTriple().str());
  AddPackedEntryPoints(*llvm_module);
  internal::AnnotateParallelLoops(*llvm_module);
  auto optimize = mlir::makeOptimizingTransformer(options.opt_level, 0, tm.get());
  if (llvm::Error e = optimize(llvm_module.get()))
    return MakeError(ErrorCode::kInternal,
                     "LLVM optimization failed: ", internal::ToString(std::move(e)));

  HostObject object;
  llvm::SmallString<0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager codegen;
  if (tm->addPassesToEmitFile(codegen, os, nullptr, llvm::CGFT_ObjectFile))
    return MakeError(ErrorCode::kInternal, "the host target cannot emit object files");
  codegen.run(*llvm_module);
  object.bytes = std::string(bytes);
  object.cpu = tm->getTargetCPU().str();
  object.features = tm->getTargetFeatureString().str();
  return object;
}

}  // namespace kiln::compiler
