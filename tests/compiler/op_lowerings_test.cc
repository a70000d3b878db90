// The compiler's side of "an op is defined once": every op of the IR registry lowers somehow (a
// scalar body, a library, copy, pool, row-reduction or cpu-routine lowering, or an explicit
// reference step with its reason), and every lowering belongs to a registered op.
#include "compiler/op_lowerings.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "compiler/codegen/emit_mlir.h"
#include "ir/op_registry.h"

using namespace kiln;
using namespace kiln::compiler;

TEST_CASE("op lowerings: every op lowers, or says why its reference kernel runs", "[registry]") {
  const OpLowerings& lowerings = OpLowerings::Global();
  std::ostringstream missing;
  for (const OpDef* def : OpRegistry::Global().All()) {
    if (!def->plugin.empty()) continue;  // plugins' ops run their kernels as reference steps
    const OpLowering* lowering = lowerings.Find(def->name);
    const bool lowers = lowering && (lowering->library || lowering->copy || lowering->pool ||
                                     lowering->row_reduction || lowering->cpu_routine ||
                                     !lowering->reference.empty());
    if (!lowers && !HasScalarBody(def->name)) missing << " " << def->name;
  }
  INFO("ops with neither a scalar body nor an entry in compiler/op_lowerings.h:" << missing.str());
  CHECK(missing.str().empty());
  for (const auto& [op, lowering] : lowerings.ops()) {
    INFO("lowering of " << op);
    CHECK(OpRegistry::Global().Find(op) != nullptr);
    // An explicit reference step is the absence of every lowering, not beside one.
    if (!lowering.reference.empty())
      CHECK_FALSE((lowering.library || lowering.copy || lowering.pool || lowering.row_reduction ||
                   lowering.cpu_routine || HasScalarBody(op)));
  }
}
