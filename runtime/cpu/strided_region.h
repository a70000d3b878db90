// A copy's region between two strided views of dense buffers, as the "strided_copy" step's
// attributes give it (compiler/copy_lowering.h) and the "assign" step's region update reads them
// (runtime/cpu/state_steps.cc): dims (the region's extent per axis), src_offset, src_strides,
// dst_offset, dst_strides, in elements (a negative stride walks backwards).
//
// Contract: ReadStridedRegion checks what a module file could get wrong (kInternal naming the
// step): as many strides as dims, no negative extent, no more elements than the destination
// holds, and every element both views reach inside its buffer (src_elements, dst_elements),
// without overflow. The region it returns is simplified: dims of extent 1 dropped, and
// neighbouring dims that both views walk as one merged, so that its innermost runs are as long as
// they can be; an empty region (an extent of 0) has `empty` set and is not simplified.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/status.h"
#include "runtime/executable.h"

namespace kiln::cpu {

struct StridedView {
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

struct StridedRegion {
  std::vector<int64_t> dims;
  StridedView src, dst;
  bool empty = false;
  int64_t count() const;  // its elements
};

Result<StridedRegion> ReadStridedRegion(const Step& step, int64_t src_elements,
                                        int64_t dst_elements);

}  // namespace kiln::cpu
