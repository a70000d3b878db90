#include "ir/tensor.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <new>
#include <sstream>

#include "ir/live_tensor_bytes.h"

namespace kiln {
namespace {

std::atomic<int64_t> live_tensor_bytes{0};

std::shared_ptr<uint8_t> AllocateAligned(int64_t bytes, bool zero_filled) {
  size_t size = static_cast<size_t>(bytes > 0 ? bytes : 1);
  void* p = ::operator new (size, std::align_val_t{64});
  if (zero_filled) std::memset(p, 0, size);
  live_tensor_bytes += static_cast<int64_t>(size);
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [size](uint8_t* q) {
    live_tensor_bytes -= static_cast<int64_t>(size);
    ::operator delete (q, std::align_val_t{64});
  });
}

Result<int64_t> CheckedByteSize(DType dtype, const Shape& shape) {
  if (dtype == DType::kInvalid) return MakeError(ErrorCode::kInvalidArgument, "invalid dtype");
  if (IsContainer(dtype))
    return MakeError(ErrorCode::kInvalidArgument, "a ", DTypeName(dtype),
                     " value holds tensors, not bytes of its own");
  int64_t n = 1;
  for (int64_t d : shape.dims()) {
    if (d < 0)
      return MakeError(ErrorCode::kInvalidArgument, "tensor shape ", shape.ToString(),
                       " has an unknown dimension");
    if (d != 0 && n > kMaxTensorBytes / d)
      return MakeError(ErrorCode::kResourceExhausted, "tensor of shape ", shape.ToString(),
                       " exceeds the limit of ", kMaxTensorBytes, " bytes");
    n *= d;
  }
  if (n > kMaxTensorBytes / DTypeSize(dtype))
    return MakeError(ErrorCode::kResourceExhausted, "tensor ", DTypeName(dtype), shape.ToString(),
                     " exceeds the limit of ", kMaxTensorBytes, " bytes");
  return n;
}

template <typename To>
To SaturatingFromDouble(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<To>::min()))
    return std::numeric_limits<To>::min();
  if (v >= static_cast<double>(std::numeric_limits<To>::max()))
    return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

}  // namespace

int64_t LiveTensorBytes() { return live_tensor_bytes.load(); }

Tensor::Tensor(DType dtype, Shape shape) {
  Result<int64_t> n = CheckedByteSize(dtype, shape);
  KILN_CHECK(n.ok());
  dtype_ = dtype;
  shape_ = std::move(shape);
  num_elements_ = *n;
  storage_ = AllocateAligned(byte_size(), /*zero_filled=*/true);
}

Tensor Tensor::Uninitialized(DType dtype, Shape shape) {
  Result<int64_t> n = CheckedByteSize(dtype, shape);
  KILN_CHECK(n.ok());
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.num_elements_ = *n;
  t.storage_ = AllocateAligned(t.byte_size(), /*zero_filled=*/false);
  return t;
}

Result<Tensor> Tensor::Create(DType dtype, Shape shape) {
  KILN_ASSIGN_OR_RETURN(int64_t n, CheckedByteSize(dtype, shape));
  (void)n;
  try {
    return Tensor(dtype, std::move(shape));
  } catch (const std::bad_alloc&) {
    return MakeError(ErrorCode::kResourceExhausted, "out of memory allocating ", DTypeName(dtype),
                     shape.ToString());
  }
}

Result<Tensor> Tensor::Sequence(DType element_dtype, std::vector<Tensor> elements) {
  if (!IsNumeric(element_dtype) && element_dtype != boolean)
    return MakeError(ErrorCode::kInvalidArgument, "a sequence holds tensors, not ",
                     DTypeName(element_dtype));
  for (size_t i = 0; i < elements.size(); ++i)
    if (elements[i].dtype() != element_dtype)
      return MakeError(ErrorCode::kInvalidArgument, "element ", i, " of a sequence of ",
                       DTypeName(element_dtype), " is ",
                       elements[i].valid() ? DTypeName(elements[i].dtype()) : "missing");
  Tensor t;
  t.dtype_ = seq;
  t.container_ = std::make_shared<const Container>(Container{element_dtype, std::move(elements)});
  return t;
}

Tensor Tensor::Optional(DType element_dtype) {
  Tensor t;
  t.dtype_ = optional;
  t.container_ = std::make_shared<const Container>(Container{element_dtype, {}});
  return t;
}

