// The start of a data-parallel run: every rank's variables made rank `root`'s (Session and Module
// call it with their communicator and store), so that the replicas start equal.
//
// Contract: every rank calls it at the same point. First the ranks agree on what the variables are
// (name, dtype, shape, one line each, compared with root's); where any rank differs, every rank
// fails (kFailedPrecondition), the differing rank naming its first line that differs and root's
// line there, the others naming the rank: the ranks run different models. Then each variable
// (those named in `only`, or all) is broadcast in name order, in place (FindMutable: a new version,
// so that device copies are uploaded again).
#pragma once

#include <set>
#include <string>

#include "ir/status.h"
#include "runtime/distributed/communicator.h"
#include "runtime/variable_store.h"

namespace kiln {

// `store`'s values must all be on the host (VariableStore::MaterializeAll).
Status BroadcastVariables(Communicator& comm, VariableStore& store, int root,
                          const std::set<std::string>& only = {});

}  // namespace kiln
