// Tensor: a dense, row-major array of one dtype and a fully known shape.
//
// It also carries the two container values (dtype seq or optional; ir/dtype.h): shape [], no
// bytes and no elements of its own, but a list of tensors: a sequence's elements (each of its
// element dtype), or an optional's value (none or one). Containers are immutable and shared.
//
// Storage is reference counted and 64-byte aligned; copying a Tensor shares it (use Clone() for a
// deep copy). Element accessors by double/int64 work for every dtype and are meant for the
// reference executor, tests and tools; fast paths use data<T>() on the native type.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/status.h"

namespace kiln {

template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() {
  return f32;
}
template <>
constexpr DType DTypeOf<double>() {
  return f64;
}
template <>
constexpr DType DTypeOf<int8_t>() {
  return i8;
}
template <>
constexpr DType DTypeOf<uint8_t>() {
  return u8;
}
template <>
constexpr DType DTypeOf<int32_t>() {
  return i32;
}
template <>
constexpr DType DTypeOf<int64_t>() {
  return i64;
}
template <>
constexpr DType DTypeOf<int16_t>() {
  return i16;
}
template <>
constexpr DType DTypeOf<uint16_t>() {
  return u16;
}
template <>
constexpr DType DTypeOf<uint32_t>() {
  return u32;
}
template <>
constexpr DType DTypeOf<uint64_t>() {
  return u64;
}
template <>
constexpr DType DTypeOf<bool>() {
  return boolean;
}

// The largest tensor kiln will allocate from a file or attribute: 16 GiB.
inline constexpr int64_t kMaxTensorBytes = int64_t{16} << 30;

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled. The shape must be fully known and within kMaxTensorBytes (checked: use Create
  // when the size comes from user input).
  Tensor(DType dtype, Shape shape);
  static Result<Tensor> Create(DType dtype, Shape shape);
  // As the constructor, but its bytes are left as the allocator gives them: for a tensor that is
  // written whole right away (a copy), where zero-filling would be a second pass over it.
  static Tensor Uninitialized(DType dtype, Shape shape);

  template <typename T>
  static Tensor FromVector(Shape shape, const std::vector<T>& values);
  template <typename T>
  static Tensor Scalar(T value) {
    return FromVector<T>(Shape{}, {value});
  }
  // Converts each double to `dtype` (rounding floats, truncating toward zero for integers).
  static Tensor FromDoubles(DType dtype, Shape shape, const std::vector<double>& values);

  // A sequence of tensors of `element_dtype` (a tensor dtype; their shapes may differ). Fails when
  // an element is invalid, a container or of another dtype.
  static Result<Tensor> Sequence(DType element_dtype, std::vector<Tensor> elements);
  // An optional holding none (of `element_dtype`, a tensor dtype or seq), or `value` (valid).
  static Tensor Optional(DType element_dtype);
  static Tensor Optional(Tensor value);
  // A container's element dtype and elements (an optional's: none or its value).
  DType element_dtype() const;
  const std::vector<Tensor>& elements() const;

  bool valid() const { return dtype_ != DType::kInvalid; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t num_elements() const { return num_elements_; }
  int64_t byte_size() const { return num_elements_ * DTypeSize(dtype_); }

  void* raw_data() { return storage_.get(); }
  const void* raw_data() const { return storage_.get(); }
  // How many Tensors share this storage: an in-place update is invisible to others only at 1
  // (or at the count of holders the updater knows about).
  long storage_use_count() const { return storage_.use_count(); }
  template <typename T>
  T* data() {
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw_data());
  }

  // Element i (row-major) converted to or from double / int64, for any dtype.
  double GetDouble(int64_t i) const;
  void SetDouble(int64_t i, double v);
  int64_t GetInt(int64_t i) const;
  void SetInt(int64_t i, int64_t v);
  std::vector<double> ToDoubles() const;
  std::vector<int64_t> ToInts() const;

  Tensor Clone() const;
  // Same data, new shape with the same element count.
  Result<Tensor> Reshaped(Shape shape) const;
  // Element-wise conversion to another dtype.
  Tensor CastTo(DType dtype) const;
  // Same dtype, shape and bytes.
  bool BitwiseEquals(const Tensor& other) const;
  // "f32[2, 3] {1, 2, 3, 4, 5, 6}" with at most `max_values` values shown ("f32[2, 3]" for 0).
  std::string Summary(int max_values = 8) const;

 private:
  DType dtype_ = DType::kInvalid;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<uint8_t> storage_;
  struct Container {
    DType element_dtype;
    std::vector<Tensor> elements;
  };
  std::shared_ptr<const Container> container_;  // set for dtype seq and optional
};

template <typename T>
Tensor Tensor::FromVector(Shape shape, const std::vector<T>& values) {
  Tensor t(DTypeOf<T>(), std::move(shape));
  KILN_CHECK(static_cast<int64_t>(values.size()) == t.num_elements());
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < values.size(); ++i) t.data<uint8_t>()[i] = values[i] ? 1 : 0;
  } else if (!values.empty()) {
    std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  }
  return t;
}

}  // namespace kiln
