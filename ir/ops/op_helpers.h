// Internal helpers shared by the op family files: making builder nodes from Values, and small
// inference utilities. Not part of the public API.
#pragma once

#include <vector>

#include "ir/builder.h"
#include "ir/op_registry.h"

namespace kiln::internal {

// Adds a one-output op to the builder that owns the first valid input (invalid if none).
Value MakeOp(const char* op, const std::vector<Value>& inputs, AttrMap attrs, SourceLocation loc);
// Adds an op and returns all its outputs.
std::vector<Value> MakeOpN(const char* op, const std::vector<Value>& inputs, AttrMap attrs,
                           SourceLocation loc);

// Reads an int-list attribute that must have `n` entries (or be empty: then filled with `fill`).
Result<std::vector<int64_t>> IntsOfLength(const InferContext& ctx, const std::string& attr, size_t n,
                                          int64_t fill);

}  // namespace kiln::internal
