// Op family "detection" (a part of "nn"): NonMaxSuppression, ONNX's box selection for object
// detectors.
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
#pragma once

#include "ir/builder.h"

namespace kiln {

Value NonMaxSuppression(At boxes, Value scores, Value max_per_class, Value iou_threshold,
                        Value score_threshold, bool center_point_box = false);

}  // namespace kiln
