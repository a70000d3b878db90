#include "compiler/mlir/jit.h"

#include "compiler/mlir/common.h"
#include "compiler/mlir/parallel_loops.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"
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

}  // namespace

Result<std::unique_ptr<JitModule>> JitModule::Compile(const std::string& mlir_text,
                                                      const JitOptions& options) {
  internal::WriteDump(options.name + ".mlir", mlir_text);
  KILN_ASSIGN_OR_RETURN(internal::HostModule host, internal::ParseAndLowerForHost(mlir_text));
  mlir::OwningOpRef<mlir::ModuleOp>& module = host.module;
  const internal::DiagnosticLog& log = *host.log;

  // The host's CPU name and features, for both the IR optimizer (so the vectorizer knows the
  // vector width) and the code generator (ExecutionEngine uses the same detectHost()).
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm,
                        internal::HostTargetMachine(options.opt_level, /*pic=*/false));
  auto optimize = mlir::makeOptimizingTransformer(options.opt_level, 0, tm.get());
  std::string optimize_error;
  bool dump = !internal::DumpDir().empty();
  auto transformer = [&](llvm::Module* m) -> llvm::Error {
    internal::AnnotateParallelLoops(*m);
    // ExecutionEngine::create aborts if the transformer fails: report the failure afterwards.
    if (llvm::Error e = optimize(m)) optimize_error = internal::ToString(std::move(e));
    if (dump) {
      std::string ir;
      llvm::raw_string_ostream os(ir);
      m->print(os, nullptr);
      internal::WriteDump(options.name + ".ll", os.str());
      internal::WriteDump(options.name + ".s", AssemblyOf(*m, *tm));
    }
    return llvm::Error::success();
  };
  mlir::ExecutionEngineOptions engine_options;
  engine_options.transformer = transformer;
  engine_options.jitCodeGenOptLevel = internal::CodeGenLevel(options.opt_level);
  engine_options.enableGDBNotificationListener = false;
  engine_options.enablePerfNotificationListener = false;
  auto engine = mlir::ExecutionEngine::create(*module, engine_options);
  if (!engine)
    return log.Fail(ErrorCode::kUnimplemented,
                    "JIT compilation failed: " + internal::ToString(engine.takeError()));
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
  jit->cpu_ = tm->getTargetCPU().str();
  jit->features_ = tm->getTargetFeatureString().str();
  return jit;
}

Result<PackedKernel> JitModule::Lookup(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto fn = impl_->engine->lookupPacked(name);
  if (!fn)
    return MakeError(ErrorCode::kNotFound, "no kernel '", name,
                     "' in the JIT module: ", internal::ToString(fn.takeError()));
  return *fn;
}

}  // namespace kiln::compiler
