// The flags that choose how a Session runs, shared by kiln run, train, bench and grad:
//   --backend B                 cpu | reference | auto (the default)
//   --threads N                 0 (the default): every core this process may use
//   --precision P               fp32 (the default) | bf16 | fp16: mixed precision (ir/precision.h)
//   --precision-op OP=LIST      move an op to another list (always16|follow|keep32|neutral)
//   --precision-node NODE=LIST  choose for one node (e.g. conv1=keep32)
//   --tf32                      float32 matrix products may use TF32 on a CUDA device
//   --check-numerics            fail at the first node that computes an inf or NaN
//   --memory-limit SIZE         the memory budget (512M, 20G; default: what the process can get)
// kiln compile and kiln inspect take the precision flags (with --tf32) alone.
#pragma once

#include "ir/precision.h"
#include "runtime/session.h"
#include "tools/flags.h"

namespace kiln::cli {

void DeclarePrecisionFlags(Flags& flags);
void DeclareSessionFlags(Flags& flags);

// Malformed values are kInvalidArgument errors (usage errors for the commands).
Result<PrecisionPolicy> PrecisionFromFlags(const Flags& flags);
// --precision-op and --precision-node alone, for a policy computing in `compute` (kiln inspect
// --precision, where --precision is a switch).
Result<PrecisionPolicy> PrecisionListsFromFlags(const Flags& flags, DType compute);
Result<SessionOptions> SessionOptionsFromFlags(const Flags& flags);

}  // namespace kiln::cli
