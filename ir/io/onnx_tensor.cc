#include "ir/io/onnx_tensor.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <iterator>
#include <optional>

#include "ir/file_util.h"
#include "ir/io/tensor_file.h"
#include "ir/protobuf_errors.h"
#include "proto/onnx.pb.h"

namespace kiln {
namespace {

static_assert(std::endian::native == std::endian::little, "ONNX raw_data is little-endian");

using P = onnx::TensorProto;

// The typed field that holds `dtype`'s values when raw_data is not used.
const char* TypedFieldName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "float_data";
    case DType::kF64:
      return "double_data";
    case DType::kI64:
      return "int64_data";
    case DType::kU32:
    case DType::kU64:
      return "uint64_data";
    default:
      return "int32_data";
  }
}

// How many values that field holds.
int64_t TypedFieldSize(const P& p, DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return p.float_data_size();
    case DType::kF64:
      return p.double_data_size();
    case DType::kI64:
      return p.int64_data_size();
    case DType::kU32:
    case DType::kU64:
      return p.uint64_data_size();
    default:
      return p.int32_data_size();
  }
}

// Number of values in the typed fields, whichever is set.
int64_t TypedValueCount(const P& p) {
  return int64_t{p.float_data_size()} + p.double_data_size() + p.int64_data_size() +
         p.int32_data_size() + p.uint64_data_size() + p.string_data_size();
}

// Copies the typed field's values into `t` (already checked to hold t.num_elements() of them).
void CopyTypedValues(const P& p, Tensor& t) {
  int64_t n = t.num_elements();
  switch (t.dtype()) {
    case DType::kF32:
      std::copy(p.float_data().begin(), p.float_data().end(), t.data<float>());
      return;
    case DType::kF64:
      std::copy(p.double_data().begin(), p.double_data().end(), t.data<double>());
      return;
    case DType::kI64:
      std::copy(p.int64_data().begin(), p.int64_data().end(), t.data<int64_t>());
      return;
    case DType::kI32:
      std::copy(p.int32_data().begin(), p.int32_data().end(), t.data<int32_t>());
      return;
    case DType::kF16:
    case DType::kBF16:  // the 16 bits of each value, stored in an int32
      for (int64_t i = 0; i < n; ++i)
        t.data<uint16_t>()[i] = static_cast<uint16_t>(p.int32_data(i));
      return;
    case DType::kI8:
    case DType::kU8:
    case DType::kI16:
    case DType::kU16:
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) t.SetInt(i, p.int32_data(i));
      return;
    case DType::kU32:
    case DType::kU64:
      for (int64_t i = 0; i < n; ++i) t.SetInt(i, static_cast<int64_t>(p.uint64_data(i)));
      return;
    case DType::kSeq:
    case DType::kOptional:
    case DType::kInvalid:
      break;
  }
  KILN_CHECK(false);
}

}  // namespace

int32_t OnnxTypeOf(DType t) {
  switch (t) {
    case DType::kF32:
      return P::FLOAT;
    case DType::kF64:
      return P::DOUBLE;
    case DType::kF16:
      return P::FLOAT16;
    case DType::kBF16:
      return P::BFLOAT16;
    case DType::kI8:
      return P::INT8;
    case DType::kU8:
      return P::UINT8;
    case DType::kI32:
      return P::INT32;
    case DType::kI64:
      return P::INT64;
    case DType::kBool:
      return P::BOOL;
    case DType::kI16:
      return P::INT16;
    case DType::kU16:
      return P::UINT16;
    case DType::kU32:
      return P::UINT32;
    case DType::kU64:
      return P::UINT64;
    case DType::kSeq:
    case DType::kOptional:
    case DType::kInvalid:
      break;
  }
  KILN_CHECK(false);
}

std::string OnnxTypeName(int32_t t) {
  static const char* const kNames[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",   "INT16",
      "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",  "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",     "FLOAT4E2M1"};
  if (t >= 0 && t < static_cast<int32_t>(std::size(kNames))) return kNames[t];
  return "data type " + std::to_string(t);
}

std::optional<DType> DTypeOfOnnx(int32_t t) {
  switch (t) {
    case P::FLOAT:
      return f32;
    case P::DOUBLE:
      return f64;
    case P::FLOAT16:
      return f16;
    case P::BFLOAT16:
      return bf16;
    case P::INT8:
      return i8;
    case P::UINT8:
      return u8;
    case P::INT32:
      return i32;
    case P::INT64:
      return i64;
    case P::BOOL:
      return boolean;
    case P::INT16:
      return i16;
    case P::UINT16:
      return u16;
    case P::UINT32:
      return u32;
    case P::UINT64:
      return u64;
    default:
      return std::nullopt;
  }
}

