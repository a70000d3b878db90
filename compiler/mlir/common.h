// Internal to compiler/mlir (included only by jit.cc and ptx.cc, so it may use MLIR types): what
// the host (JIT) and device (PTX) lowerings share -- the context, parsing with diagnostics captured
// as text, the target-neutral passes, and KILN_DUMP_DIR dumps.
//
// The shared pipeline, for a module from compiler/codegen/emit_mlir.h:
//   AddFrontPasses:   canonicalize; linalg.generic -> scf.for nests (host) or scf.parallel (device)
//   AddScalarPasses:  kiln-expand-math (sin, cos -> libm calls on the host, libdevice (__nv_*)
//                     on the device; f32 exp/log/tanh/erf/expm1/log1p -> MLIR's polynomial
//                     approximations (vectorizable); f64 ones without an LLVM intrinsic -> libm or
//                     libdevice); scf -> cf; expand-strided-metadata; lower-affine
// after which the host converts vector/arith/math/memref/func/cf to LLVM (bare-pointer memrefs; the
// vector ops of emit_mlir.h's host_vectors) and the
// device outlines GPU kernels and converts them to NVVM (see jit.cc and ptx.cc).
#pragma once

#include <memory>
#include <string>

#include "ir/status.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"

namespace kiln::compiler::internal {

enum class Target { kHost, kNvptx };

// A single-threaded context with the dialects and LLVM IR translations kiln kernels use.
std::unique_ptr<mlir::MLIRContext> MakeContext();

// Collects the context's diagnostics (errors, warnings, notes) as text while it lives.
class DiagnosticLog {
 public:
  explicit DiagnosticLog(mlir::MLIRContext* context);
  ~DiagnosticLog();
  const std::string& text() const { return text_; }
  // An error of `code`: "<what>: <diagnostics>".
  Error Fail(ErrorCode code, const std::string& what) const;

 private:
  mlir::MLIRContext* context_;
  uint64_t handler_id_;
  std::string text_;
};

// Parses and verifies a module; a syntax or verifier error comes back as kInvalidArgument.
Result<mlir::OwningOpRef<mlir::ModuleOp>> ParseModule(mlir::MLIRContext& context,
                                                      const std::string& text,
                                                      const DiagnosticLog& log);

void AddFrontPasses(mlir::OpPassManager& module_pm, Target target);
// On a module (host) or a gpu.module (device).
void AddScalarPasses(mlir::OpPassManager& pm, Target target);

// A module parsed and lowered for the host (what JIT and ahead-of-time code share): front and
// scalar passes, then arith/math/memref/func/cf to the LLVM dialect with bare-pointer memrefs.
// Members are destroyed module first, context last.
struct HostModule {
  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<DiagnosticLog> log;  // the context's diagnostics while it lives
  mlir::OwningOpRef<mlir::ModuleOp> module;
};
Result<HostModule> ParseAndLowerForHost(const std::string& mlir_text);

// A target machine for the host CPU (its name and all its features) at `opt_level` (0-3);
// position-independent code when `pic` (for shared objects).
Result<std::unique_ptr<llvm::TargetMachine>> HostTargetMachine(int opt_level, bool pic);
llvm::CodeGenOpt::Level CodeGenLevel(int opt_level);
std::string ToString(llvm::Error error);

// Runs `pm`; a failure comes back as kInternal with the diagnostics.
Status RunPasses(mlir::PassManager& pm, mlir::ModuleOp module, const DiagnosticLog& log,
                 const std::string& what);

// The directory named by $KILN_DUMP_DIR ("" when unset); WriteDump writes <dir>/<file>.
std::string DumpDir();
void WriteDump(const std::string& file, const std::string& text);

// Initializes LLVM's native and NVPTX targets once per process.
void InitializeLlvmTargets();

}  // namespace kiln::compiler::internal
