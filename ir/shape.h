// Shapes of known rank whose dimensions may be unknown (-1) until run time, and the numpy
// broadcasting rule. A Shape is a value type: compare, copy and print it freely.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ir/status.h"

namespace kiln {

inline constexpr int64_t kUnknownDim = -1;

class Shape {
 public:
  Shape() = default;  // a scalar
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  int64_t operator[](int i) const { return dims_[i]; }
  void set_dim(int i, int64_t d) { dims_[i] = d; }
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& mutable_dims() { return dims_; }

  bool IsFullyKnown() const;
  // Product of the dimensions; -1 when any is unknown. A scalar has one element.
  int64_t NumElements() const;
  // "[2, -1, 8]"; a scalar prints as "[]".
  std::string ToString() const;
  // True when `concrete` (fully known) fits this shape: same rank, equal known dims.
  bool IsCompatibleWith(const Shape& concrete) const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  std::vector<int64_t> dims_;
};

// Numpy broadcasting of two shapes; unknown dims broadcast against 1 or another unknown to unknown.
Result<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// Normalizes a possibly negative axis against `rank` (axis in [-rank, rank)).
Result<int> NormalizeAxis(int64_t axis, int rank);

// Row-major strides of a fully known shape (in elements).
std::vector<int64_t> RowMajorStrides(const Shape& s);

}  // namespace kiln
