// NonMaxSuppression (ir/ops/detection.h) against hand-worked selections: greedy by score, IoU
// above the threshold suppresses, per batch entry and class, corner and centre boxes, limits;
// and the shapes it refuses; RoiAlign against bilinear samples of a linear image.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ir/ops/detection.h"
#include "tests/testing/eval.h"

using namespace kiln;
using Ints = std::vector<int64_t>;

namespace {

// The selection for `boxes` [1, N, 4] and `scores` [1, C, N] with the given limits.
Ints Select(const std::vector<float>& boxes, const std::vector<float>& scores, int64_t classes,
            int64_t keep, float iou, float floor, bool center = false) {
  const auto n = static_cast<int64_t>(boxes.size() / 4);
  GraphBuilder g;
  Value b = g.Constant(Tensor::FromVector<float>({1, n, 4}, boxes));
  Value s = g.Constant(Tensor::FromVector<float>({1, classes, n}, scores));
  Value picked = NonMaxSuppression(b, s, g.Scalar(static_cast<double>(keep), i64), g.Scalar(iou),
                                   g.Scalar(floor), center);
  Tensor out = testing::Eval(g, picked);
  REQUIRE(out.shape().rank() == 2);
  return out.ToInts();
}

}  // namespace

TEST_CASE("NonMaxSuppression takes boxes greedily by score, dropping overlaps", "[nn]") {
  // Boxes 0 and 1 overlap ([0, 0, 10, 10] and [2, 0, 12, 10]: intersection 8 x 10 = 80, union
  // 120, IoU 0.667); box 2 is apart. Scores 0.9, 0.8, 0.7.
  const std::vector<float> boxes = {0, 0, 10, 10, 2, 0, 12, 10, 20, 20, 30, 30};
  const std::vector<float> scores = {0.9f, 0.8f, 0.7f};
  const float no_floor = -std::numeric_limits<float>::infinity();
  CHECK(Select(boxes, scores, 1, 10, 0.5f, no_floor) == Ints{0, 0, 0, 0, 0, 2});
  CHECK(Select(boxes, scores, 1, 10, 0.7f, no_floor) == Ints{0, 0, 0, 0, 0, 1, 0, 0, 2});
  CHECK(Select(boxes, scores, 1, 1, 0.5f, no_floor) == Ints{0, 0, 0});  // the limit
  CHECK(Select(boxes, scores, 1, 0, 0.5f, no_floor).empty());
  CHECK(Select(boxes, scores, 1, 10, 0.5f, 0.75f) == Ints{0, 0, 0});  // scores above 0.75 only
  // Equal scores in index order; opposite corners in either order; a second class.
  const std::vector<float> flipped = {10, 10, 0, 0, 2, 0, 12, 10, 20, 20, 30, 30};
  CHECK(Select(flipped, {0.5f, 0.5f, 0.5f, 0.1f, 0.2f, 0.3f}, 2, 10, 0.5f, no_floor) ==
        Ints{0, 0, 0, 0, 0, 2, 0, 1, 2, 0, 1, 1});
  // Centre boxes [xc, yc, w, h]: the same three boxes.
  const std::vector<float> centred = {5, 5, 10, 10, 5, 7, 10, 10, 25, 25, 10, 10};
  CHECK(Select(centred, scores, 1, 10, 0.5f, no_floor, true) == Ints{0, 0, 0, 0, 0, 2});
}

TEST_CASE("NonMaxSuppression refuses boxes and scores that do not fit", "[nn]") {
  GraphBuilder g;
  Value boxes = g.Placeholder("boxes", f32, {1, 3, 5});
  Value scores = g.Placeholder("scores", f32, {1, 2, 3});
  NonMaxSuppression(boxes, scores, g.Scalar(1, i64), g.Scalar(0.5), g.Scalar(0));
  CHECK_THAT(testing::BuildError(g), Catch::Contains("boxes must be [batch, boxes, 4]"));
  GraphBuilder h;
  NonMaxSuppression(h.Placeholder("boxes", f32, {1, 3, 4}), h.Placeholder("scores", f32, {1, 2, 4}),
                    h.Scalar(1, i64), h.Scalar(0.5), h.Scalar(0));
  CHECK_THAT(testing::BuildError(h), Catch::Contains("disagree on the number of boxes"));
}

