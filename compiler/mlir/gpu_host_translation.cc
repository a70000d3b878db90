// The host translation of GPU functions (gpu_kernels.h): each gpu.func becomes a func.func that
// walks a range of the grid's blocks and every thread of each block, around the kernel's own body.
#include "compiler/mlir/gpu_internal.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace kiln::compiler::internal {
namespace {

// The leading index arguments of a host translation, in order.
enum HostArg { kBlockBegin, kBlockEnd, kGridX, kGridY, kGridZ, kBlockX, kBlockY, kBlockZ, kCount };

mlir::Value Pick(mlir::gpu::Dimension d, mlir::Value x, mlir::Value y, mlir::Value z) {
  return d == mlir::gpu::Dimension::x ? x : d == mlir::gpu::Dimension::y ? y : z;
}

Status Translate(mlir::gpu::GPUFuncOp kernel, mlir::ModuleOp host) {
  const std::string name = kernel.getName().str();
  if (!kernel.getBody().hasOneBlock() || kernel.getNumWorkgroupAttributions() != 0 ||
      kernel.getNumPrivateAttributions() != 0)
    return MakeError(ErrorCode::kUnimplemented, "GPU function '", name,
                     "' has several blocks or shared memory, which the simulated device does not "
                     "run yet");
  mlir::Block& body = kernel.getBody().front();
  auto ret = mlir::dyn_cast<mlir::gpu::ReturnOp>(body.getTerminator());
  if (!ret || ret.getNumOperands() != 0)
    return MakeError(ErrorCode::kUnimplemented, "GPU function '", name,
                     "' does not end in a plain gpu.return");

  mlir::MLIRContext* context = host.getContext();
  mlir::Location loc = kernel.getLoc();
  mlir::OpBuilder b(context);
  b.setInsertionPointToEnd(host.getBody());
  std::vector<mlir::Type> types(kCount, b.getIndexType());
  for (mlir::Type t : kernel.getFunctionType().getInputs()) types.push_back(t);
  auto func = b.create<mlir::func::FuncOp>(loc, name, b.getFunctionType(types, {}));
  mlir::Block* entry = func.addEntryBlock();
  auto arg = [&](int i) -> mlir::Value { return entry->getArgument(i); };

  b.setInsertionPointToStart(entry);
  mlir::Value zero = b.create<mlir::arith::ConstantIndexOp>(loc, 0);
  mlir::Value one = b.create<mlir::arith::ConstantIndexOp>(loc, 1);
  auto blocks = b.create<mlir::scf::ForOp>(loc, arg(kBlockBegin), arg(kBlockEnd), one);
  b.setInsertionPointToStart(blocks.getBody());
  mlir::Value linear = blocks.getInductionVar();
  mlir::Value plane = b.create<mlir::arith::MulIOp>(loc, arg(kGridX), arg(kGridY));
  mlir::Value block_z = b.create<mlir::arith::DivUIOp>(loc, linear, plane);
  mlir::Value in_plane = b.create<mlir::arith::RemUIOp>(loc, linear, plane);
  mlir::Value block_y = b.create<mlir::arith::DivUIOp>(loc, in_plane, arg(kGridX));
  mlir::Value block_x = b.create<mlir::arith::RemUIOp>(loc, in_plane, arg(kGridX));
  mlir::Value thread[3];
  for (int d = 2; d >= 0; --d) {  // z outermost, x innermost
    auto loop = b.create<mlir::scf::ForOp>(loc, zero, arg(kBlockX + d), one);
    b.setInsertionPointToStart(loop.getBody());
    thread[d] = loop.getInductionVar();
  }
  mlir::IRMapping map;
  for (unsigned i = 0; i < body.getNumArguments(); ++i)
    map.map(body.getArgument(i), arg(kCount + i));
  for (mlir::Operation& op : body.without_terminator()) b.clone(op, map);
  b.setInsertionPointToEnd(entry);
  b.create<mlir::func::ReturnOp>(loc);

  // The GPU's index registers become the loops' values; any other gpu op has no host meaning.
  std::vector<mlir::Operation*> replaced;
  std::string unsupported;
  func.walk([&](mlir::Operation* op) {
    mlir::Value v;
    if (auto o = mlir::dyn_cast<mlir::gpu::BlockIdOp>(op))
      v = Pick(o.getDimension(), block_x, block_y, block_z);
    else if (auto o = mlir::dyn_cast<mlir::gpu::ThreadIdOp>(op))
      v = Pick(o.getDimension(), thread[0], thread[1], thread[2]);
    else if (auto o = mlir::dyn_cast<mlir::gpu::BlockDimOp>(op))
      v = Pick(o.getDimension(), arg(kBlockX), arg(kBlockY), arg(kBlockZ));
    else if (auto o = mlir::dyn_cast<mlir::gpu::GridDimOp>(op))
      v = Pick(o.getDimension(), arg(kGridX), arg(kGridY), arg(kGridZ));
    else if (op->getDialect() && op->getDialect()->getNamespace() == "gpu")
      unsupported = op->getName().getStringRef().str();
    if (v) {
      op->getResult(0).replaceAllUsesWith(v);
      replaced.push_back(op);
    }
  });
  for (mlir::Operation* op : replaced) op->erase();
  if (!unsupported.empty())
    return MakeError(ErrorCode::kUnimplemented, "GPU function '", name, "' uses '", unsupported,
                     "', which the simulated device does not run yet");
  return OkStatus();
}

}  // namespace

Result<std::string> TranslateGpuFunctionsForHost(mlir::ModuleOp module) {
  mlir::OpBuilder b(module.getContext());
  mlir::OwningOpRef<mlir::ModuleOp> host = mlir::ModuleOp::create(module.getLoc());
  for (auto gpu_module : module.getOps<mlir::gpu::GPUModuleOp>())
    for (auto kernel : gpu_module.getOps<mlir::gpu::GPUFuncOp>())
      if (kernel.isKernel()) KILN_RETURN_IF_ERROR(Translate(kernel, *host));
  std::string text;
  llvm::raw_string_ostream os(text);
  host->print(os);
  os.flush();
  return text;
}

}  // namespace kiln::compiler::internal
