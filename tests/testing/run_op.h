// Test helpers: build a one-op graph from constant inputs and run it on the reference session.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "runtime/session.h"

namespace kiln::testing {

// Runs `make(inputs...)` with each tensor as a Constant input; returns output `port`.
// REQUIREs success (Catch2) so failures show the error.
Tensor RunOp(const std::vector<Tensor>& inputs,
             const std::function<Value(GraphBuilder&, const std::vector<Value>&)>& make);
// The error from building or running the same thing ("" if it succeeded).
std::string RunOpError(const std::vector<Tensor>& inputs,
                       const std::function<Value(GraphBuilder&, const std::vector<Value>&)>& make);

template <typename T>
Tensor T1(std::vector<T> v) {
  return Tensor::FromVector<T>(Shape{static_cast<int64_t>(v.size())}, v);
}
template <typename T>
Tensor TN(Shape s, std::vector<T> v) {
  return Tensor::FromVector<T>(std::move(s), v);
}

}  // namespace kiln::testing
