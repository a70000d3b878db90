#include "compiler/mlir/common.h"

#include <cstdlib>
#include <fstream>
#include <mutex>

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/LLVMCommon/LoweringOptions.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

namespace kiln::compiler::internal {
namespace {

// A math op on f32/f64 -> an llvm.call of `f32_name`/`f64_name` (libm on the host, libdevice on
// the device), declared in the nearest symbol table.
template <typename Op>
struct MathToCall : public mlir::OpRewritePattern<Op> {
  MathToCall(mlir::MLIRContext* context, std::string f32_name, std::string f64_name)
      : mlir::OpRewritePattern<Op>(context, /*benefit=*/2),
        f32_name(std::move(f32_name)),
        f64_name(std::move(f64_name)) {}
  mlir::LogicalResult matchAndRewrite(Op op, mlir::PatternRewriter& rewriter) const override {
    mlir::Type type = op.getType();
    if (!type.isF64() && !type.isF32()) return mlir::failure();
    const std::string& name = type.isF64() ? f64_name : f32_name;
    mlir::Operation* table = mlir::SymbolTable::getNearestSymbolTable(op);
    mlir::Operation* fn = mlir::SymbolTable::lookupSymbolIn(table, name);
    if (!fn) {
      mlir::OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(&table->getRegion(0).front());
      fn = rewriter.create<mlir::LLVM::LLVMFuncOp>(op.getLoc(), name,
                                                   mlir::LLVM::LLVMFunctionType::get(type, {type}));
    }
    rewriter.replaceOpWithNewOp<mlir::LLVM::CallOp>(op, mlir::cast<mlir::LLVM::LLVMFuncOp>(fn),
                                                    mlir::ValueRange{op->getOperand(0)});
    return mlir::success();
  }
  std::string f32_name, f64_name;
};

// kiln-expand-math: sin and cos -> libm or libdevice calls (MLIR's f32 approximations lose
// accuracy beyond |x| ~ 10); the other f32 transcendental ops -> polynomial approximations; the
// f64 ones LLVM has no intrinsic for -> libm (host) or libdevice (device; the rest become __nv_*
// calls in convert-gpu-to-nvvm).
struct ExpandMathPass : public mlir::PassWrapper<ExpandMathPass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandMathPass)
  explicit ExpandMathPass(Target target) : target(target) {}
  llvm::StringRef getArgument() const override { return "kiln-expand-math"; }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::math::MathDialect, mlir::func::FuncDialect,
                    mlir::LLVM::LLVMDialect, mlir::vector::VectorDialect>();
  }
  void runOnOperation() override {
    const std::string prefix = target == Target::kHost ? "" : "__nv_";
    mlir::RewritePatternSet trig(&getContext());
    trig.add<MathToCall<mlir::math::SinOp>>(&getContext(), prefix + "sinf", prefix + "sin");
    trig.add<MathToCall<mlir::math::CosOp>>(&getContext(), prefix + "cosf", prefix + "cos");
    if (mlir::failed(mlir::applyPatternsAndFoldGreedily(getOperation(), std::move(trig))))
      return signalPassFailure();
    mlir::RewritePatternSet approx(&getContext());
    mlir::populateMathPolynomialApproximationPatterns(approx);
    if (mlir::failed(mlir::applyPatternsAndFoldGreedily(getOperation(), std::move(approx))))
      return signalPassFailure();
    mlir::RewritePatternSet calls(&getContext());
    if (target == Target::kHost)
      mlir::populateMathToLibmConversionPatterns(calls, /*benefit=*/1);
    else
      calls.add<MathToCall<mlir::math::ErfOp>>(&getContext(), "__nv_erff", "__nv_erf");
    if (mlir::failed(mlir::applyPatternsAndFoldGreedily(getOperation(), std::move(calls))))
      signalPassFailure();
  }
  Target target;
};

}  // namespace

std::unique_ptr<mlir::MLIRContext> MakeContext() {
  mlir::DialectRegistry registry;
  registry.insert<mlir::AffineDialect, mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect,
                  mlir::func::FuncDialect, mlir::gpu::GPUDialect, mlir::linalg::LinalgDialect,
                  mlir::LLVM::LLVMDialect, mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::NVVM::NVVMDialect, mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
  mlir::registerAllToLLVMIRTranslations(registry);
  auto context =
      std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  return context;
}