Tensor Tensor::Optional(Tensor value) {
  KILN_CHECK(value.valid());
  Tensor t;
  t.dtype_ = optional;
  const DType element_dtype = value.dtype();
  t.container_ = std::make_shared<const Container>(Container{element_dtype, {std::move(value)}});
  return t;
}

DType Tensor::element_dtype() const {
  KILN_CHECK(container_ != nullptr);
  return container_->element_dtype;
}

const std::vector<Tensor>& Tensor::elements() const {
  KILN_CHECK(container_ != nullptr);
  return container_->elements;
}

Tensor Tensor::FromDoubles(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  KILN_CHECK(static_cast<int64_t>(values.size()) == t.num_elements());
  for (size_t i = 0; i < values.size(); ++i) t.SetDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

double Tensor::GetDouble(int64_t i) const {
  switch (dtype_) {
    case DType::kF32:
      return data<float>()[i];
    case DType::kF64:
      return data<double>()[i];
    case DType::kF16:
      return HalfToFloat(data<uint16_t>()[i]);
    case DType::kBF16:
      return BFloat16ToFloat(data<uint16_t>()[i]);
    case DType::kI8:
      return data<int8_t>()[i];
    case DType::kU8:
      return data<uint8_t>()[i];
    case DType::kI32:
      return data<int32_t>()[i];
    case DType::kI64:
      return static_cast<double>(data<int64_t>()[i]);
    case DType::kBool:
      return data<uint8_t>()[i] ? 1.0 : 0.0;
    case DType::kI16:
      return data<int16_t>()[i];
    case DType::kU16:
      return data<uint16_t>()[i];
    case DType::kU32:
      return data<uint32_t>()[i];
    case DType::kU64:
      return static_cast<double>(data<uint64_t>()[i]);
    case DType::kSeq:
    case DType::kOptional:
    case DType::kInvalid:
      break;
  }
  KILN_CHECK(false);
}

void Tensor::SetDouble(int64_t i, double v) {
  switch (dtype_) {
    case DType::kF32:
      data<float>()[i] = static_cast<float>(v);
      return;
    case DType::kF64:
      data<double>()[i] = v;
      return;
    case DType::kF16:
      data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v));
      return;
    case DType::kBF16:
      data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(v));
      return;
    case DType::kI8:
      data<int8_t>()[i] = SaturatingFromDouble<int8_t>(v);
      return;
    case DType::kU8:
      data<uint8_t>()[i] = SaturatingFromDouble<uint8_t>(v);
      return;
    case DType::kI32:
      data<int32_t>()[i] = SaturatingFromDouble<int32_t>(v);
      return;
    case DType::kI64:
      data<int64_t>()[i] = SaturatingFromDouble<int64_t>(v);
      return;
    case DType::kBool:
      data<uint8_t>()[i] = v != 0.0;
      return;
    case DType::kI16:
      data<int16_t>()[i] = SaturatingFromDouble<int16_t>(v);
      return;
    case DType::kU16:
      data<uint16_t>()[i] = SaturatingFromDouble<uint16_t>(v);
      return;
    case DType::kU32:
      data<uint32_t>()[i] = SaturatingFromDouble<uint32_t>(v);
      return;
    case DType::kU64:
      data<uint64_t>()[i] = SaturatingFromDouble<uint64_t>(v);
      return;
    case DType::kSeq:
    case DType::kOptional:
    case DType::kInvalid:
      break;
  }
  KILN_CHECK(false);
}

int64_t Tensor::GetInt(int64_t i) const {
  switch (dtype_) {
    case DType::kI8:
      return data<int8_t>()[i];
    case DType::kU8:
      return data<uint8_t>()[i];
    case DType::kI32:
      return data<int32_t>()[i];
    case DType::kI64:
      return data<int64_t>()[i];
    case DType::kBool:
      return data<uint8_t>()[i] ? 1 : 0;
    case DType::kI16:
      return data<int16_t>()[i];
    case DType::kU16:
      return data<uint16_t>()[i];
    case DType::kU32:
      return data<uint32_t>()[i];
    case DType::kU64:  // the same 64 bits: values from 2^63 on read as negative
      return static_cast<int64_t>(data<uint64_t>()[i]);
    default:
      return SaturatingFromDouble<int64_t>(GetDouble(i));
  }
}

