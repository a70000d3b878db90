#include "compiler/mlir/parallel_loops.h"

#include "compiler/codegen/emit_mlir.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"

namespace kiln::compiler::internal {

int AnnotateParallelLoops(llvm::Module& module) {
  int annotated = 0;
  for (llvm::Function& f : module) {
    if (f.isDeclaration() || !f.hasFnAttribute(kParallelLoopsAttribute)) continue;
    f.removeFnAttr(kParallelLoopsAttribute);
    llvm::LLVMContext& context = f.getContext();
    llvm::MDNode* group = llvm::MDNode::getDistinct(context, {});
    for (llvm::BasicBlock& block : f)
      for (llvm::Instruction& inst : block)
        if (inst.mayReadOrWriteMemory())
          inst.setMetadata(llvm::LLVMContext::MD_access_group, group);
    llvm::DominatorTree dominators(f);
    llvm::LoopInfo loops(dominators);
    for (llvm::Loop* loop : loops.getLoopsInPreorder()) {
      llvm::MDNode* parallel = llvm::MDNode::get(
          context, {llvm::MDString::get(context, "llvm.loop.parallel_accesses"), group});
      // A loop id is a distinct node whose first operand is itself.
      llvm::TempMDTuple placeholder = llvm::MDNode::getTemporary(context, {});
      llvm::MDNode* id = llvm::MDNode::getDistinct(context, {placeholder.get(), parallel});
      id->replaceOperandWith(0, id);
      loop->setLoopID(id);
      ++annotated;
    }
  }
  return annotated;
}

}  // namespace kiln::compiler::internal
