// Vector width for contiguous elementwise loops (gpu_internal.h): a thread takes kVectorWidth
// neighbouring elements, its loads and stores grouped op by op, with the buffers' 16-byte
// alignment stated, so that LLVM's load/store vectorizer makes 128-bit accesses of them.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/mlir/gpu_internal.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "runtime/executable.h"

namespace kiln::compiler::internal {
namespace {

// The memref a load or store accesses and its indices, or nullopt for another op.
std::optional<std::pair<mlir::Value, mlir::ValueRange>> Access(mlir::Operation* op) {
  if (auto load = mlir::dyn_cast<mlir::memref::LoadOp>(op))
    return std::make_pair(load.getMemRef(), load.getIndices());
  if (auto store = mlir::dyn_cast<mlir::memref::StoreOp>(op))
    return std::make_pair(store.getMemRef(), store.getIndices());
  return std::nullopt;
}

// Whether every memory access of the loop's body is a load or store of a rank-1 memref at the
// induction variable itself, or at constant indices (a broadcast scalar), and the induction
// variable has no other use: then neighbouring iterations touch neighbouring elements and
// nothing else. Fills `memrefs` with the buffers accessed at the induction variable.
bool IsContiguous(mlir::scf::ParallelOp loop, std::vector<mlir::Value>& memrefs) {
  mlir::Value iv = loop.getInductionVars()[0];
  bool ok = true;
  loop.getBody()->walk([&](mlir::Operation* op) {
    if (op->getNumRegions() > 0 && !mlir::isa<mlir::scf::IfOp>(op)) ok = false;
    if (mlir::isa<mlir::memref::MemRefDialect>(op->getDialect()) &&
        !mlir::isa<mlir::memref::LoadOp, mlir::memref::StoreOp>(op))
      ok = false;
    auto access = Access(op);
    if (!access) return;
    auto type = access->first.getType().dyn_cast<mlir::MemRefType>();
    if (!type || !type.getLayout().isIdentity()) {
      ok = false;
      return;
    }
    bool at_iv = type.getRank() == 1 && access->second[0] == iv;
    bool constant = true;
    for (mlir::Value index : access->second)
      constant = constant && mlir::getConstantIntValue(index).has_value();
    if (at_iv && access->first.getParentRegion()->isProperAncestor(&loop.getRegion()))
      memrefs.push_back(access->first);
    ok = ok && (at_iv || constant);
  });
  for (mlir::OpOperand& use : iv.getUses()) {
    auto access = Access(use.getOwner());
    ok = ok && access && use.getOperandNumber() >= use.getOwner()->getNumOperands() - 1 &&
         access->second.size() == 1;
  }
  return ok && !memrefs.empty();
}

}  // namespace

void WidenContiguousLoops(mlir::ModuleOp module) {
  std::vector<mlir::scf::ParallelOp> loops;
  module.walk([&](mlir::scf::ParallelOp op) {
    if (!op->getParentOfType<mlir::scf::ParallelOp>()) loops.push_back(op);
  });
  for (mlir::scf::ParallelOp loop : loops) {
    if (loop.getNumLoops() != 1) continue;
    std::optional<int64_t> lb = mlir::getConstantIntValue(loop.getLowerBound()[0]);
    std::optional<int64_t> ub = mlir::getConstantIntValue(loop.getUpperBound()[0]);
    std::optional<int64_t> step = mlir::getConstantIntValue(loop.getStep()[0]);
    if (!lb || *lb != 0 || !ub || *ub < kVectorWidth || *ub % kVectorWidth || !step || *step != 1)
      continue;
    std::vector<mlir::Value> memrefs;
    if (!IsContiguous(loop, memrefs)) continue;
    mlir::Location loc = loop.getLoc();
    mlir::OpBuilder b(loop);
    mlir::Value zero = b.create<mlir::arith::ConstantIndexOp>(loc, 0);
    mlir::Value one = b.create<mlir::arith::ConstantIndexOp>(loc, 1);
    mlir::Value groups = b.create<mlir::arith::ConstantIndexOp>(loc, *ub / kVectorWidth);
    auto wide = b.create<mlir::scf::ParallelOp>(loc, mlir::ValueRange{zero},
                                                mlir::ValueRange{groups}, mlir::ValueRange{one});
    b.setInsertionPoint(wide.getBody()->getTerminator());
    // Every operand starts aligned (runtime/executable.h; CudaProgram checks it at load).
    std::vector<mlir::Value> stated;
    for (mlir::Value m : memrefs)
      if (std::find(stated.begin(), stated.end(), m) == stated.end()) {
        b.create<mlir::memref::AssumeAlignmentOp>(loc, m, kKernelOperandAlignment);
        stated.push_back(m);
      }
    mlir::Value width = b.create<mlir::arith::ConstantIndexOp>(loc, kVectorWidth);
    mlir::Value first = b.create<mlir::arith::MulIOp>(loc, wide.getInductionVars()[0], width);
    std::vector<mlir::IRMapping> lanes(kVectorWidth);
    for (int64_t lane = 0; lane < kVectorWidth; ++lane) {
      mlir::Value at = lane == 0
                           ? first
                           : b.create<mlir::arith::AddIOp>(
                                  loc, first, b.create<mlir::arith::ConstantIndexOp>(loc, lane))
                                 .getResult();
      lanes[lane].map(loop.getInductionVars()[0], at);
    }
    // Op by op, each for every lane: the lanes' loads of one buffer are adjacent, as are their
    // stores (lanes touch distinct elements, so the order between lanes is free).
    for (mlir::Operation& op : loop.getBody()->without_terminator())
      for (int64_t lane = 0; lane < kVectorWidth; ++lane) b.clone(op, lanes[lane]);
    loop.erase();
  }
}

}  // namespace kiln::compiler::internal
