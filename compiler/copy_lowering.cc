#include "compiler/copy_lowering.h"

#include <algorithm>
#include <map>

#include "compiler/op_lowerings.h"
#include "ir/op_registry.h"
#include "ir/ops/array_internal.h"

namespace kiln::compiler {
namespace {

// The strided view of a slice of `shape` (the sliced tensor): offset of its first element and
// per-axis strides, with the slice's extent per axis.
struct SliceView {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
};

Result<SliceView> ViewOfSlice(const AttrMap& attrs, const Shape& shape) {
  KILN_ASSIGN_OR_RETURN(std::vector<internal::SliceDim> dims,
                        internal::SliceDims(attrs, shape.rank()));
  const std::vector<int64_t> strides = RowMajorStrides(shape);
  SliceView view;
  for (int d = 0; d < shape.rank(); ++d) {
    const internal::SliceExtent e = internal::ClampSlice(dims[d], shape[d]);
    view.dims.push_back(e.count);
    // One element along an axis needs no stride (and a huge step times the stride could overflow;
    // with two or more, |step| < dim and the product fits).
    view.strides.push_back(e.count > 1 ? dims[d].step * strides[d] : 0);
    if (e.count > 0) view.offset += e.start * strides[d];
  }
  return view;
}

void SetCopy(Step& step, const std::vector<int64_t>& dims, int64_t src_offset,
             const std::vector<int64_t>& src_strides, int64_t dst_offset,
             const std::vector<int64_t>& dst_strides, bool fill, double fill_value) {
  step.kind = Step::Kind::kLibrary;
  step.callee = "strided_copy";
  step.attrs = AttrMap();
  step.attrs.Set("dims", dims);
  step.attrs.Set("src_offset", src_offset);
  step.attrs.Set("src_strides", src_strides);
  step.attrs.Set("dst_offset", dst_offset);
  step.attrs.Set("dst_strides", dst_strides);
  step.attrs.Set("fill", int64_t{fill});
  step.attrs.Set("fill_value", fill_value);
}

}  // namespace

namespace {

// A copy lowering of one op: the node's attributes with their defaults, its input 0's shape and
// output 0's (both known).
using CopyLowering = Status (*)(const Node& node, const StaticInfo& info, const AttrMap& attrs,
                                const Shape& in, const Shape& out, Step& step);

// Concat (pieces = its inputs, whole = its output), Split and ConcatGrad (whole = input 0, pieces
// = the outputs): "concat" / "split" with outer = the product of the dims before the axis and one
// block per piece, its elements per outer row.
Status LowerConcatOrSplit(const Node& node, const StaticInfo& info, const AttrMap& attrs,
                          bool concat, Step& step) {
  const Shape& whole =
      concat ? info.types.at(TensorRef{node.name, 0}).shape : info.types.at(node.inputs[0]).shape;
  KILN_ASSIGN_OR_RETURN(int64_t axis_attr, attrs.GetInt("axis"));
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, whole.rank()));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= whole[d];
  for (int d = axis + 1; d < whole.rank(); ++d) inner *= whole[d];
  std::vector<int64_t> blocks;
  const size_t pieces = concat ? node.inputs.size() : node.output_types.size();
  for (size_t i = 0; i < pieces; ++i) {
    const Shape& piece = concat ? info.types.at(node.inputs[i]).shape
                                : info.types.at(TensorRef{node.name, static_cast<int>(i)}).shape;
    if (!piece.IsFullyKnown())
      return MakeError(ErrorCode::kUnimplemented, "shape not known at compile time");
    blocks.push_back(piece[axis] * inner);
  }
  step.kind = Step::Kind::kLibrary;
  step.callee = concat ? "concat" : "split";
  step.attrs = AttrMap();
  step.attrs.Set("outer", outer);
  step.attrs.Set("blocks", blocks);
  return OkStatus();
}

Status LowerConcat(const Node& node, const StaticInfo& info, const AttrMap& attrs, const Shape&,
                   const Shape&, Step& step) {
  return LowerConcatOrSplit(node, info, attrs, /*concat=*/true, step);
}