void Tensor::SetInt(int64_t i, int64_t v) {
  switch (dtype_) {
    case DType::kI8:
      data<int8_t>()[i] = static_cast<int8_t>(v);
      return;
    case DType::kU8:
      data<uint8_t>()[i] = static_cast<uint8_t>(v);
      return;
    case DType::kI32:
      data<int32_t>()[i] = static_cast<int32_t>(v);
      return;
    case DType::kI64:
      data<int64_t>()[i] = v;
      return;
    case DType::kBool:
      data<uint8_t>()[i] = v != 0;
      return;
    case DType::kI16:
      data<int16_t>()[i] = static_cast<int16_t>(v);
      return;
    case DType::kU16:
      data<uint16_t>()[i] = static_cast<uint16_t>(v);
      return;
    case DType::kU32:
      data<uint32_t>()[i] = static_cast<uint32_t>(v);
      return;
    case DType::kU64:
      data<uint64_t>()[i] = static_cast<uint64_t>(v);
      return;
    default:
      SetDouble(i, static_cast<double>(v));
      return;
  }
}

std::vector<double> Tensor::ToDoubles() const {
  std::vector<double> out(num_elements_);
  for (int64_t i = 0; i < num_elements_; ++i) out[i] = GetDouble(i);
  return out;
}

std::vector<int64_t> Tensor::ToInts() const {
  std::vector<int64_t> out(num_elements_);
  for (int64_t i = 0; i < num_elements_; ++i) out[i] = GetInt(i);
  return out;
}

Tensor Tensor::Clone() const {
  if (!valid() || container_) return *this;  // (containers are immutable)
  Tensor t = Uninitialized(dtype_, shape_);
  if (byte_size()) std::memcpy(t.raw_data(), raw_data(), byte_size());
  return t;
}

Result<Tensor> Tensor::Reshaped(Shape shape) const {
  if (!shape.IsFullyKnown() || shape.NumElements() != num_elements_)
    return MakeError(ErrorCode::kInvalidArgument, "cannot reshape ", shape_.ToString(), " (",
                     num_elements_, " elements) to ", shape.ToString());
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::CastTo(DType dtype) const {
  Tensor t(dtype, shape_);
  bool integral = IsInteger(dtype) || dtype == boolean;
  bool from_integral = IsInteger(dtype_) || dtype_ == boolean;
  for (int64_t i = 0; i < num_elements_; ++i) {
    if (integral && from_integral)
      t.SetInt(i, GetInt(i));
    else
      t.SetDouble(i, GetDouble(i));
  }
  return t;
}

bool Tensor::BitwiseEquals(const Tensor& other) const {
  if (container_ || other.container_) {
    if (dtype_ != other.dtype_ || !container_ || !other.container_ ||
        element_dtype() != other.element_dtype() || elements().size() != other.elements().size())
      return false;
    for (size_t i = 0; i < elements().size(); ++i)
      if (!elements()[i].BitwiseEquals(other.elements()[i])) return false;
    return true;
  }
  return dtype_ == other.dtype_ && shape_ == other.shape_ &&
         (byte_size() == 0 || std::memcmp(raw_data(), other.raw_data(), byte_size()) == 0);
}

std::string Tensor::Summary(int max_values) const {
  if (!valid()) return "<empty>";
  std::ostringstream os;
  if (container_) {  // "seq(f32, 2) {f32[3] {...}, f32[1] {...}}"
    os << DTypeName(dtype_) << "(" << DTypeName(element_dtype()) << ", " << elements().size()
       << ")";
    if (max_values <= 0 || elements().empty()) return os.str();
    os << " {";
    for (size_t i = 0; i < elements().size(); ++i) {
      if (i == 3) {
        os << ", ...";
        break;
      }
      os << (i ? ", " : "") << elements()[i].Summary(max_values);
    }
    os << "}";
    return os.str();
  }
  os << DTypeName(dtype_) << shape_.ToString();
  if (max_values <= 0) return os.str();
  os << " {";
  int64_t shown = std::min<int64_t>(num_elements_, max_values);
  for (int64_t i = 0; i < shown; ++i) {
    if (i) os << ", ";
    if (IsFloat(dtype_))
      os << GetDouble(i);
    else if (dtype_ == boolean)
      os << (GetInt(i) ? "true" : "false");
    else
      os << GetInt(i);
  }
  if (shown < num_elements_) os << ", ... (" << num_elements_ << " values)";
  os << "}";
  return os.str();
}

}  // namespace kiln
