#include "compiler/mlir/jit.h"

#include "compiler/mlir/common.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/LLVMCommon/LoweringOptions.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/Pass.h"

namespace kiln::compiler {

struct JitModule::Impl {
  std::unique_ptr<mlir::ExecutionEngine> engine;
};

JitModule::JitModule() : impl_(std::make_unique<Impl>()) {}
JitModule::~JitModule() = default;

namespace {

std::string ToString(llvm::Error error) {
  std::string s;
  llvm::handleAllErrors(std::move(error), [&](const llvm::ErrorInfoBase& e) {
    s += (s.empty() ? "" : "; ") + e.message();
  });
  return s;
}

std::string AssemblyOf(const llvm::Module& module, llvm::TargetMachine& tm) {
  std::unique_ptr<llvm::Module> clone = llvm::CloneModule(module);
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_AssemblyFile))
    return "; the target cannot emit assembly\n";
  pm.run(*clone);
  return std::string(text);
}

llvm::CodeGenOpt::Level CodeGenLevel(int level) {
  return level <= 0   ? llvm::CodeGenOpt::None
         : level == 1 ? llvm::CodeGenOpt::Less
         : level == 2 ? llvm::CodeGenOpt::Default
                      : llvm::CodeGenOpt::Aggressive;
}

}  // namespace

Result<std::unique_ptr<JitModule>> JitModule::Compile(const std::string& mlir_text,
                                                      const JitOptions& options) {
  internal::InitializeLlvmTargets();
  internal::WriteDump(options.name + ".mlir", mlir_text);
  std::unique_ptr<mlir::MLIRContext> context = internal::MakeContext();
  internal::DiagnosticLog log(context.get());
  KILN_ASSIGN_OR_RETURN(mlir::OwningOpRef<mlir::ModuleOp> module,
                        internal::ParseModule(*context, mlir_text, log));

  mlir::PassManager pm(context.get());
  internal::AddFrontPasses(pm, internal::Target::kHost);
  internal::AddScalarPasses(pm, internal::Target::kHost);
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createMemRefToLLVMConversionPass());
  mlir::LowerToLLVMOptions llvm_options(context.get());
  llvm_options.useBarePtrCallConv = true;
  pm.addPass(mlir::createConvertFuncToLLVMPass(llvm_options));
  pm.addPass(mlir::cf::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  KILN_RETURN_IF_ERROR(internal::RunPasses(pm, *module, log, "lowering the module to LLVM failed"));

  // The host's CPU name and features, for both the IR optimizer (so the vectorizer knows the
  // vector width) and the code generator (ExecutionEngine uses the same detectHost()).
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return MakeError(ErrorCode::kInternal, "no host target: ", ToString(builder.takeError()));
  builder->setCodeGenOptLevel(CodeGenLevel(options.opt_level));
  auto tm = builder->createTargetMachine();
  if (!tm) return MakeError(ErrorCode::kInternal, "no host target: ", ToString(tm.takeError()));
  auto optimize = mlir::makeOptimizingTransformer(options.opt_level, 0, tm->get());
  std::string optimize_error;
  bool dump = !internal::DumpDir().empty();
  auto transformer = [&](llvm::Module* m) -> llvm::Error {
    // ExecutionEngine::create aborts if the transformer fails: report the failure afterwards.
    if (llvm::Error e = optimize(m)) optimize_error = ToString(std::move(e));
    if (dump) {
      std::string ir;
      llvm::raw_string_ostream os(ir);
      m->print(os, nullptr);
      internal::WriteDump(options.name + ".ll", os.str());
      internal::WriteDump(options.name + ".s", AssemblyOf(*m, **tm));
    }
    return llvm::Error::success();
  };
  mlir::ExecutionEngineOptions engine_options;
  engine_options.transformer = transformer;
  engine_options.jitCodeGenOptLevel = CodeGenLevel(options.opt_level);
  engine_options.enableGDBNotificationListener = false;
  engine_options.enablePerfNotificationListener = false;
  auto engine = mlir::ExecutionEngine::create(*module, engine_options);
  if (!engine)
    return log.Fail(ErrorCode::kUnimplemented,
                    "JIT compilation failed: " + ToString(engine.takeError()));
  if (!optimize_error.empty())
    return MakeError(ErrorCode::kInternal, "LLVM optimization failed: ", optimize_error);

  std::unique_ptr<JitModule> jit(new JitModule());
  jit->impl_->engine = std::move(*engine);
  // LLJIT compiles on the first lookup: do it now, so that Compile pays for it.
  std::string first;
  module->walk([&](mlir::LLVM::LLVMFuncOp f) {
    if (first.empty() && !f.isExternal()) first = f.getName().str();
  });
  if (!first.empty()) KILN_RETURN_IF_ERROR(jit->Lookup(first).status());
  jit->cpu_ = (*tm)->getTargetCPU().str();
  jit->features_ = (*tm)->getTargetFeatureString().str();
  return jit;
}

Result<PackedKernel> JitModule::Lookup(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto fn = impl_->engine->lookupPacked(name);
  if (!fn)
    return MakeError(ErrorCode::kNotFound, "no kernel '", name,
                     "' in the JIT module: ", ToString(fn.takeError()));
  return *fn;
}

}  // namespace kiln::compiler
