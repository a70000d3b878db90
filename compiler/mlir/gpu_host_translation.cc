// The host translation of GPU functions (gpu_kernels.h): each gpu.func becomes a func.func that
// walks a range of the grid's blocks and, in each, every thread of the block around the kernel's
// own body; a body with block-wide steps (gpu.all_reduce, gpu.barrier at its top level) runs in
// phases, every thread through one phase before the next, with the values that cross a phase kept
// per thread in memory and each all_reduce folded over the block's threads between phases.
#include <map>
#include <vector>

#include "compiler/mlir/gpu_internal.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "runtime/executable.h"

namespace kiln::compiler::internal {
namespace {

// The leading index arguments of a host translation, in order; then the fault record (kFault,
// memref<2xi64>), then the GPU function's own arguments.
enum HostArg { kBlockBegin, kBlockEnd, kGridX, kGridY, kGridZ, kBlockX, kBlockY, kBlockZ, kCount };
constexpr unsigned kFault = kCount;
constexpr unsigned kFirstKernelArg = kCount + 1;

// Wraps every load and store of a kernel argument of `func` in a check that each index lies inside
// its dimension; an access outside runs not at all (a load gives 0) and records [1, argument
// number] in the fault record.
void AddBoundsChecks(mlir::func::FuncOp func) {
  std::vector<mlir::Operation*> accesses;
  func.walk([&](mlir::Operation* op) {
    if (mlir::isa<mlir::memref::LoadOp, mlir::memref::StoreOp>(op)) accesses.push_back(op);
  });
  mlir::Block& entry = func.getBody().front();
  mlir::Value fault = entry.getArgument(kFault);
  for (mlir::Operation* op : accesses) {
    auto load = mlir::dyn_cast<mlir::memref::LoadOp>(op);
    auto store = mlir::dyn_cast<mlir::memref::StoreOp>(op);
    mlir::Value memref = load ? load.getMemRef() : store.getMemRef();
    auto arg = memref.dyn_cast<mlir::BlockArgument>();
    if (!arg || arg.getOwner() != &entry || arg.getArgNumber() < kFirstKernelArg) continue;
    auto type = memref.getType().cast<mlir::MemRefType>();
    mlir::ValueRange indices = load ? load.getIndices() : store.getIndices();
    mlir::Location loc = op->getLoc();
    mlir::OpBuilder b(op);
    mlir::Value ok = b.create<mlir::arith::ConstantIntOp>(loc, 1, 1);
    for (auto [d, index] : llvm::enumerate(indices)) {
      if (type.isDynamicDim(d)) continue;
      mlir::Value size = b.create<mlir::arith::ConstantIndexOp>(loc, type.getDimSize(d));
      ok = b.create<mlir::arith::AndIOp>(
          loc, ok,
          b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::ult, index, size));
    }
    llvm::SmallVector<mlir::Type, 1> results;
    if (load) results.push_back(load.getType());
    auto guarded = b.create<mlir::scf::IfOp>(loc, results, ok, /*withElseRegion=*/true);
    mlir::OpBuilder then = guarded.getThenBodyBuilder();
    mlir::Operation* moved = then.clone(*op);
    if (load) then.create<mlir::scf::YieldOp>(loc, moved->getResults());
    mlir::OpBuilder otherwise = guarded.getElseBodyBuilder();
    mlir::Value zero = otherwise.create<mlir::arith::ConstantIndexOp>(loc, 0);
    mlir::Value one = otherwise.create<mlir::arith::ConstantIndexOp>(loc, 1);
    otherwise.create<mlir::memref::StoreOp>(
        loc, otherwise.create<mlir::arith::ConstantIntOp>(loc, 1, 64), fault, zero);
    otherwise.create<mlir::memref::StoreOp>(
        loc,
        otherwise.create<mlir::arith::ConstantIntOp>(loc, arg.getArgNumber() - kFirstKernelArg, 64),
        fault, one);
    if (load) {
      mlir::Type t = load.getType();
      otherwise.create<mlir::scf::YieldOp>(
          loc, mlir::ValueRange{otherwise.create<mlir::arith::ConstantOp>(
                   loc, t, otherwise.getZeroAttr(t).cast<mlir::TypedAttr>())});
      load.getResult().replaceAllUsesWith(guarded.getResult(0));
    }
    op->erase();
  }
}

mlir::Value Pick(mlir::gpu::Dimension d, mlir::Value x, mlir::Value y, mlir::Value z) {
  return d == mlir::gpu::Dimension::x ? x : d == mlir::gpu::Dimension::y ? y : z;
}

// The top-level op of `body` that holds `op` (op itself when it is top-level).
mlir::Operation* TopLevel(mlir::Operation* op, mlir::Block& body) {
  while (op && op->getBlock() != &body) op = op->getParentOp();
  return op;
}

bool IsPhaseEnd(mlir::Operation& op) {
  return mlir::isa<mlir::gpu::AllReduceOp, mlir::gpu::BarrierOp>(op);
}

// The combination of two partial values as `reduce` defines it (its operation, or its region).
mlir::Value Combine(mlir::OpBuilder& b, mlir::Location loc, mlir::gpu::AllReduceOp reduce,
                    mlir::Value acc, mlir::Value x) {
  if (reduce.getOp()) {  // "add" (Translate refuses the other operations)
    if (acc.getType().isa<mlir::FloatType>()) return b.create<mlir::arith::AddFOp>(loc, acc, x);
    return b.create<mlir::arith::AddIOp>(loc, acc, x);
  }
  mlir::Block& region = reduce.getBody().front();
  mlir::IRMapping map;
  map.map(region.getArgument(0), acc);
  map.map(region.getArgument(1), x);
  for (mlir::Operation& op : region.without_terminator()) b.clone(op, map);
  return map.lookup(region.getTerminator()->getOperand(0));
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
  // Phases: the body split after each top-level gpu.all_reduce or gpu.barrier. Every thread of a
  // block runs a phase before any runs the next; an all_reduce's value is combined over the
  // block's threads, in thread order, between the phases.
  std::vector<std::vector<mlir::Operation*>> phases(1);
  std::string misplaced;
  for (mlir::Operation& op : body.without_terminator()) {
    op.walk([&](mlir::Operation* nested) {
      if (nested != &op && IsPhaseEnd(*nested)) misplaced = nested->getName().getStringRef().str();
    });
    phases.back().push_back(&op);
    if (IsPhaseEnd(op)) phases.emplace_back();
    if (auto reduce = mlir::dyn_cast<mlir::gpu::AllReduceOp>(op)) {
      mlir::Operation* def = reduce.getValue().getDefiningOp();
      if ((reduce.getOp() && *reduce.getOp() != mlir::gpu::AllReduceOperation::ADD) || !def ||
          def->getBlock() != &body || IsPhaseEnd(*def) ||
          !reduce.getValue().getType().isIntOrIndexOrFloat())
        return MakeError(ErrorCode::kUnimplemented, "GPU function '", name,
                         "' has a gpu.all_reduce the simulated device does not run (an operation "
                         "other than add, or a value not computed by the threads)");
    }
  }
  if (!misplaced.empty())
    return MakeError(ErrorCode::kUnimplemented, "GPU function '", name, "' has a '", misplaced,
                     "' inside control flow, which the simulated device does not run");
  std::map<mlir::Operation*, size_t> phase_of;
  for (size_t p = 0; p < phases.size(); ++p)
    for (mlir::Operation* op : phases[p]) phase_of[op] = p;
  // Values that live from one phase into a later one (every all_reduce operand too): kept per
  // thread in memory across the phases. (An all_reduce's own result is the same for every thread.)
  std::vector<mlir::Value> carried;
  for (mlir::Operation& op : body.without_terminator())
    for (mlir::Value v : op.getResults()) {
      if (IsPhaseEnd(op)) continue;  // an all_reduce's result: combined once per block
      bool later = false;
      for (mlir::Operation* user : v.getUsers()) {
        mlir::Operation* top = TopLevel(user, body);
        later = later || (top && phase_of.count(top) && phase_of[top] > phase_of[&op]) ||
                (mlir::isa<mlir::gpu::AllReduceOp>(user) && user->getBlock() == &body);
      }
      if (!later) continue;
      if (!v.getType().isIntOrIndexOrFloat())
        return MakeError(ErrorCode::kUnimplemented, "GPU function '", name,
                         "' carries a value that is not a scalar across a barrier");
      carried.push_back(v);
    }

  mlir::MLIRContext* context = host.getContext();
  mlir::Location loc = kernel.getLoc();
  mlir::OpBuilder b(context);
  b.setInsertionPointToEnd(host.getBody());
  std::vector<mlir::Type> types(kCount, b.getIndexType());
  types.push_back(mlir::MemRefType::get({2}, b.getI64Type()));
  for (mlir::Type t : kernel.getFunctionType().getInputs()) types.push_back(t);
  auto func = b.create<mlir::func::FuncOp>(loc, std::string(kSimulatedFunctionPrefix) + name,
                                           b.getFunctionType(types, {}));
  mlir::Block* entry = func.addEntryBlock();
  auto arg = [&](int i) -> mlir::Value { return entry->getArgument(i); };

  b.setInsertionPointToStart(entry);
  mlir::Value zero = b.create<mlir::arith::ConstantIndexOp>(loc, 0);
  mlir::Value one = b.create<mlir::arith::ConstantIndexOp>(loc, 1);
  mlir::Value threads = b.create<mlir::arith::MulIOp>(
      loc, b.create<mlir::arith::MulIOp>(loc, arg(kBlockX), arg(kBlockY)), arg(kBlockZ));
  std::map<mlir::Value, mlir::Value, bool (*)(mlir::Value, mlir::Value)> slots(
      [](mlir::Value a, mlir::Value c) { return a.getAsOpaquePointer() < c.getAsOpaquePointer(); });
  for (mlir::Value v : carried)
    slots[v] = b.create<mlir::memref::AllocOp>(
        loc, mlir::MemRefType::get({mlir::ShapedType::kDynamic}, v.getType()),
        mlir::ValueRange{threads});
  auto blocks = b.create<mlir::scf::ForOp>(loc, arg(kBlockBegin), arg(kBlockEnd), one);
  b.setInsertionPointToStart(blocks.getBody());
  mlir::Value linear = blocks.getInductionVar();
  mlir::Value plane = b.create<mlir::arith::MulIOp>(loc, arg(kGridX), arg(kGridY));
  mlir::Value block_z = b.create<mlir::arith::DivUIOp>(loc, linear, plane);
  mlir::Value in_plane = b.create<mlir::arith::RemUIOp>(loc, linear, plane);
  mlir::Value block_y = b.create<mlir::arith::DivUIOp>(loc, in_plane, arg(kGridX));
  mlir::Value block_x = b.create<mlir::arith::RemUIOp>(loc, in_plane, arg(kGridX));
  std::map<mlir::Operation*, int> thread_loops;  // each phase's loops over the block's threads
  mlir::IRMapping combined;                      // all_reduce results, combined per block
  for (size_t p = 0; p < phases.size(); ++p) {
    const mlir::OpBuilder::InsertPoint after_phase = b.saveInsertionPoint();  // the block's end
    mlir::Value thread[3];
    for (int d = 2; d >= 0; --d) {  // z outermost, x innermost
      auto loop = b.create<mlir::scf::ForOp>(loc, zero, arg(kBlockX + d), one);
      thread_loops[loop] = d;
      b.setInsertionPointToStart(loop.getBody());
      thread[d] = loop.getInductionVar();
    }
    mlir::Value tid = b.create<mlir::arith::AddIOp>(
        loc,
        b.create<mlir::arith::MulIOp>(
            loc,
            b.create<mlir::arith::AddIOp>(
                loc, b.create<mlir::arith::MulIOp>(loc, thread[2], arg(kBlockY)), thread[1]),
            arg(kBlockX)),
        thread[0]);
    mlir::IRMapping map = combined;
    for (unsigned i = 0; i < body.getNumArguments(); ++i)
      map.map(body.getArgument(i), arg(kFirstKernelArg + i));
    for (mlir::Value v : carried)  // defined in an earlier phase
      if (phase_of[TopLevel(v.getDefiningOp(), body)] < p)
        map.map(v, b.create<mlir::memref::LoadOp>(loc, slots[v], mlir::ValueRange{tid}));
    for (mlir::Operation* op : phases[p])
      if (!IsPhaseEnd(*op)) b.clone(*op, map);
    for (mlir::Value v : carried)
      if (phase_of[TopLevel(v.getDefiningOp(), body)] == p)
        b.create<mlir::memref::StoreOp>(loc, map.lookup(v), slots[v], mlir::ValueRange{tid});
    b.restoreInsertionPoint(after_phase);
    auto reduce =
        phases[p].empty() ? nullptr : mlir::dyn_cast<mlir::gpu::AllReduceOp>(phases[p].back());
    if (!reduce) continue;
    // Between this phase and the next: thread 0's value, folded with every other thread's.
    mlir::Value slot = slots[reduce.getValue()];
    mlir::Value first = b.create<mlir::memref::LoadOp>(loc, slot, mlir::ValueRange{zero});
    auto fold = b.create<mlir::scf::ForOp>(loc, one, threads, one, mlir::ValueRange{first});
    {
      mlir::OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(fold.getBody());
      mlir::Value x =
          b.create<mlir::memref::LoadOp>(loc, slot, mlir::ValueRange{fold.getInductionVar()});
      mlir::Value next = Combine(b, loc, reduce, fold.getRegionIterArgs()[0], x);
      b.create<mlir::scf::YieldOp>(loc, next);
    }
    combined.map(reduce.getResult(), fold.getResult(0));
  }
  b.setInsertionPointToEnd(entry);
  for (mlir::Value v : carried) b.create<mlir::memref::DeallocOp>(loc, slots[v]);
  b.create<mlir::func::ReturnOp>(loc);

  // The GPU's index registers become the loops' values; any other gpu op has no host meaning.
  std::vector<mlir::Operation*> replaced;
  std::string unsupported;
  func.walk([&](mlir::Operation* op) {
    mlir::Value v;
    if (auto o = mlir::dyn_cast<mlir::gpu::BlockIdOp>(op)) {
      v = Pick(o.getDimension(), block_x, block_y, block_z);
    } else if (auto o = mlir::dyn_cast<mlir::gpu::ThreadIdOp>(op)) {
      const int d = static_cast<int>(o.getDimension());
      for (mlir::Operation* p = op->getParentOp(); p && !v; p = p->getParentOp())
        if (auto it = thread_loops.find(p); it != thread_loops.end() && it->second == d)
          v = mlir::cast<mlir::scf::ForOp>(p).getInductionVar();
      if (!v) unsupported = "gpu.thread_id outside the threads' loops";
    } else if (auto o = mlir::dyn_cast<mlir::gpu::BlockDimOp>(op)) {
      v = Pick(o.getDimension(), arg(kBlockX), arg(kBlockY), arg(kBlockZ));
    } else if (auto o = mlir::dyn_cast<mlir::gpu::GridDimOp>(op)) {
      v = Pick(o.getDimension(), arg(kGridX), arg(kGridY), arg(kGridZ));
    } else if (op->getDialect() && op->getDialect()->getNamespace() == "gpu") {
      unsupported = op->getName().getStringRef().str();
    }
    if (v) {
      op->getResult(0).replaceAllUsesWith(v);
      replaced.push_back(op);
    }
  });
  for (mlir::Operation* op : replaced) op->erase();
  if (!unsupported.empty())
    return MakeError(ErrorCode::kUnimplemented, "GPU function '", name, "' uses '", unsupported,
                     "', which the simulated device does not run yet");
  AddBoundsChecks(func);
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
