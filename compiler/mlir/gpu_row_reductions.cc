// Row reductions as block reductions (gpu_kernels.h): a row kernel (compiler/codegen/
// emit_reduction.h: an scf.parallel over rows whose body runs scf.for loops over the columns, some
// folding one value) becomes one GPU block per row. The block's threads stride over the columns
// in every column loop; a folding loop's per-thread partial results are combined by gpu.all_reduce
// (shuffles and shared memory on the GPU, gpu-to-nvvm; phases in the host translation), and a
// per-row store is made by thread 0 alone.
#include <optional>

#include "compiler/mlir/gpu_internal.h"
#include "compiler/mlir/gpu_kernels.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace kiln::compiler::internal {
namespace {

// How a column loop folds its one value: by addition, or keeping the larger (smaller) with NaN
// winning, as emit_reduction.cc writes them.
enum class Fold { kAdd, kMax, kMin };

// A loop over the columns: scf.for from 0 to a constant with step 1, at the top of the row body.
bool IsColumnLoop(mlir::scf::ForOp loop) {
  std::optional<int64_t> lb = mlir::getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> step = mlir::getConstantIntValue(loop.getStep());
  return lb && *lb == 0 && step && *step == 1 &&
         mlir::getConstantIntValue(loop.getUpperBound()).has_value();
}

// The fold of a column loop with one f32 iter_arg, or nullopt when it is not one kiln writes.
std::optional<Fold> FoldOf(mlir::scf::ForOp loop) {
  if (loop.getNumIterOperands() != 1 || !loop.getResult(0).getType().isF32()) return std::nullopt;
  mlir::Value acc = loop.getRegionIterArgs()[0];
  auto yield = mlir::cast<mlir::scf::YieldOp>(loop.getBody()->getTerminator());
  mlir::Operation* next = yield.getOperand(0).getDefiningOp();
  if (auto add = mlir::dyn_cast_or_null<mlir::arith::AddFOp>(next))
    return add.getLhs() == acc || add.getRhs() == acc ? std::optional<Fold>(Fold::kAdd)
                                                      : std::nullopt;
  // select(x uno x, x, select(x ogt|olt acc, x, acc))
  auto nan_pick = mlir::dyn_cast_or_null<mlir::arith::SelectOp>(next);
  if (!nan_pick) return std::nullopt;
  auto pick = nan_pick.getFalseValue().getDefiningOp<mlir::arith::SelectOp>();
  if (!pick || pick.getFalseValue() != acc) return std::nullopt;
  auto cmp = pick.getCondition().getDefiningOp<mlir::arith::CmpFOp>();
  if (!cmp || cmp.getRhs() != acc) return std::nullopt;
  if (cmp.getPredicate() == mlir::arith::CmpFPredicate::OGT) return Fold::kMax;
  if (cmp.getPredicate() == mlir::arith::CmpFPredicate::OLT) return Fold::kMin;
  return std::nullopt;
}

// The columns of a row kernel that folds at least once and whose every column loop is one this
// mapping handles (folds of f32), or nullopt.
std::optional<int64_t> RowKernelColumns(mlir::scf::ParallelOp rows) {
  if (rows.getNumLoops() != 1) return std::nullopt;
  std::optional<int64_t> lb = mlir::getConstantIntValue(rows.getLowerBound()[0]);
  std::optional<int64_t> ub = mlir::getConstantIntValue(rows.getUpperBound()[0]);
  std::optional<int64_t> step = mlir::getConstantIntValue(rows.getStep()[0]);
  if (!lb || *lb != 0 || !ub || *ub < 1 || *ub > (int64_t{1} << 31) - 1 || !step || *step != 1)
    return std::nullopt;
  std::optional<int64_t> cols;
  bool folds = false;
  for (mlir::Operation& op : rows.getBody()->without_terminator()) {
    if (op.getNumRegions() == 0) continue;
    auto loop = mlir::dyn_cast<mlir::scf::ForOp>(op);
    if (!loop || !IsColumnLoop(loop)) return std::nullopt;  // other control flow: leave it
    if (loop.getNumIterOperands() != 0 && !FoldOf(loop)) return std::nullopt;
    folds = folds || loop.getNumIterOperands() != 0;
    const int64_t n = *mlir::getConstantIntValue(loop.getUpperBound());
    if (cols && *cols != n) return std::nullopt;
    cols = n;
  }
  return folds ? cols : std::nullopt;
}

// The combining region of a NaN-winning max or min, as the column loop folds.
void BuildMinMaxRegion(mlir::gpu::AllReduceOp reduce, Fold fold, mlir::Location loc) {
  mlir::OpBuilder b(reduce.getContext());
  mlir::Type f32 = b.getF32Type();
  mlir::Block* block = b.createBlock(&reduce.getBody(), {}, {f32, f32}, {loc, loc});
  mlir::Value acc = block->getArgument(0), x = block->getArgument(1);
  auto better = b.create<mlir::arith::CmpFOp>(
      loc, fold == Fold::kMax ? mlir::arith::CmpFPredicate::OGT : mlir::arith::CmpFPredicate::OLT,
      x, acc);
  auto pick = b.create<mlir::arith::SelectOp>(loc, better, x, acc);
  auto nan = b.create<mlir::arith::CmpFOp>(loc, mlir::arith::CmpFPredicate::UNO, x, x);
  auto result = b.create<mlir::arith::SelectOp>(loc, nan, x, pick);
  b.create<mlir::gpu::YieldOp>(loc, mlir::ValueRange{result});
}

void MapToBlocks(mlir::scf::ParallelOp rows, int64_t cols) {
  mlir::Location loc = rows.getLoc();
  mlir::OpBuilder b(rows);
  const int64_t threads = std::min<int64_t>(kThreadsPerBlock, (cols + 31) / 32 * 32);
  const int64_t n_rows = *mlir::getConstantIntValue(rows.getUpperBound()[0]);
  mlir::Value one = b.create<mlir::arith::ConstantIndexOp>(loc, 1);
  mlir::Value grid = b.create<mlir::arith::ConstantIndexOp>(loc, n_rows);
  mlir::Value block = b.create<mlir::arith::ConstantIndexOp>(loc, threads);
  auto launch = b.create<mlir::gpu::LaunchOp>(loc, grid, one, one, block, one, one);
  b.setInsertionPointToEnd(&launch.getBody().front());
  mlir::Value thread = launch.getThreadIds().x;
  mlir::Value stride = launch.getBlockSize().x;
  mlir::IRMapping map;
  map.map(rows.getInductionVars()[0], launch.getBlockIds().x);
  mlir::Value first_thread;  // thread == 0, made on first use
  for (mlir::Operation& op : rows.getBody()->without_terminator()) {
    if (auto loop = mlir::dyn_cast<mlir::scf::ForOp>(op)) {
      // The same loop over this thread's columns: thread, thread + block size, ...
      auto strided = b.create<mlir::scf::ForOp>(
          loop.getLoc(), thread, map.lookupOrDefault(loop.getUpperBound()), stride,
          llvm::to_vector(llvm::map_range(loop.getIterOperands(),
                                          [&](mlir::Value v) { return map.lookupOrDefault(v); })));
      mlir::IRMapping body = map;
      body.map(loop.getInductionVar(), strided.getInductionVar());
      for (auto [from, to] : llvm::zip(loop.getRegionIterArgs(), strided.getRegionIterArgs()))
        body.map(from, to);
      mlir::OpBuilder inner = mlir::OpBuilder::atBlockEnd(strided.getBody());
      if (!strided.getBody()->empty() &&
          strided.getBody()->back().hasTrait<mlir::OpTrait::IsTerminator>())
        strided.getBody()->back().erase();
      for (mlir::Operation& nested : *loop.getBody()) inner.clone(nested, body);
      if (loop.getNumResults() == 0) continue;
      const Fold fold = *FoldOf(loop);
      auto reduce = b.create<mlir::gpu::AllReduceOp>(
          loop.getLoc(), strided.getResult(0),
          fold == Fold::kAdd ? mlir::gpu::AllReduceOperationAttr::get(
                                   b.getContext(), mlir::gpu::AllReduceOperation::ADD)
                             : mlir::gpu::AllReduceOperationAttr(),
          /*uniform=*/true);
      if (fold != Fold::kAdd) BuildMinMaxRegion(reduce, fold, loop.getLoc());
      map.map(loop.getResult(0), reduce.getResult());
      continue;
    }
    if (mlir::isa<mlir::memref::StoreOp>(op)) {  // a per-row output: thread 0 writes it
      if (!first_thread) {
        mlir::Value zero = b.create<mlir::arith::ConstantIndexOp>(loc, 0);
        first_thread =
            b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::eq, thread, zero);
      }
      auto only_first = b.create<mlir::scf::IfOp>(op.getLoc(), first_thread, /*else=*/false);
      mlir::OpBuilder then = only_first.getThenBodyBuilder();
      then.clone(op, map);
      continue;
    }
    b.clone(op, map);
  }
  b.create<mlir::gpu::TerminatorOp>(loc);
  rows.erase();
}

}  // namespace

void MapRowReductionsToBlocks(mlir::ModuleOp module) {
  std::vector<std::pair<mlir::scf::ParallelOp, int64_t>> row_kernels;
  for (mlir::func::FuncOp func : module.getOps<mlir::func::FuncOp>())
    for (mlir::Operation& op : func.getBody().front())
      if (auto rows = mlir::dyn_cast<mlir::scf::ParallelOp>(op)) {
        std::optional<int64_t> cols = RowKernelColumns(rows);
        if (cols && *cols >= kMinColumnsForBlockReduction) row_kernels.push_back({rows, *cols});
      }
  for (auto [rows, cols] : row_kernels) MapToBlocks(rows, cols);
}

}  // namespace kiln::compiler::internal