namespace {

// RoiAlign over x = 0, 1, ..., 15 as one 4x4 image (the value at (y, x) is 4y + x, so a bilinear
// sample at (y, x) inside the image is 4y + x too).
std::vector<double> Align(const std::vector<float>& rois, const RoiAlignOptions& o,
                          std::vector<int64_t> images = {0}) {
  GraphBuilder g;
  const auto count = static_cast<int64_t>(rois.size() / 4);
  Value y = RoiAlign(g.Constant(testing::Iota({1, 1, 4, 4})),
                     g.Constant(Tensor::FromVector<float>({count, 4}, rois)),
                     g.Constant(Tensor::FromVector<int64_t>({count}, images)), o);
  return testing::Eval(g, y).ToDoubles();
}

}  // namespace

TEST_CASE("RoiAlign samples bins bilinearly, averages or takes the largest corner", "[nn]") {
  RoiAlignOptions o;
  o.sampling_ratio = 1;
  o.half_pixel = false;
  // One bin over [0, 3] x [0, 3]: one sample at its centre (1.5, 1.5).
  CHECK(Align({0, 0, 3, 3}, o) == std::vector<double>{7.5});
  // 2x2 bins over the same box: centres 0.75 and 2.25 per axis.
  o.output_height = o.output_width = 2;
  CHECK(Align({0, 0, 3, 3}, o) == std::vector<double>{3.75, 5.25, 9.75, 11.25});
  // half_pixel shifts the box by half a pixel: [0.5, 3.5] is [0, 3] again.
  o.half_pixel = true;
  CHECK(Align({0.5f, 0.5f, 3.5f, 3.5f}, o) == std::vector<double>{3.75, 5.25, 9.75, 11.25});
  // spatial_scale: the box in a 2x coarser frame.
  o.half_pixel = false;
  o.spatial_scale = 2;
  CHECK(Align({0, 0, 1.5f, 1.5f}, o) == std::vector<double>{3.75, 5.25, 9.75, 11.25});
  // Samples past the last row or column read the edge; more than a pixel out, zero. Boxes are at
  // least one pixel without half_pixel.
  o = RoiAlignOptions{};
  o.sampling_ratio = 1;
  o.half_pixel = false;
  CHECK(Align({3, 3, 3, 3}, o) == std::vector<double>{15});
  CHECK(Align({6, 6, 7, 7}, o) == std::vector<double>{0});
  // max: the largest weighted corner of the sample at (1.5, 1.5): 0.25 * 10.
  o.max = true;
  CHECK(Align({0, 0, 3, 3}, o) == std::vector<double>{2.5});
}

TEST_CASE("RoiAlign refuses rois and image indices that do not fit", "[nn]") {
  GraphBuilder g;
  RoiAlign(g.Placeholder("x", f32, {1, 1, 4, 4}), g.Placeholder("rois", f32, {2, 5}),
           g.Placeholder("i", i64, {2}));
  CHECK_THAT(testing::BuildError(g), Catch::Contains("rois must be [R, 4]"));
  GraphBuilder h;
  RoiAlign(h.Placeholder("x", f32, {1, 1, 4, 4}), h.Placeholder("rois", f32, {2, 4}),
           h.Placeholder("i", i64, {3}));
  CHECK_THAT(testing::BuildError(h), Catch::Contains("batch_indices must be [R] with R = 2"));
  GraphBuilder k;
  Value y = RoiAlign(k.Constant(testing::Iota({1, 1, 4, 4})),
                     k.Constant(Tensor::FromVector<float>({1, 4}, {0, 0, 1, 1})),
                     k.Constant(Tensor::FromVector<int64_t>({1}, {1})));
  CHECK_THAT(testing::RunError(k, y, {}), Catch::Contains("batch_indices[0] is 1, outside [0, 1)"));
  // An empty image has nothing to sample.
  GraphBuilder empty;
  RoiAlign(empty.Placeholder("x", f32, {1, 1, 0, 4}), empty.Placeholder("rois", f32, {1, 4}),
           empty.Placeholder("i", i64, {1}));
  CHECK_THAT(testing::BuildError(empty), Catch::Contains("cannot sample an empty image"));
  // A box of 1e30 pixels (adaptive sampling would take 1e60 samples per bin) or of NaN corners.
  for (float corner : {1e30f, NAN, INFINITY}) {
    GraphBuilder h2;
    Value z = RoiAlign(h2.Constant(testing::Iota({1, 1, 4, 4})),
                       h2.Constant(Tensor::FromVector<float>({1, 4}, {0, 0, corner, corner})),
                       h2.Constant(Tensor::FromVector<int64_t>({1}, {0})));
    CHECK_THAT(testing::RunError(h2, z, {}),
               Catch::Contains(std::isfinite(corner) ? "samples per bin" : "not finite"));
  }
}
