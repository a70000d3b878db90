// Removing nodes that plan rewrites (compiler/broadcast_folding.h, transpose_folding.h) left
// without a reader.
#pragma once

#include <set>
#include <string>

#include "runtime/executor.h"

namespace kiln::compiler {

// Removes from plan.nodes every node named in `candidates` that no node reads (as an input or a
// control input) and no fetch names, including candidates that become unread only once a later
// candidate reading them is gone. Other nodes stay, read or not.
void DropUnreadNodes(RunPlan& plan, const std::set<std::string>& candidates);

}  // namespace kiln::compiler