Status LowerSplit(const Node& node, const StaticInfo& info, const AttrMap& attrs, const Shape&,
                  const Shape&, Step& step) {
  return LowerConcatOrSplit(node, info, attrs, /*concat=*/false, step);
}

Status LowerSlice(const Node&, const StaticInfo&, const AttrMap& attrs, const Shape& in,
                  const Shape& out, Step& step) {
  KILN_ASSIGN_OR_RETURN(SliceView src, ViewOfSlice(attrs, in));
  SetCopy(step, src.dims, src.offset, src.strides, 0, RowMajorStrides(out), false, 0);
  return OkStatus();
}

// BroadcastTo and BroadcastLike, numpy rules: x's dims align right; a missing or size-1 dim
// repeats (source stride 0).
Status LowerBroadcast(const Node& node, const StaticInfo&, const AttrMap&, const Shape& in,
                      const Shape& out, Step& step) {
  const std::vector<int64_t> sx = RowMajorStrides(in);
  std::vector<int64_t> src_strides(out.rank(), 0);
  const int shift = out.rank() - in.rank();
  if (shift < 0) return MakeError(ErrorCode::kInternal, node.op, ": x has a higher rank");
  for (int d = 0; d < in.rank(); ++d) src_strides[d + shift] = in[d] == 1 ? 0 : sx[d];
  SetCopy(step, out.dims(), 0, src_strides, 0, RowMajorStrides(out), false, 0);
  return OkStatus();
}

// Axis d of y is multiples[d] copies of x's: the copy runs over [m0, n0, m1, n1, ...] with x's
// strides [0, s0, 0, s1, ...] and y's [n0 * t0, t0, n1 * t1, t1, ...]; copies of one (m = 1) need
// no axis of their own. The innermost run stays contiguous on both sides.
Status LowerTile(const Node&, const StaticInfo&, const AttrMap& attrs, const Shape& in,
                 const Shape& out, Step& step) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> multiples, attrs.GetInts("multiples"));
  if (static_cast<int>(multiples.size()) != in.rank() || out.rank() != in.rank())
    return MakeError(ErrorCode::kInternal, "Tile: ", multiples.size(), " multiples for ",
                     in.ToString());
  const std::vector<int64_t> sx = RowMajorStrides(in), sy = RowMajorStrides(out);
  std::vector<int64_t> dims, src_strides, dst_strides;
  for (int d = 0; d < in.rank(); ++d) {
    if (out[d] != multiples[d] * in[d])
      return MakeError(ErrorCode::kInternal, "Tile: ", in.ToString(), " by ", multiples[d],
                       " along axis ", d, " is not ", out.ToString());
    if (multiples[d] != 1) {
      dims.push_back(multiples[d]);
      src_strides.push_back(0);
      dst_strides.push_back(in[d] * sy[d]);
    }
    dims.push_back(in[d]);
    src_strides.push_back(sx[d]);
    dst_strides.push_back(sy[d]);
  }
  SetCopy(step, dims, 0, src_strides, 0, dst_strides, false, 0);
  return OkStatus();
}

// y[i] = x[i permuted]: x's strides, permuted.
Status LowerTranspose(const Node&, const StaticInfo&, const AttrMap& attrs, const Shape& in,
                      const Shape& out, Step& step) {
  std::vector<int64_t> perm;
  if (attrs.Has("perm")) {
    KILN_ASSIGN_OR_RETURN(perm, attrs.GetInts("perm"));
  }
  if (perm.empty())
    for (int d = in.rank() - 1; d >= 0; --d) perm.push_back(d);
  const std::vector<int64_t> sx = RowMajorStrides(in);
  std::vector<int64_t> src_strides;
  std::vector<bool> seen(in.rank(), false);
  if (static_cast<int>(perm.size()) != in.rank() || out.rank() != in.rank())
    return MakeError(ErrorCode::kInternal, "Transpose: perm of ", perm.size(), " for rank ",
                     in.rank());
  for (int d = 0; d < in.rank(); ++d) {
    const int64_t p = perm[d];
    if (p < 0 || p >= in.rank() || seen[p] || out[d] != in[p])
      return MakeError(ErrorCode::kInternal, "Transpose: perm is not a permutation of ",
                       in.ToString(), " into ", out.ToString());
    seen[p] = true;
    src_strides.push_back(sx[p]);
  }
  SetCopy(step, out.dims(), 0, src_strides, 0, RowMajorStrides(out), false, 0);
  return OkStatus();
}

