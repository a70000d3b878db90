// How the reduction routines (reduce_sum, reduce_integer) see their input: its dims (in memory
// order) with size-1 dims dropped and neighbours that are both reduced or both kept merged, so
// that a reduction walks a few long groups instead of many short dims. The last group is the
// contiguous one (stride 1).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/status.h"

namespace kiln::cpu {

struct ReductionGroups {
  std::vector<int64_t> sizes;
  std::vector<bool> reduced;
  int64_t kept = 1;  // the output's elements: the product of the kept dims
};

// `reduced` holds one 0/1 per dim of `dims` (1: reduced away). A tensor of one element gives one
// kept group of size 1; one with a zero dim keeps it as a group of size 0.
ReductionGroups GroupReduction(const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& reduced);

}  // namespace kiln::cpu
