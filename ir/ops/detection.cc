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

Status InferRoiAlign(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  const Shape& rois = ctx.shape(1);
  const Shape& indices = ctx.shape(2);
  if (x.rank() != 4) return ctx.Fail("x must be [N, C, H, W], got ", ctx.input(0).ToString());
  if (x[2] == 0 || x[3] == 0)
    return ctx.Fail("cannot sample an empty image ", ctx.input(0).ToString());
  if (rois.rank() != 2 || (rois[1] >= 0 && rois[1] != 4))
    return ctx.Fail("rois must be [R, 4], got ", ctx.input(1).ToString());
  if (indices.rank() != 1 || (indices[0] >= 0 && rois[0] >= 0 && indices[0] != rois[0]))
    return ctx.Fail("batch_indices must be [R] with R = ", rois[0], " (the rows of rois), got ",
                    ctx.input(2).ToString());
  if (ctx.dtype(1) != ctx.dtype(0))
    return ctx.Fail("rois must be ", DTypeName(ctx.dtype(0)), " as x is, got ",
                    ctx.input(1).ToString());
  int64_t size[2];
  const char* names[] = {"output_height", "output_width"};
  for (int i = 0; i < 2; ++i) {
    KILN_ASSIGN_OR_RETURN(size[i], ctx.attrs().GetInt(names[i]));
    if (size[i] < 1) return ctx.Fail("attribute '", names[i], "' must be >= 1, got ", size[i]);
  }
  KILN_ASSIGN_OR_RETURN(int64_t ratio, ctx.attrs().GetInt("sampling_ratio"));
  if (ratio < 0) return ctx.Fail("attribute 'sampling_ratio' must be >= 0, got ", ratio);
  ctx.AddOutput(ctx.dtype(0), Shape{rois[0] >= 0 ? rois[0] : indices[0], x[1], size[0], size[1]});
  return OkStatus();
}

// Four multiply-adds per sample point, about four points per output element.
double RoiAlignFlops(const FlopsContext& c) { return 32.0 * KnownElements(c.output); }

}  // namespace

Value RoiAlign(At x, Value rois, Value batch_indices, const RoiAlignOptions& options) {
  AttrMap a;
  a.Set("output_height", options.output_height);
  a.Set("output_width", options.output_width);
  a.Set("sampling_ratio", options.sampling_ratio);
  a.Set("spatial_scale", options.spatial_scale);
  a.Set("max", options.max);
  a.Set("half_pixel", options.half_pixel);
  return internal::MakeOp("RoiAlign", {x.value, rois, batch_indices}, std::move(a), x.loc);
}

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
  r.Register(OpDefBuilder("RoiAlign", "nn")
                 .Input("x", "T")
                 .Input("rois", "T")
                 .Input("batch_indices", "I")
                 .Output("y")
                 .Types("T", FloatTypes())
                 .Types("I", IndexTypes())
                 .Attr("output_height", AttrType::kInt, int64_t{1})
                 .Attr("output_width", AttrType::kInt, int64_t{1})
                 .Attr("sampling_ratio", AttrType::kInt, int64_t{0})
                 .Attr("spatial_scale", AttrType::kFloat, 1.0)
                 .Attr("max", AttrType::kBool, false)
                 .Attr("half_pixel", AttrType::kBool, true)
                 .Infer(InferRoiAlign)
                 .NotDifferentiable()
                 .Precision(PrecisionList::kFollow)
                 .Flops(RoiAlignFlops)
                 .Build());
}

}  // namespace kiln
