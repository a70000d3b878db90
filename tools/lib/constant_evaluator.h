// The constant-fold pass's evaluator (passes/constant_fold.h) on the reference executor: one
// node run on its constant input values with the reference kernels, so folded constants hold
// exactly what the reference backend computes at run time. Lives here, not in passes/, because
// passes/ may depend only on ir/ and the kernels are in runtime/ (DESIGN.md, "Folders").
// Used by `kiln opt` and the pass tests; compiler/static_types folds with the same function.
#pragma once

#include "passes/constant_fold.h"
#include "passes/pass_manager.h"

namespace kiln {

ConstantEvaluator ReferenceConstantEvaluator();

// PassOptions with the reference evaluator (the dump directory from $KILN_DUMP_DIR).
PassOptions ReferencePassOptions();

}  // namespace kiln
