#include "ir/precision.h"

namespace kiln {

std::string_view PrecisionListName(PrecisionList list) {
  switch (list) {
    case PrecisionList::kAlways16:
      return "always16";
    case PrecisionList::kFollow:
      return "follow";
    case PrecisionList::kKeep32:
      return "keep32";
    case PrecisionList::kNeutral:
      return "neutral";
  }
  return "?";
}

std::optional<PrecisionList> PrecisionListFromName(std::string_view name) {
  for (PrecisionList list : {PrecisionList::kAlways16, PrecisionList::kFollow,
                             PrecisionList::kKeep32, PrecisionList::kNeutral})
    if (PrecisionListName(list) == name) return list;
  return std::nullopt;
}

const std::map<std::string, PrecisionList>& DefaultPrecisionLists() {
  static const std::map<std::string, PrecisionList> lists = [] {
    std::map<std::string, PrecisionList> m;
    auto put = [&m](PrecisionList list, std::initializer_list<const char*> ops) {
      for (const char* op : ops) m[op] = list;
    };
    put(PrecisionList::kAlways16,
        {"MatMul", "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"});
    put(PrecisionList::kFollow,
        {"Add",       "Sub",           "Mul",           "Div",       "Neg",       "Abs",
         "Maximum",   "Minimum",       "Clip",          "Relu",      "LeakyRelu", "Elu",
         "Gelu",      "Sigmoid",       "Tanh",          "BiasAdd",   "MaxPool2D", "MaxPool2DGrad",
         "AvgPool2D", "AvgPool2DGrad", "GlobalAvgPool", "BatchNorm", "Dropout",   "Select"});
    put(PrecisionList::kKeep32, {"Exp",
                                 "Log",
                                 "Pow",
                                 "Sqrt",
                                 "Rsqrt",
                                 "Reciprocal",
                                 "Square",
                                 "Erf",
                                 "Softmax",
                                 "LogSoftmax",
                                 "SoftmaxCrossEntropy",
                                 "SoftmaxCrossEntropyGrad",
                                 "BatchNormGrad",
                                 "LayerNorm",
                                 "Sum",
                                 "Mean",
                                 "Prod",
                                 "SumLike",
                                 "TileGrad",
                                 "Max",
                                 "Min"});
    put(PrecisionList::kNeutral,
        {"Reshape",   "ReshapeLike", "Flatten",       "Squeeze",      "Unsqueeze",
         "Transpose", "Concat",      "ConcatGrad",    "Split",        "Slice",
         "SliceGrad", "Pad",         "PadGrad",       "Gather",       "GatherElements",
         "Tile",      "BroadcastTo", "BroadcastLike", "Identity",     "StopGradient",
         "ZerosLike", "OnesLike",    "ArgMax",        "ArgMin",       "Equal",
         "Less",      "LessEqual",   "Greater",       "GreaterEqual", "Floor",
         "Ceil",      "Round",       "Sign"});
    return m;
  }();
  return lists;
}

std::optional<PrecisionList> PrecisionListOf(const PrecisionPolicy& policy, const std::string& op) {
  if (auto it = policy.op_lists.find(op); it != policy.op_lists.end()) return it->second;
  const auto& defaults = DefaultPrecisionLists();
  if (auto it = defaults.find(op); it != defaults.end()) return it->second;
  return std::nullopt;
}

Result<DType> ParsePrecision(std::string_view name) {
  if (name == "fp32" || name == "f32") return f32;
  if (name == "bf16") return bf16;
  if (name == "fp16" || name == "f16") return f16;
  return MakeError(ErrorCode::kInvalidArgument, "precision '", name,
                   "': expected fp32, bf16 or fp16");
}

std::string_view PrecisionName(DType compute) {
  return compute == bf16 ? "bf16" : compute == f16 ? "fp16" : "fp32";
}

}  // namespace kiln
