// Op family "detection" (a part of "nn"): NonMaxSuppression and RoiAlign, ONNX's box selection
// and region pooling for object detectors.
//
// NonMaxSuppression(boxes [B, N, 4], scores [B, C, N], max_per_class, iou_threshold,
// score_threshold) -> selected i64 [S, 3]: for every batch entry b and class c, the boxes whose
// score is above score_threshold are taken greedily in descending order of score (equal scores
// in index order), a box being dropped when its intersection over union with a box already taken
// for (b, c) is above iou_threshold, until max_per_class are taken; each taken box is a row
// (b, c, box index), in that order. Boxes are [y1, x1, y2, x2] (any two opposite corners) or,
// with center_point_box, [x_center, y_center, width, height]; boxes that do not overlap, or of
// no area, never suppress one another. The three limits are scalars (or one-element tensors):
// max_per_class an integer (0 or less: nothing is taken), the thresholds floats (a
// score_threshold of -inf takes every box). S is known only from the values. Floats; not
// differentiable.
//
// RoiAlign(x [N, C, H, W], rois [R, 4], batch_indices [R]) -> [R, C, output_height,
// output_width]: region r, the box [x1, y1, x2, y2] of rois row r times spatial_scale (minus half
// a pixel with half_pixel; without it, boxes are at least 1 x 1) over image batch_indices[r], is
// cut into output_height x output_width bins, each sampled on a regular grid of sampling_ratio^2
// points (0: ceil(bin size) per axis) that are bilinearly interpolated (a point more than one
// pixel outside the image reads 0; one inside that border reads the edge). "avg" averages a
// bin's samples; "max" takes, over its samples, the largest of the four weighted corner values
// (as ONNX Runtime and the ONNX reference do). Floats; batch_indices i32 or i64 within [0, N).
// Not differentiable (yet).
#pragma once

#include "ir/builder.h"

namespace kiln {

Value NonMaxSuppression(At boxes, Value scores, Value max_per_class, Value iou_threshold,
                        Value score_threshold, bool center_point_box = false);

struct RoiAlignOptions {
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 0;
  double spatial_scale = 1.0;
  bool max = false;        // "max" mode; "avg" otherwise
  bool half_pixel = true;  // ONNX's coordinate_transformation_mode half_pixel (opset 16 on)
};
Value RoiAlign(At x, Value rois, Value batch_indices, const RoiAlignOptions& options = {});

}  // namespace kiln
