// Op family "sequence" (a part of "array"): sequences and optionals of tensors, ONNX's container
// values (dtype seq and optional, ir/dtype.h; Tensor::Sequence and Tensor::Optional at run time).
//
// A container value is a scalar-shaped value ([]) whose elements the ops below make and take
// apart. A sequence holds any number of tensors of one element dtype, of shapes that may differ;
// an optional holds none or one value (a tensor or a sequence).
//
//   SequenceEmpty(dtype)                      -> an empty sequence of `dtype` tensors
//   SequenceConstruct(x0, x1, ...)            -> the sequence {x0, x1, ...} (one dtype)
//   SequenceInsert(s, x[, position])          -> s with x inserted before element `position`
//                                                (in [-n, n], negative from the end; absent: n)
//   SequenceErase(s[, position])              -> s without element `position` (in [-n, n - 1];
//                                                absent: the last)
//   SequenceAt(s, position)                   -> element `position` (in [-n, n - 1]), declared
//                                                `dtype` and `shape` (-1 dims: any)
//   SequenceLength(s)                         -> n (i64 scalar)
//   OptionalOf(x) / OptionalNone(dtype)       -> an optional holding x / nothing
//   OptionalHasElement(o)                     -> bool scalar
//   OptionalGetElement(o)                     -> its value, declared `dtype` and `shape` (an error
//                                                when it holds none)
// Positions are i32 or i64 scalars. The element types an op declares (SequenceAt, the
// element of OptionalGetElement) are checked against the value at run time: a mismatch is an
// error naming the node. Container values live on the host: a plan holding one runs on the
// reference executor on every backend. Not differentiable.
#pragma once

#include <optional>
#include <vector>

#include "ir/builder.h"

namespace kiln {

Value SequenceEmpty(GraphBuilder& g, DType dtype, SourceLocation loc = SourceLocation::current());
Value SequenceConstruct(const std::vector<Value>& elements,
                        SourceLocation loc = SourceLocation::current());
// position: invalid Value for "at the end".
Value SequenceInsert(At sequence, Value element, Value position = Value());
// position: invalid Value for "the last".
Value SequenceErase(At sequence, Value position = Value());
Value SequenceAt(At sequence, Value position, DType dtype, Shape shape);
Value SequenceLength(At sequence);
Value OptionalOf(At value);
Value OptionalNone(GraphBuilder& g, DType dtype, SourceLocation loc = SourceLocation::current());
Value OptionalHasElement(At optional);
// dtype seq (shape []) for an optional sequence.
Value OptionalGetElement(At optional, DType dtype, Shape shape);

}  // namespace kiln
