// Internal helpers shared by the op family files: making builder nodes from Values, and small
// inference utilities. Not part of the public API.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/op_registry.h"

namespace kiln::internal {

// Adds a one-output op to the builder that owns the first valid input (invalid if none).
Value MakeOp(const char* op, const std::vector<Value>& inputs, AttrMap attrs, SourceLocation loc);
// Adds an op with `num_outputs` outputs and returns them; when the op cannot be added (the error
// is recorded in the builder), `num_outputs` invalid values, so callers may index them.
std::vector<Value> MakeOpN(const char* op, const std::vector<Value>& inputs, AttrMap attrs,
                           SourceLocation loc, size_t num_outputs);

// An attribute map holding one attribute.
AttrMap OneAttr(const char* name, AttrValue value);

// For gradients: `grad` summed down to the shape of `like` (undoing broadcasting); no node is
// added when both shapes are fully known and equal.
Value SumToShapeOf(Value grad, Value like);
// A scalar constant with `like`'s dtype.
Value ScalarLike(Value like, double value);
// 1 where cond is true, else 0, in `like`'s dtype.
Value MaskLike(Value cond, Value like);

// The number of elements of x over `axes` (non-negative), in x's dtype: a constant when those
// dims are known, else computed from x's run-time shape.
Value CountOverAxes(Value x, const std::vector<int64_t>& axes);

// Registers `def` with its gradient from `grads` (by op name): a family lists every
// differentiable op's gradient in one table, and marks each other op NotDifferentiable() where it
// defines it. An op with neither (a gradient left out by mistake) fails the registry test
// (tests/runtime/registry_test.cc), as does one with both.
void RegisterWithGradient(OpRegistry& r, OpDef def, const std::map<std::string, GradFn>& grads);

// A registry front for one family: Register(def) attaches the family's gradient table.
class RegistryWithGradients {
 public:
  RegistryWithGradients(OpRegistry& registry, const std::map<std::string, GradFn>& grads)
      : registry_(registry), grads_(grads) {}
  void Register(OpDef def) { RegisterWithGradient(registry_, std::move(def), grads_); }

 private:
  OpRegistry& registry_;
  const std::map<std::string, GradFn>& grads_;
};

// `got` may stand where `declared` is expected: the same dtype and rank, equal dims wherever both
// are known.
bool TypesAgree(const TensorType& declared, const TensorType& got);

// Reads an int-list attribute that must have `n` entries (or be empty: then filled with `fill`).
Result<std::vector<int64_t>> IntsOfLength(const InferContext& ctx, const std::string& attr,
                                          size_t n, int64_t fill);

}  // namespace kiln::internal
