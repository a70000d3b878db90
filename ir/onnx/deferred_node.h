// ONNX nodes converted when their inputs are known (internal to ir/onnx/). A converter that needs
// a value or dim the import does not know (NotKnownYet: Slice's starts fed at run time, Resize's
// scales computed from a fed tensor, a dim a dynamic batch leaves open) does not fail the import:
// the node becomes a Deferred node (ir/ops/deferred.h) holding the NodeProto, and the "onnx"
// expander runs the same converter again once the compiler knows the plan's shapes and values,
// or on every run of the reference executor.
//
// The Deferred node declares its outputs' types: the model's own (value_info or graph outputs)
// where it gives them, else what the op implies (rank and dtype from its inputs and attributes,
// dims unknown). An op whose output rank cannot be told before its values are known, without a
// declared type, is refused as before.
#pragma once

#include <map>
#include <string>

#include "ir/onnx/convert_context.h"
#include "proto/onnx.pb.h"

namespace kiln::onnx_import {

// Replaces the failed conversion of `n` (whose converter said NotKnownYet) with a Deferred node.
// `declared`: the types the model gives its values (value_info, graph outputs).
Status DeferNode(OnnxNode& n, const std::map<std::string, TensorType>& declared);

// Registers the "onnx" expander (once; thread-safe).
void RegisterOnnxExpander();

}  // namespace kiln::onnx_import