// dy (input 0) into the slice of zeros shaped like x.
Status LowerSliceGrad(const Node&, const StaticInfo&, const AttrMap& attrs, const Shape& in,
                      const Shape& out, Step& step) {
  KILN_ASSIGN_OR_RETURN(SliceView dst, ViewOfSlice(attrs, out));
  SetCopy(step, dst.dims, 0, RowMajorStrides(in), dst.offset, dst.strides, true, 0);
  return OkStatus();
}

// Constant-mode Pad: x index i lands at y index i + pad_begin; the x indices that land inside y
// are copied, the rest of y filled with the value.
Status LowerPad(const Node&, const StaticInfo&, const AttrMap& attrs, const Shape& in,
                const Shape& out, Step& step) {
  KILN_ASSIGN_OR_RETURN(std::string mode, attrs.GetString("mode"));
  if (mode != "constant")
    return MakeError(ErrorCode::kUnimplemented, "Pad mode '", mode, "' (constant only)");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, attrs.GetInts("pads"));
  KILN_ASSIGN_OR_RETURN(double value, attrs.GetFloat("value"));
  const int rank = in.rank();
  const std::vector<int64_t> sx = RowMajorStrides(in), sy = RowMajorStrides(out);
  std::vector<int64_t> dims;
  int64_t src_offset = 0, dst_offset = 0;
  bool covers = true;
  for (int d = 0; d < rank; ++d) {
    const int64_t begin = pads[d];
    const int64_t lo = std::max<int64_t>(0, -begin), hi = std::min(in[d], out[d] - begin);
    dims.push_back(std::max<int64_t>(0, hi - lo));
    src_offset += lo * sx[d];
    dst_offset += (lo + begin) * sy[d];
    covers = covers && dims.back() == out[d];
  }
  for (int64_t d : dims)
    if (d == 0) src_offset = dst_offset = 0;  // nothing is copied
  SetCopy(step, dims, src_offset, sx, dst_offset, sy, !covers, value);
  return OkStatus();
}

}  // namespace

void RegisterCopyLowerings(OpLowerings& lowerings) {
  const std::map<std::string, CopyLowering> copies = {{"Concat", LowerConcat},
                                                      {"Split", LowerSplit},
                                                      {"ConcatGrad", LowerSplit},
                                                      {"Slice", LowerSlice},
                                                      {"SliceGrad", LowerSliceGrad},
                                                      {"Pad", LowerPad},
                                                      {"BroadcastTo", LowerBroadcast},
                                                      {"BroadcastLike", LowerBroadcast},
                                                      {"Tile", LowerTile},
                                                      {"Transpose", LowerTranspose}};
  for (const char* op : {"BroadcastTo", "BroadcastLike"}) lowerings.Add(op).broadcast = true;
  for (const auto& [op, lower] : copies)
    lowerings.Add(op).copy = [lower = lower](const Node& node, const StaticInfo& info,
                                             Step& step) -> Status {
      const AttrMap attrs = OpRegistry::Global().Find(node.op)->WithDefaults(node.attrs);
      const Shape& in = info.types.at(node.inputs[0]).shape;
      const Shape& out = info.types.at(TensorRef{node.name, 0}).shape;
      if (!in.IsFullyKnown() || !out.IsFullyKnown())
        return MakeError(ErrorCode::kUnimplemented, "shape not known at compile time");
      return lower(node, info, attrs, in, out, step);
    };
}

}  // namespace kiln::compiler
