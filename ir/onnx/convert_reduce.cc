// ONNX reductions: ReduceSum/Mean/Max/Min/Prod map to kiln's; ReduceL1, ReduceL2, ReduceLogSum,
// ReduceLogSumExp and ReduceSumSquare are composed (ReduceLogSumExp subtracts the max first, for
// stability). Axes come from the attribute, or from input 1 for ReduceSum from opset 13; they must
// be known at import. ArgMax/ArgMin and TopK map one to one (TopK's K known at import, else the
// node converts at run time).
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"

namespace kiln::onnx_import {
namespace {

Status ConvertReduce(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  const std::string& op = n.op_type();
  std::vector<int64_t> axes;
  bool axes_input = op == "ReduceSum" ? n.opset() >= 13 : n.opset() >= 18;
  if (axes_input) {
    if (n.has_input(1)) {
      KILN_ASSIGN_OR_RETURN(axes, n.ConstInts(1));
    }
  } else {
    KILN_ASSIGN_OR_RETURN(axes, n.Ints("axes"));
  }
  KILN_ASSIGN_OR_RETURN(int64_t keepdims, n.Int("keepdims", 1));
  KILN_ASSIGN_OR_RETURN(int64_t noop, n.Int("noop_with_empty_axes", 0));
  if (axes.empty() && noop) {
    n.SetOutput(0, Identity(x));
    return OkStatus();
  }
  bool keep = keepdims != 0;
  Value y;
  if (op == "ReduceSum") y = Sum(x, axes, keep);
  if (op == "ReduceMean") y = Mean(x, axes, keep);
  if (op == "ReduceMax") y = Max(x, axes, keep);
  if (op == "ReduceMin") y = Min(x, axes, keep);
  if (op == "ReduceProd") y = Prod(x, axes, keep);
  if (op == "ReduceL1") y = Sum(Abs(x), axes, keep);
  if (op == "ReduceL2") y = Sqrt(Sum(Square(x), axes, keep));
  if (op == "ReduceSumSquare") y = Sum(Square(x), axes, keep);
  if (op == "ReduceLogSum") y = Log(Sum(x, axes, keep));
  if (op == "ReduceLogSumExp") {
    Value m = StopGradient(Max(x, axes, /*keepdims=*/true));
    Value s = Log(Sum(Exp(x - m), axes, /*keepdims=*/true)) + m;
    // Not keeping dims: drop the reduced (now size-1) axes; all of them leaves a scalar.
    y = keep ? s : axes.empty() ? Sum(s, {}, false) : Squeeze(s, axes);
  }
  n.SetOutput(0, y);
  return OkStatus();
}

Status ConvertArg(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 0));
  KILN_ASSIGN_OR_RETURN(int64_t keepdims, n.Int("keepdims", 1));
  KILN_ASSIGN_OR_RETURN(int64_t last, n.Int("select_last_index", 0));
  n.SetOutput(0, n.op_type() == "ArgMax" ? ArgMax(x, axis, keepdims != 0, last != 0)
                                         : ArgMin(x, axis, keepdims != 0, last != 0));
  return OkStatus();
}

// TopK: k from input 1 (opset 10 on; needed at import, else the node converts at run time) or
// the attribute `k` (opset 1).
Status ConvertTopK(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  int64_t k = 0;
  if (n.opset() >= 10) {
    if (!n.known(1)) return n.NotKnownYet("needs K known at import");
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ks, n.ConstInts(1));
    if (ks.size() != 1) return n.Fail("K must hold one value, got ", ks.size());
    k = ks[0];
  } else {
    KILN_ASSIGN_OR_RETURN(k, n.Int("k", -1));
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", -1));
  KILN_ASSIGN_OR_RETURN(int64_t largest, n.Int("largest", 1));
  KILN_ASSIGN_OR_RETURN(int64_t sorted, n.Int("sorted", 1));
  TopKResult top = TopK(x, k, axis, largest != 0, sorted != 0);
  n.SetOutput(0, top.values);
  n.SetOutput(1, top.indices);
  return OkStatus();
}

}  // namespace

void AddReduceConverters(ConverterTable& t) {
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    t[op] = ConvertReduce;
  t["ArgMax"] = ConvertArg;
  t["ArgMin"] = ConvertArg;
  t["TopK"] = ConvertTopK;
}

}  // namespace kiln::onnx_import
