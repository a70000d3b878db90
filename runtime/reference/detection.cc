// The reference kernels of NonMaxSuppression and RoiAlign (ir/ops/detection.h).
#include "ir/ops/detection.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

// One bilinear sample of channel plane `plane` (H x W) at (y, x): the four corners and their
// weights, as ONNX Runtime's RoiAlign computes them.
struct Sample {
  int64_t at[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
};

Sample SampleAt(double y, double x, int64_t height, int64_t width) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(height) || x < -1.0 || x > static_cast<double>(width))
    return s;  // outside: reads 0
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
  int64_t y_high = y_low + 1, x_high = x_low + 1;
  if (y_low >= height - 1) y = static_cast<double>(y_high = y_low = height - 1);
  if (x_low >= width - 1) x = static_cast<double>(x_high = x_low = width - 1);
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  const double hy = 1 - ly, hx = 1 - lx;
  s.at[0] = y_low * width + x_low;
  s.at[1] = y_low * width + x_high;
  s.at[2] = y_high * width + x_low;
  s.at[3] = y_high * width + x_high;
  s.weight[0] = hy * hx;
  s.weight[1] = hy * lx;
  s.weight[2] = ly * hx;
  s.weight[3] = ly * lx;
  return s;
}

Status RoiAlignKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& indices = ctx.input(2);
  const AttrMap& a = ctx.attrs();
  const int64_t out_h = a.Find("output_height")->get<int64_t>();
  const int64_t out_w = a.Find("output_width")->get<int64_t>();
  const int64_t ratio = a.Find("sampling_ratio")->get<int64_t>();
  const double scale = a.Find("spatial_scale")->get<double>();
  const bool max = a.Find("max")->get<bool>();
  const double offset = a.Find("half_pixel")->get<bool>() ? 0.5 : 0.0;
  const int64_t batch = x.shape()[0], channels = x.shape()[1];
  const int64_t height = x.shape()[2], width = x.shape()[3];
  const int64_t count = rois.shape()[0];
  if (height == 0 || width == 0)
    return ctx.Fail("cannot sample an empty image ", x.shape().ToString());
  if (indices.num_elements() != count)
    return ctx.Fail("batch_indices has ", indices.num_elements(), " entries for ", count, " rois");
  Tensor& y = ctx.output(0);
  for (int64_t r = 0; r < count; ++r) {
    const int64_t image = indices.GetInt(r);
    if (image < 0 || image >= batch)
      return ctx.Fail("batch_indices[", r, "] is ", image, ", outside [0, ", batch, ")");
    for (int c = 0; c < 4; ++c)
      if (!std::isfinite(rois.GetDouble(r * 4 + c)))
        return ctx.Fail("region ", r,
                        " has a corner that is not finite: ", rois.GetDouble(r * 4 + c));
    const double x1 = rois.GetDouble(r * 4) * scale - offset;
    const double y1 = rois.GetDouble(r * 4 + 1) * scale - offset;
    double roi_w = rois.GetDouble(r * 4 + 2) * scale - offset - x1;
    double roi_h = rois.GetDouble(r * 4 + 3) * scale - offset - y1;
    if (offset == 0) {
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(out_h);
    const double bin_w = roi_w / static_cast<double>(out_w);
    // At most 2^24 sample points per bin (a box of ~1e30 pixels would never finish).
    const double rows = ratio > 0 ? static_cast<double>(ratio) : std::ceil(bin_h);
    const double columns = ratio > 0 ? static_cast<double>(ratio) : std::ceil(bin_w);
    // The whole op at most 2^32 sample points (each a few multiply-adds).
    const double work = rows * columns * static_cast<double>(channels * out_h * out_w * count);
    if (!(rows >= 0 && columns >= 0 && rows * columns <= double{1 << 24} &&
          work <= double(int64_t{1} << 32)) ||
        !std::isfinite(x1) || !std::isfinite(y1))
      return ctx.Fail("region ", r, " (", rois.GetDouble(r * 4), ", ", rois.GetDouble(r * 4 + 1),
                      ", ", rois.GetDouble(r * 4 + 2), ", ", rois.GetDouble(r * 4 + 3), ") needs ",
                      rows, " x ", columns,
                      " samples per bin; expected a finite box of at most 2^24 (and 2^32 samples "
                      "in all)");
    const auto grid_h = static_cast<int64_t>(rows), grid_w = static_cast<int64_t>(columns);
    const double points = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t plane = (image * channels + c) * height * width;
      for (int64_t ph = 0; ph < out_h; ++ph)
        for (int64_t pw = 0; pw < out_w; ++pw) {
          double sum = 0, best = 0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            const double sy = y1 + static_cast<double>(ph) * bin_h +
                              (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              const double sx =
                  x1 + static_cast<double>(pw) * bin_w +
                  (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
              const Sample s = SampleAt(sy, sx, height, width);
              double corner_max = -std::numeric_limits<double>::infinity();
              for (int k = 0; k < 4; ++k) {
                const double v = s.weight[k] * x.GetDouble(plane + s.at[k]);
                sum += v;
                corner_max = std::max(corner_max, v);
              }
              best = first ? corner_max : std::max(best, corner_max);
              first = false;
            }
          }
          y.SetDouble(((r * channels + c) * out_h + ph) * out_w + pw, max ? best : sum / points);
        }
    }
  }
  return OkStatus();
}

}  // namespace

void RegisterDetectionKernels(KernelRegistry& r) {
  r.Register("NonMaxSuppression", NonMaxSuppressionKernel);
  r.Register("RoiAlign", RoiAlignKernel);
}

}  // namespace kiln::reference
