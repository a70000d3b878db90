// Differential testing: runs a graph on each compiled backend ("cpu", "cuda-sim": the CUDA plan on
// the simulated device, and "cuda" where the machine has a GPU) and checks its outputs against
// values the reference executor computed (the oracle). RunOp and EvalAll call it, so every op test
// is also a compiled-against-reference test. Tolerances (DESIGN.md): f32 rtol 1e-4 / atol 1e-5,
// f64 1e-10, f16/bf16 by their precision (rtol 1e-2), integers and bools exact, NaN equals NaN.
// Does nothing when the program has no compiler (runtime-only builds).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/session.h"

namespace kiln::testing {

void CheckCompiledMatchesReference(const Graph& graph, const FeedList& feeds,
                                   const std::vector<TensorName>& fetches,
                                   const std::vector<Tensor>& expected);

// The compiled backends this program can run (none without the compiler).
std::vector<std::string> CompiledBackends();

// Runs `steps` training steps (fetch `loss`, run `train`) on the reference and each compiled
// backend from the same initial variables and checks each step's loss agrees (rtol 1e-4). Does
// nothing without a compiler, like CheckCompiledMatchesReference.
void CheckTrainingMatchesReference(const Graph& graph, const FeedList& feeds,
                                   const TensorName& loss, const TensorName& train, int steps);

// Whether `actual` equals `expected` within the tolerance of its dtype; `why` says where not.
bool CloseForDType(const Tensor& expected, const Tensor& actual, std::string* why);

}  // namespace kiln::testing