DiagnosticLog::DiagnosticLog(mlir::MLIRContext* context) : context_(context) {
  handler_id_ = context->getDiagEngine().registerHandler([this](mlir::Diagnostic& d) {
    std::string line;
    llvm::raw_string_ostream os(line);
    os << d.getLocation() << ": " << d;
    for (const mlir::Diagnostic& note : d.getNotes()) os << "\n  note: " << note;
    os.flush();
    if (text_.size() < 16000) text_ += (text_.empty() ? "" : "\n") + line;
    return mlir::success();
  });
}

DiagnosticLog::~DiagnosticLog() { context_->getDiagEngine().eraseHandler(handler_id_); }

Error DiagnosticLog::Fail(ErrorCode code, const std::string& what) const {
  return Error(code, what + (text_.empty() ? "" : ":\n" + text_));
}

Result<mlir::OwningOpRef<mlir::ModuleOp>> ParseModule(mlir::MLIRContext& context,
                                                      const std::string& text,
                                                      const DiagnosticLog& log) {
  mlir::ParserConfig config(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(text, config);
  if (!module) return log.Fail(ErrorCode::kInvalidArgument, "invalid MLIR module");
  return module;
}

void AddFrontPasses(mlir::OpPassManager& module_pm, Target target) {
  module_pm.addPass(mlir::createCanonicalizerPass());
  mlir::OpPassManager& fpm = module_pm.nest<mlir::func::FuncOp>();
  fpm.addPass(target == Target::kHost ? mlir::createConvertLinalgToLoopsPass()
                                      : mlir::createConvertLinalgToParallelLoopsPass());
}

void AddScalarPasses(mlir::OpPassManager& pm, Target target) {
  pm.addPass(std::make_unique<ExpandMathPass>(target));
  pm.addPass(mlir::createConvertSCFToCFPass());
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());
}

Status RunPasses(mlir::PassManager& pm, mlir::ModuleOp module, const DiagnosticLog& log,
                 const std::string& what) {
  if (mlir::failed(pm.run(module))) return log.Fail(ErrorCode::kUnimplemented, what);
  return OkStatus();
}

Result<HostModule> ParseAndLowerForHost(const std::string& mlir_text) {
  InitializeLlvmTargets();
  HostModule host;
  host.context = MakeContext();
  host.log = std::make_unique<DiagnosticLog>(host.context.get());
  KILN_ASSIGN_OR_RETURN(host.module, ParseModule(*host.context, mlir_text, *host.log));
  mlir::MLIRContext& context = *host.context;
  mlir::PassManager pm(&context);
  AddFrontPasses(pm, Target::kHost);
  AddScalarPasses(pm, Target::kHost);
  pm.addPass(mlir::createConvertVectorToLLVMPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createMemRefToLLVMConversionPass());
  mlir::LowerToLLVMOptions llvm_options(&context);
  llvm_options.useBarePtrCallConv = true;
  pm.addPass(mlir::createConvertFuncToLLVMPass(llvm_options));
  pm.addPass(mlir::cf::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  KILN_RETURN_IF_ERROR(
      RunPasses(pm, *host.module, *host.log, "lowering the module to LLVM failed"));
  return host;
}

llvm::CodeGenOpt::Level CodeGenLevel(int opt_level) {
  return opt_level <= 0   ? llvm::CodeGenOpt::None
         : opt_level == 1 ? llvm::CodeGenOpt::Less
         : opt_level == 2 ? llvm::CodeGenOpt::Default
                          : llvm::CodeGenOpt::Aggressive;
}

std::string ToString(llvm::Error error) {
  std::string s;
  llvm::handleAllErrors(std::move(error), [&](const llvm::ErrorInfoBase& e) {
    s += (s.empty() ? "" : "; ") + e.message();
  });
  return s;
}

Result<std::unique_ptr<llvm::TargetMachine>> HostTargetMachine(int opt_level, bool pic) {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return MakeError(ErrorCode::kInternal, "no host target: ", ToString(builder.takeError()));
  builder->setCodeGenOptLevel(CodeGenLevel(opt_level));
  if (pic) builder->setRelocationModel(llvm::Reloc::PIC_);
  auto tm = builder->createTargetMachine();
  if (!tm) return MakeError(ErrorCode::kInternal, "no host target: ", ToString(tm.takeError()));
  return std::move(*tm);
}

std::string DumpDir() {
  const char* dir = std::getenv("KILN_DUMP_DIR");
  return dir ? dir : "";
}

void WriteDump(const std::string& file, const std::string& text) {
  std::string dir = DumpDir();
  if (dir.empty()) return;
  std::ofstream out(dir + "/" + file, std::ios::binary);
  out << text;
}

void InitializeLlvmTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

}  // namespace kiln::compiler::internal
