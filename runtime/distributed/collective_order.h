// Where a plan's collectives go (ops marked collective, ir/op_registry.h: AllReduce): each moves
// to right after the last node it depends on, so that a bucket of gradients starts travelling as
// soon as backward has produced it and the rest of backward runs while it does (the compiled
// backends finish a collective only where a later step needs its outputs:
// runtime/cpu/all_reduce_step.cc). Their consumers stay where they were. The order stays
// topological; without collectives it is unchanged.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace kiln {

void StartCollectivesEarly(std::vector<const Node*>& order);

}  // namespace kiln
