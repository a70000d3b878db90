// Converting ONNX TensorProto messages (and .pb files holding one, as in the ONNX node test data)
// to kiln Tensors; SequenceProto and OptionalProto (of tensors) to sequence and optional values.
//
// Data types: FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT8, UINT8, INT32, INT64, BOOL, from raw_data
// (little-endian) or from the typed fields: float_data (FLOAT), double_data (DOUBLE), int64_data
// (INT64), int32_data (INT32, INT8, UINT8, BOOL, and FLOAT16/BFLOAT16 holding each value's 16
// bits). Other data types (STRING, UINT16, INT16, UINT32, UINT64, complex, float8, 4-bit) and
// external data are kUnimplemented errors naming the type; a data length that does not match the
// dims is kDataLoss; a negative or oversized shape is an error. Nothing a file contains crashes the
// reader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ir/status.h"
#include "ir/tensor.h"

namespace onnx {
class TensorProto;
class SequenceProto;
class OptionalProto;
}  // namespace onnx

namespace kiln {

// The name of a TensorProto.DataType value ("FLOAT", "INT64", ...; "data type N" if unknown).
std::string OnnxTypeName(int32_t onnx_type);
// The TensorProto.DataType of a kiln dtype (any valid one).
int32_t OnnxTypeOf(DType dtype);
// The kiln dtype of a TensorProto.DataType, or nullopt for types kiln does not have.
std::optional<DType> DTypeOfOnnx(int32_t onnx_type);

// Reads a file holding one serialized onnx.TensorProto.
Result<Tensor> ReadOnnxTensor(const std::string& path);
// Converts a TensorProto; `origin` (a path, or an initializer's name) names it in errors.
Result<Tensor> OnnxTensorFromProto(const onnx::TensorProto& p, const std::string& origin);
// A SequenceProto of tensors as a sequence value (Tensor::Sequence); `element_dtype` is an empty
// sequence's (the elements' otherwise).
Result<Tensor> OnnxSequenceFromProto(const onnx::SequenceProto& p, DType element_dtype,
                                     const std::string& origin);
// An OptionalProto holding a tensor, a sequence of tensors or nothing as an optional value
// (Tensor::Optional): an empty one is of `element_dtype` (seq for an optional sequence), an empty
// sequence in it of `sequence_element_dtype`.
Result<Tensor> OnnxOptionalFromProto(const onnx::OptionalProto& p, DType element_dtype,
                                     DType sequence_element_dtype, const std::string& origin);
// Fills `p` with `t` in the raw_data form (little-endian), named `name`.
void OnnxTensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto* p);
// Writes `t` as a TensorProto with raw_data (atomically); `name` goes into the proto's name field.
Status WriteOnnxTensor(const std::string& path, const Tensor& t, const std::string& name = "");

}  // namespace kiln
