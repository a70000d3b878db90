// ONNX per-element indexing: GatherElements, ScatterElements (reduction none, add, mul) and the
// deprecated Scatter (ScatterElements without reduction), onto kiln's ops of the same names.
#include "ir/onnx/convert_context.h"
#include "ir/ops/array_elements.h"

namespace kiln::onnx_import {
namespace {

Status ConvertGatherElements(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value data, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value indices, n.input(1));
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 0));
  n.SetOutput(0, GatherElements(data, indices, axis));
  return OkStatus();
}

Status ConvertScatterElements(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value data, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value indices, n.input(1));
  KILN_ASSIGN_OR_RETURN(Value updates, n.input(2));
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 0));
  KILN_ASSIGN_OR_RETURN(std::string reduction, n.String("reduction", "none"));
  n.SetOutput(0, ScatterElements(data, indices, updates, axis, reduction));
  return OkStatus();
}

}  // namespace

void AddIndexConverters(ConverterTable& t) {
  t["GatherElements"] = ConvertGatherElements;
  t["ScatterElements"] = ConvertScatterElements;
  t["Scatter"] = ConvertScatterElements;
}

}  // namespace kiln::onnx_import