Result<Tensor> OnnxTensorFromProto(const onnx::TensorProto& p, const std::string& origin) {
  if (p.data_location() == P::EXTERNAL || p.external_data_size() > 0)
    return MakeError(ErrorCode::kUnimplemented, "'", origin,
                     "': ONNX tensors with external data are not supported yet");
  std::optional<DType> dtype = DTypeOfOnnx(p.data_type());
  if (!dtype)
    return MakeError(ErrorCode::kUnimplemented, "'", origin, "': ONNX tensor data type ",
                     OnnxTypeName(p.data_type()),
                     " is not supported; expected FLOAT, DOUBLE, FLOAT16, "
                     "BFLOAT16, INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64 or BOOL");
  if (p.has_segment())
    return MakeError(ErrorCode::kUnimplemented, "'", origin,
                     "': segmented ONNX tensors are not supported");
  Shape shape(std::vector<int64_t>(p.dims().begin(), p.dims().end()));
  int size = DTypeSize(*dtype);

  if (p.has_raw_data()) {
    if (TypedValueCount(p) > 0)
      return MakeError(ErrorCode::kDataLoss, "'", origin,
                       "': the ONNX tensor has both raw_data and ",
                       "typed data fields; expected one of them");
    const std::string& raw = p.raw_data();
    if (raw.size() % size != 0)
      return MakeError(ErrorCode::kDataLoss, "'", origin, "': raw_data is ", raw.size(),
                       " bytes, not a whole number of ", size, "-byte ", DTypeName(*dtype),
                       " elements");
    KILN_ASSIGN_OR_RETURN(Tensor t,
                          internal::CreateTensorForData(*dtype, shape, raw.size() / size, origin));
    if (!raw.empty()) std::memcpy(t.raw_data(), raw.data(), raw.size());
    if (*dtype == DType::kBool)
      for (int64_t i = 0; i < t.num_elements(); ++i)
        t.data<uint8_t>()[i] = t.data<uint8_t>()[i] != 0;
    return t;
  }
  int64_t count = TypedFieldSize(p, *dtype);
  if (count != TypedValueCount(p))
    return MakeError(ErrorCode::kDataLoss, "'", origin, "': an ONNX ", OnnxTypeName(p.data_type()),
                     " tensor keeps its values in raw_data or ", TypedFieldName(*dtype),
                     ", but other typed fields are set");
  KILN_ASSIGN_OR_RETURN(Tensor t, internal::CreateTensorForData(*dtype, shape, count, origin));
  CopyTypedValues(p, t);
  return t;
}

Result<Tensor> ReadOnnxTensor(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes,
                        ReadFileToString(path, kMaxTensorBytes + (int64_t{1} << 20)));
  onnx::TensorProto p;
  if (ProtobufErrorCapture protobuf_says; !p.ParseFromString(bytes))
    return MakeError(ErrorCode::kDataLoss, "'", path,
                     "' is not a valid serialized ONNX TensorProto", protobuf_says.Detail());
  return OnnxTensorFromProto(p, path);
}

Result<Tensor> OnnxSequenceFromProto(const onnx::SequenceProto& p, DType element_dtype,
                                     const std::string& origin) {
  if (p.sequence_values_size() > 0 || p.optional_values_size() > 0 ||
      (p.elem_type() != onnx::SequenceProto::TENSOR &&
       p.elem_type() != onnx::SequenceProto::UNDEFINED))
    return MakeError(ErrorCode::kUnimplemented, origin,
                     ": a sequence of non-tensors (kiln's sequences hold tensors)");
  std::vector<Tensor> elements;
  for (int i = 0; i < p.tensor_values_size(); ++i) {
    KILN_ASSIGN_OR_RETURN(Tensor t, OnnxTensorFromProto(p.tensor_values(i),
                                                        origin + ": element " + std::to_string(i)));
    elements.push_back(std::move(t));
  }
  if (!elements.empty()) element_dtype = elements[0].dtype();
  Result<Tensor> sequence = Tensor::Sequence(element_dtype, std::move(elements));
  if (!sequence.ok()) return sequence.error().WithContext(origin);
  return sequence;
}

Result<Tensor> OnnxOptionalFromProto(const onnx::OptionalProto& p, DType element_dtype,
                                     DType sequence_element_dtype, const std::string& origin) {
  if (p.has_tensor_value()) {
    KILN_ASSIGN_OR_RETURN(Tensor t, OnnxTensorFromProto(p.tensor_value(), origin));
    return Tensor::Optional(std::move(t));
  }
  if (p.has_sequence_value()) {
    KILN_ASSIGN_OR_RETURN(
        Tensor s, OnnxSequenceFromProto(p.sequence_value(), sequence_element_dtype, origin));
    return Tensor::Optional(std::move(s));
  }
  if (p.has_optional_value())
    return MakeError(ErrorCode::kUnimplemented, origin, ": an optional of an optional");
  if (element_dtype == DType::kInvalid)
    return MakeError(ErrorCode::kInvalidArgument, origin,
                     ": an empty optional of a type kiln does not know");
  return Tensor::Optional(element_dtype);
}

void OnnxTensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->Clear();
  for (int64_t d : t.shape().dims()) p->add_dims(d);
  p->set_data_type(OnnxTypeOf(t.dtype()));
  if (!name.empty()) p->set_name(name);
  p->set_raw_data(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.byte_size()));
}

Status WriteOnnxTensor(const std::string& path, const Tensor& t, const std::string& name) {
  if (!t.valid())
    return MakeError(ErrorCode::kInvalidArgument, "cannot write an invalid tensor to '", path, "'");
  onnx::TensorProto p;
  OnnxTensorToProto(t, name, &p);
  std::string bytes;
  if (!p.SerializeToString(&bytes))
    return MakeError(ErrorCode::kResourceExhausted, "cannot serialize ", t.Summary(0),
                     " as an ONNX ", "TensorProto for '", path,
                     "' (protobuf messages are limited to 2 GiB)");
  return WriteFileAtomically(path, bytes);
}

}  // namespace kiln
