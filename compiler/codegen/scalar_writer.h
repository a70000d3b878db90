// Internal to compiler/codegen: writes the SSA lines of a linalg.generic region as MLIR text, with
// the type bookkeeping that every scalar op needs.
//
// A value in the region is a `Scalar`: an SSA name and the kiln dtype it holds. Its *compute type*
// (ComputeType) is what the arith ops see: f32 for f32, f16 and bf16 (16-bit floats are widened on
// load and rounded back to their dtype after every op, so a value always holds a number exactly
// representable in its dtype), f64, i1 for bool, and the integer's own width for integers (u8 is
// i8 with unsigned semantics chosen by the op). Its *storage type* (StorageType) is the memref
// element type: bool is i8 (0/1), bf16 is i16 (raw bits), the others their own type.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace kiln::compiler::internal {

struct Scalar {
  std::string name;  // "%v3"
  DType dtype;
};

std::string ComputeType(DType t);
std::string StorageType(DType t);

std::string Join(const std::vector<std::string>& parts, const std::string& sep);
// "memref<4x8xf32>" of StorageType(t); with `dynamic_first`, dimension 0 is "?" and the layout a
// row-major strided one with a dynamic offset (a subview of rows).
std::string MemRef(const std::vector<int64_t>& dims, DType t, bool dynamic_first = false);

class ScalarWriter {
 public:
  explicit ScalarWriter(std::string indent) : indent_(std::move(indent)) {}

  // Emits "%vN = <rhs>" and returns "%vN".
  std::string Emit(const std::string& rhs);
  // Emits a line as is (e.g. a terminator or the head of a nested region).
  void Line(const std::string& line) { out_ += indent_ + line + "\n"; }
  void Indent() { indent_ += "  "; }
  void Dedent();  // also forgets the constants defined in the region being left
  // A fresh SSA name, for results defined by Line().
  std::string Fresh() { return "%v" + std::to_string(next_++); }

  // Constants of a compute type ("f32", "i32", "i1", "index"); deduplicated while the writer stays
  // at the same nesting depth.
  std::string FloatConst(double v, const std::string& type);
  std::string IntConst(int64_t v, const std::string& type);
  std::string BoolConst(bool v) { return IntConst(v ? 1 : 0, "i1"); }
  // NaN of a float compute type.
  std::string NanConst(const std::string& type);
  // A constant of `dtype`'s compute type holding `v` as the reference would store it (rounded to
  // the float dtype, saturated to the integer dtype, v != 0 for bool).
  std::string DTypeConst(double v, DType dtype);

  // "%r = arith.<op> %a, %b : <type>".
  std::string Binary(const std::string& op, const std::string& a, const std::string& b,
                     const std::string& type);
  std::string Unary(const std::string& op, const std::string& a, const std::string& type);
  std::string Cmp(const std::string& op, const std::string& pred, const std::string& a,
                  const std::string& b, const std::string& type);
  std::string Select(const std::string& c, const std::string& a, const std::string& b,
                     const std::string& type);
  std::string Convert(const std::string& op, const std::string& a, const std::string& from,
                      const std::string& to);

  // Storage -> compute and compute -> storage for one element of `dtype`.
  std::string Load(const std::string& arg, DType dtype);
  std::string Store(const std::string& v, DType dtype);
  // Rounds an f32 compute value to f16 or bf16 (identity for other dtypes).
  std::string RoundTo(const std::string& v, DType dtype);
  // Converts a value of dtype `from` to dtype `to` with the reference's Tensor::CastTo semantics.
  std::string Cast(const std::string& v, DType from, DType to);

  const std::string& text() const { return out_; }

 private:
  std::string Constant(const std::string& literal, const std::string& type);
  std::string FloatToF64(const std::string& v, DType from);
  std::string FloatToInt(const std::string& v, DType from, DType to);

  std::string indent_;
  std::string out_;
  int next_ = 0;
  struct Const {
    std::string name;
    size_t depth;  // indent_.size() where it was defined
  };
  std::map<std::string, Const> consts_;  // "<type>|<literal>" -> its SSA value
};

}  // namespace kiln::compiler::internal
