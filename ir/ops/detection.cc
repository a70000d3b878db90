#include "ir/ops/detection.h"

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {
namespace {

Status InferNonMaxSuppression(InferContext& ctx) {
  const Shape& boxes = ctx.shape(0);
  const Shape& scores = ctx.shape(1);
  if (boxes.rank() != 3 || (boxes[2] >= 0 && boxes[2] != 4))
    return ctx.Fail("boxes must be [batch, boxes, 4], got ", ctx.input(0).ToString());
  if (scores.rank() != 3)
    return ctx.Fail("scores must be [batch, classes, boxes], got ", ctx.input(1).ToString());
  for (auto [b, s] : {std::pair{0, 0}, std::pair{1, 2}})
    if (boxes[b] >= 0 && scores[s] >= 0 && boxes[b] != scores[s])
      return ctx.Fail("boxes ", boxes.ToString(), " and scores ", scores.ToString(),
                      " disagree on the ", b == 0 ? "batch" : "number of boxes");
  static const char* kLimits[] = {"max_per_class", "iou_threshold", "score_threshold"};
  for (int i = 2; i < 5; ++i) {
    const TensorType& t = ctx.input(i);
    const bool integral = i == 2;
    if (integral ? t.dtype != i64 && t.dtype != i32 : !IsFloat(t.dtype))
      return ctx.Fail(kLimits[i - 2], " must be ", integral ? "an integer" : "a float", ", got ",
                      t.ToString());
    if (t.shape.IsFullyKnown() && t.shape.NumElements() != 1)
      return ctx.Fail(kLimits[i - 2], " must hold one value, got ", t.ToString());
  }
  ctx.AddOutput(i64, Shape{kUnknownDim, 3});
  return OkStatus();
}

}  // namespace

Value NonMaxSuppression(At boxes, Value scores, Value max_per_class, Value iou_threshold,
                        Value score_threshold, bool center_point_box) {
  AttrMap a;
  a.Set("center_point_box", center_point_box);
  return internal::MakeOp("NonMaxSuppression",
                          {boxes.value, scores, max_per_class, iou_threshold, score_threshold},
                          std::move(a), boxes.loc);
}

void RegisterDetectionOps(OpRegistry& r) {
  r.Register(OpDefBuilder("NonMaxSuppression", "nn")
                 .Input("boxes", "T")
                 .Input("scores", "T")
                 .Input("max_per_class", "I")
                 .Input("iou_threshold", "F")
                 .Input("score_threshold", "F")
                 .Output("selected")
                 .Types("T", FloatTypes())
                 .Types("I", IndexTypes())
                 .Types("F", FloatTypes())
                 .Attr("center_point_box", AttrType::kBool, false)
                 .Infer(InferNonMaxSuppression)
                 .NotDifferentiable()
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
}

}  // namespace kiln
