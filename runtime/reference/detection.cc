// The reference kernel of NonMaxSuppression (ir/ops/detection.h).
#include "ir/ops/detection.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

struct Box {
  double y_min, x_min, y_max, x_max;
};

// Box i of batch entry b, its corners ordered.
Box BoxAt(const Tensor& boxes, int64_t b, int64_t i, bool center) {
  const int64_t at = (b * boxes.shape()[1] + i) * 4;
  const double v0 = boxes.GetDouble(at), v1 = boxes.GetDouble(at + 1);
  const double v2 = boxes.GetDouble(at + 2), v3 = boxes.GetDouble(at + 3);
  if (center)  // [x_center, y_center, width, height]
    return {v1 - v3 / 2, v0 - v2 / 2, v1 + v3 / 2, v0 + v2 / 2};
  return {std::min(v0, v2), std::min(v1, v3), std::max(v0, v2), std::max(v1, v3)};
}

// Whether `a` suppresses `b`: they overlap, both have an area, and their intersection over union
// is above the threshold.
bool Suppresses(const Box& a, const Box& b, double threshold) {
  const double height = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  const double width = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  if (height <= 0 || width <= 0) return false;
  const double inter = height * width;
  const double area_a = (a.y_max - a.y_min) * (a.x_max - a.x_min);
  const double area_b = (b.y_max - b.y_min) * (b.x_max - b.x_min);
  const double uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

Status NonMaxSuppressionKernel(KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  for (int i = 2; i < 5; ++i)
    if (ctx.input(i).num_elements() != 1)
      return ctx.Fail("input ", i, " must hold one value, got ", ctx.input(i).Summary(0));
  const int64_t batches = boxes.shape()[0], count = boxes.shape()[1];
  const int64_t classes = scores.shape()[1];
  if (boxes.shape()[2] != 4 || scores.shape()[0] != batches || scores.shape()[2] != count)
    return ctx.Fail("boxes ", boxes.shape().ToString(), " and scores ", scores.shape().ToString(),
                    " do not fit [batch, boxes, 4] and [batch, classes, boxes]");
  const int64_t keep = std::max<int64_t>(ctx.input(2).GetInt(0), 0);
  const double iou = ctx.input(3).GetDouble(0), floor = ctx.input(4).GetDouble(0);
  const bool center = ctx.attrs().Find("center_point_box")->get<bool>();
  std::vector<int64_t> rows;  // (b, c, i) triples
  std::vector<std::pair<double, int64_t>> order;
  std::vector<int64_t> taken;
  for (int64_t b = 0; b < batches && keep > 0; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      order.clear();
      for (int64_t i = 0; i < count; ++i) {
        const double s = scores.GetDouble((b * classes + c) * count + i);
        if (s > floor) order.push_back({s, i});
      }
      std::stable_sort(order.begin(), order.end(),
                       [](const auto& x, const auto& y) { return x.first > y.first; });
      taken.clear();
      for (const auto& [score, i] : order) {
        if (static_cast<int64_t>(taken.size()) >= keep) break;
        const Box box = BoxAt(boxes, b, i, center);
        const bool dropped = std::any_of(taken.begin(), taken.end(), [&](int64_t j) {
          return Suppresses(BoxAt(boxes, b, j, center), box, iou);
        });
        if (dropped) continue;
        taken.push_back(i);
        rows.insert(rows.end(), {b, c, i});
      }
    }
  const auto selected = static_cast<int64_t>(rows.size() / 3);
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(i64, Shape{selected, 3}));
  std::copy(rows.begin(), rows.end(), out.data<int64_t>());
  ctx.set_output(0, std::move(out));
  return OkStatus();
}

}  // namespace

void RegisterDetectionKernels(KernelRegistry& r) {
  r.Register("NonMaxSuppression", NonMaxSuppressionKernel);
}

}  // namespace kiln::reference
