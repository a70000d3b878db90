// Test helpers: build a GraphBuilder's graph and run it, expecting success or an error.
#pragma once

#include <string>
#include <vector>

#include "ir/builder.h"
#include "runtime/session.h"

namespace kiln::testing {

// Builds the graph (REQUIREs success, printing the builder's error otherwise).
Graph BuildOrFail(const GraphBuilder& g);
// Builds the graph and runs it (REQUIREs success), returning the values of `fetches`.
std::vector<Tensor> EvalAll(const GraphBuilder& g, const std::vector<TensorName>& fetches,
                            const FeedList& feeds = {});
Tensor Eval(const GraphBuilder& g, Value y, const FeedList& feeds = {});
// The message of the error Build() must give.
std::string BuildError(const GraphBuilder& g);
// The message of the error running `y` must give (the graph must build).
std::string RunError(const GraphBuilder& g, Value y, const FeedList& feeds);
// f32 tensor of `shape` holding 0, 1, 2, ...
Tensor Iota(Shape shape);

}  // namespace kiln::testing
