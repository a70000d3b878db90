// Registers the Session's graph rewrites (runtime/session_rewrite.h) when a program starts:
// mixed precision, then numerics checks, through the pass manager (verified after each pass,
// dumped to $KILN_DUMP_DIR when set). Linked by programs through kiln_session_passes
// (passes/CMakeLists.txt), as compiler/register.cc is through kiln_jit.
#include <memory>

#include "passes/check_numerics.h"
#include "passes/mixed_precision.h"
#include "passes/pass_manager.h"
#include "runtime/session_rewrite.h"

namespace kiln {
namespace {

Status RewriteForSession(Graph& graph, const PrecisionPolicy& precision, bool check_numerics) {
  std::vector<std::unique_ptr<Pass>> passes;
  if (precision.enabled()) passes.push_back(std::make_unique<MixedPrecision>(precision));
  if (check_numerics) passes.push_back(std::make_unique<CheckNumericsPass>());
  return RunPassList(graph, passes).status();
}

const bool registered = (RegisterSessionGraphRewrite(RewriteForSession), true);

}  // namespace
}  // namespace kiln
