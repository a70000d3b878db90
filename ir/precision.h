// Mixed precision as data: which float32 ops a graph may compute in a 16-bit float type, after
// the four-list design of TensorFlow's auto-mixed-precision.
//
//   always16  worth 16 bits wherever they are (matrix math: MatMul, Conv2D and its gradients);
//   follow    arithmetic that computes in 16 bits when a float input already is 16-bit (Add,
//             BiasAdd, activations, pooling, BatchNorm's apply) and in float32 otherwise;
//   keep32    must stay float32 (Exp, Log, Pow, softmax and its cross-entropy, reductions such as
//             Sum/Mean, normalization statistics, losses);
//   neutral   data movement that is exact in any type (Reshape, Transpose, Concat, Slice, ...),
//             painted like `follow`.
// Each op names its list where it is defined (OpDefBuilder::Precision), or says it has none
// (NoPrecisionList); an op in no list stays float32.
// Accumulation inside 16-bit matrix math is float32; variables stay float32 (master weights).
// passes/ mixed_precision.h applies a policy to a graph; SessionOptions and `kiln --precision`
// choose one; `kiln inspect --precision` prints the lists.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "ir/dtype.h"
#include "ir/status.h"

namespace kiln {

enum class PrecisionList { kAlways16, kFollow, kKeep32, kNeutral };

struct PrecisionPolicy {
  // The type 16-bit ops compute in: bf16 or f16; f32 means no mixed precision at all.
  DType compute = f32;
  // Changes to the default lists, by op name (e.g. {"Exp", kFollow}).
  std::map<std::string, PrecisionList> op_lists;
  // Per-node choices that win over the op's list: kKeep32 pins a node to float32, kAlways16 puts
  // it in 16 bits (follow/neutral behave as for ops).
  std::map<std::string, PrecisionList> node_lists;

  // Float32 matrix products (MatMul, Gemm) may use TF32 tensor cores on a CUDA device: inputs
  // rounded to TF32 (10-bit mantissa), products accumulated in f32, as PyTorch's
  // allow_tf32. No effect on other backends, and none on the graph.
  bool tf32 = false;

  bool enabled() const { return compute != f32; }
};

std::string_view PrecisionListName(PrecisionList list);  // "always16", "follow", ...
std::optional<PrecisionList> PrecisionListFromName(std::string_view name);

// The default lists, op name -> list: each op's own (OpDef::precision, ir/op_registry.h).
std::map<std::string, PrecisionList> DefaultPrecisionLists();

// The list `op` is in under `policy` (its changes first); nullopt when unlisted.
std::optional<PrecisionList> PrecisionListOf(const PrecisionPolicy& policy, const std::string& op);

// "fp32"/"f32" -> f32, "bf16" -> bf16, "fp16"/"f16" -> f16; anything else is kInvalidArgument.
Result<DType> ParsePrecision(std::string_view name);
// "fp32", "bf16", "fp16": the name kiln prints and records in compiled modules.
std::string_view PrecisionName(DType compute);

}  // namespace kiln
