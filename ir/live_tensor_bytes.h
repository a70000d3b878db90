// The bytes held by every tensor of the process that is alive now: each Tensor's storage is counted
// when it is allocated and uncounted when its last holder lets go (ir/tensor.cc). A leak detector
// and an allocation counter: a run that returns with no more tensors alive than before it (its
// fetches aside) has left nothing behind.
#pragma once

#include <cstdint>

namespace kiln {

int64_t LiveTensorBytes();

}  // namespace kiln
