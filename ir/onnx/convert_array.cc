// ONNX ops that move elements: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
// Slice, Gather, Pad, Tile, Expand, DepthToSpace and SpaceToDepth. Their shape-like inputs (a
// Reshape's shape, Slice's starts/ends, ...) become attributes of kiln's ops when known at import;
// a Reshape's or an Expand's shape may also be computed at run time (see ShapeDim), and any other
// one known only at run time defers the node until it is (deferred_node.h).
// Reshapes, Concat, Gather and Slice of small integer tensors known at import are folded (the Shape
// -> Gather -> Concat -> Reshape chains of exported models).
#include <algorithm>
#include <limits>

#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"

namespace kiln::onnx_import {
namespace {

// Output 0 is `y`; when input 0 is a known small integer tensor and y's shape is known, the
// value is the same elements in y's shape (for ops that only change the shape).
void SetReshaped(OnnxNode& n, Value y) {
  const Tensor* k = n.known(0);
  if (y.valid() && k && AllInputsKnownSmallInts(n) && y.shape().IsFullyKnown()) {
    Result<Tensor> r = k->Reshaped(y.shape());
    if (r.ok()) return n.SetKnown(0, *r);
  }
  if (std::optional<std::vector<DimEntry>> p = n.Partial(0); p && y.valid() && y.rank() <= 1)
    return n.SetPartial(0, y, *p);
  n.SetOutput(0, y);
}

// The target of a Reshape whose shape is partly known: an entry that is the input's own dim at
// the same position becomes 0 (copy), and a single other unknown entry becomes -1.
Result<std::vector<int64_t>> ResolveShape(const OnnxNode& n, const std::vector<DimEntry>& entries,
                                          bool allowzero) {
  std::vector<int64_t> shape;
  int unknown = 0;
  bool has_minus_one = false;
  for (size_t p = 0; p < entries.size(); ++p) {
    const DimEntry& e = entries[p];
    if (e.of.empty()) {
      shape.push_back(e.value);
      has_minus_one = has_minus_one || e.value == -1;
    } else if (e.of == n.input_name(0) && e.dim == static_cast<int>(p) && !allowzero) {
      shape.push_back(0);
    } else {
      shape.push_back(-1);
      ++unknown;
    }
  }
  if (unknown > 1 || (unknown == 1 && has_minus_one))
    return n.Unsupported("the target shape has ", unknown + has_minus_one,
                         " entries unknown at import (at most one can be inferred)");
  return shape;
}

Status ConvertReshape(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  std::vector<int64_t> shape;
  KILN_ASSIGN_OR_RETURN(int64_t allowzero, n.Int("allowzero", 0));
  if (n.opset() < 5) {
    KILN_ASSIGN_OR_RETURN(shape, n.Ints("shape"));
  } else if (!n.known(1)) {
    // A shape computed at run time: static when at most one entry is unknown, else realized at
    // run time (e.g. [seq, batch * heads, d] in exported attention with dynamic axes).
    std::optional<std::vector<DimEntry>> p = n.Partial(1);
    std::optional<Result<std::vector<int64_t>>> resolved;
    if (p) resolved = ResolveShape(n, *p, allowzero != 0);
    if (!resolved || !resolved->ok()) {
      KILN_ASSIGN_OR_RETURN(std::vector<ShapeDim> dims, ShapeDims(n, 1));
      KILN_ASSIGN_OR_RETURN(Value y, ReshapeToDims(n, x, std::move(dims), allowzero != 0));
      SetReshaped(n, y);
      return OkStatus();
    }
    shape = std::move(resolved->value());
  } else {
    KILN_ASSIGN_OR_RETURN(shape, n.ConstInts(1));
  }
  if (allowzero)
    for (int64_t d : shape)
      if (d == 0) return n.Unsupported("allowzero = 1 with a 0 in the shape is not supported");
  SetReshaped(n, Reshape(x, shape));
  return OkStatus();
}

Status ConvertFlatten(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 1));
  SetReshaped(n, Flatten(x, axis));
  return OkStatus();
}

// Squeeze/Unsqueeze: axes from the attribute (opset < 13) or input 1.
Result<std::vector<int64_t>> AxesOf(const OnnxNode& n, int since_input_opset) {
  if (n.opset() < since_input_opset) return n.Ints("axes");
  if (!n.has_input(1)) return std::vector<int64_t>{};
  return n.ConstInts(1);
}

Status ConvertSqueeze(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(n, 13));
  SetReshaped(n, Squeeze(x, axes));
  return OkStatus();
}

Status ConvertUnsqueeze(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(n, 13));
  SetReshaped(n, Unsqueeze(x, axes));
  return OkStatus();
}

Status ConvertTranspose(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, n.Ints("perm"));
  n.SetOutput(0, Transpose(x, perm));
  return OkStatus();
}

Status ConvertConcat(OnnxNode& n) {
  std::vector<Value> xs;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i))
      return n.Fail("input ", i, " is empty (''), but every input of Concat is required");
    KILN_ASSIGN_OR_RETURN(Value x, n.input(i));
    xs.push_back(x);
  }
  if (xs.empty()) return n.Fail("needs at least one input");
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 0));
  if (AllInputsKnownSmallInts(n) && xs[0].rank() == 1) {
    std::vector<int64_t> all;
    for (int i = 0; i < n.num_inputs(); ++i)
      if (n.has_input(i))
        for (int64_t v : KnownInts(*n.known(i))) all.push_back(v);
    Tensor t(xs[0].dtype(), Shape{static_cast<int64_t>(all.size())});
    for (size_t k = 0; k < all.size(); ++k) t.SetInt(static_cast<int64_t>(k), all[k]);
    n.SetKnown(0, t);
    return OkStatus();
  }
  Value y = Concat(xs, axis);
  if (xs[0].rank() == 1) {
    std::vector<DimEntry> entries;
    bool partial = true, any_known = false;
    for (int i = 0; partial && i < n.num_inputs(); ++i) {
      if (!n.has_input(i)) continue;
      if (std::optional<std::vector<DimEntry>> p = n.Partial(i)) {
        entries.insert(entries.end(), p->begin(), p->end());
        for (const DimEntry& e : *p) any_known = any_known || e.of.empty();
      } else if (Result<Value> v = n.input(i);
                 v.ok() && v->rank() == 1 && v->shape()[0] >= 0 && v->shape()[0] <= 64) {
        // Entries computed at run time (e.g. batch * heads): unknown, but the others stay known.
        entries.insert(entries.end(), v->shape()[0], DimEntry{0, kRunTimeEntry, 0});
      } else {
        partial = false;
      }
    }
    if (partial && any_known) {
      n.SetPartial(0, y, std::move(entries));
      return OkStatus();
    }
  }
  n.SetOutput(0, y);
  return OkStatus();
}

Status ConvertSplit(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 0));
  std::vector<int64_t> sizes;
  if (n.opset() < 13) {
    KILN_ASSIGN_OR_RETURN(sizes, n.Ints("split"));
  } else if (n.has_input(1)) {
    KILN_ASSIGN_OR_RETURN(sizes, n.ConstInts(1));
  }
  std::vector<Value> parts =
      sizes.empty() ? SplitEven(x, axis, n.num_outputs()) : Split(x, axis, sizes);
  for (size_t i = 0; i < parts.size(); ++i) n.SetOutput(static_cast<int>(i), parts[i]);
  return OkStatus();
}

Status ConvertSlice(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    KILN_ASSIGN_OR_RETURN(starts, n.Ints("starts"));
    KILN_ASSIGN_OR_RETURN(ends, n.Ints("ends"));
    KILN_ASSIGN_OR_RETURN(axes, n.Ints("axes"));
  } else {
    KILN_ASSIGN_OR_RETURN(starts, n.ConstInts(1));
    KILN_ASSIGN_OR_RETURN(ends, n.ConstInts(2));
    if (n.has_input(3)) {
      KILN_ASSIGN_OR_RETURN(axes, n.ConstInts(3));
    }
    if (n.has_input(4)) {
      KILN_ASSIGN_OR_RETURN(steps, n.ConstInts(4));
    }
  }
  const Tensor* k = n.known(0);
  Value y = Slice(x, starts, ends, axes, steps);
  bool one_axis = starts.size() == 1 && ends.size() == 1 &&
                  (axes.empty() || axes[0] == 0 || axes[0] == -1) &&
                  (steps.empty() || steps[0] != 0);
  std::optional<std::vector<DimEntry>> p = k ? std::nullopt : n.Partial(0);
  bool known_vector = k && k->rank() == 1 && k->num_elements() <= 4096 && IsInteger(k->dtype());
  if (y.valid() && one_axis && (known_vector || (p && x.rank() == 1))) {
    // A 1-D slice of a known or partly known shape vector.
    int64_t len = k ? k->num_elements() : static_cast<int64_t>(p->size());
    int64_t step = steps.empty() ? 1 : steps[0];
    int64_t b = starts[0], e = ends[0];
    if (b < 0) b += len;
    if (e < 0) e += len;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, len);
      e = std::clamp<int64_t>(e, 0, len);
    } else {
      b = std::clamp<int64_t>(b, -1, len - 1);
      e = std::clamp<int64_t>(e, -1, len - 1);
    }
    std::vector<int64_t> picked;
    for (int64_t i = b; step > 0 ? i < e : i > e; i += step) picked.push_back(i);
    if (!k) {
      std::vector<DimEntry> entries;
      for (int64_t i : picked) entries.push_back((*p)[i]);
      n.SetPartial(0, y, std::move(entries));
      return OkStatus();
    }
    Tensor t(k->dtype(), Shape{static_cast<int64_t>(picked.size())});
    for (size_t i = 0; i < picked.size(); ++i)
      t.SetInt(static_cast<int64_t>(i), k->GetInt(picked[i]));
    n.SetKnown(0, t);
    return OkStatus();
  }
  n.SetOutput(0, y);
  return OkStatus();
}

// Known indices that pick one slice, or consecutive ones in order (PyTorch's export of
// attention's q, k, v = qkv[0], qkv[1], qkv[2]), make a Slice (and a Squeeze for a scalar index):
// a copy the compilers lower as one strided copy, where a Gather with constant indices would stay
// a gather. False, with nothing built, for other indices and for a shape vector that ConvertGather
// folds or tracks.
Result<bool> ConvertGatherAsSlice(OnnxNode& n, Value data, int64_t axis) {
  const Tensor* idx = n.known(1);
  if (!idx || idx->rank() > 1 || idx->num_elements() == 0 || IsFloat(idx->dtype()) ||
      data.rank() == 0 || (data.rank() == 1 && (AllInputsKnownSmallInts(n) || n.Partial(0))))
    return false;
  Result<int> ax = NormalizeAxis(axis, data.rank());
  if (!ax.ok()) return false;  // Gather names the bad axis
  const int64_t dim = data.shape()[*ax];
  if (dim < 0) return false;  // known at run time: the Gather checks its indices then
  std::vector<int64_t> picked = idx->ToInts();
  for (int64_t& j : picked) {
    if (j < -dim || j >= dim)
      return n.Fail("index ", j, " is out of range for axis ", axis, " of size ", dim);
    if (j < 0) j += dim;
  }
  for (size_t i = 1; i < picked.size(); ++i)
    if (picked[i] != picked[i - 1] + 1) return false;
  Value s = Slice(data, {picked.front()}, {picked.back() + 1}, {*ax});
  n.SetOutput(0, idx->rank() == 0 ? Squeeze(s, {*ax}) : s);
  return true;
}

Status ConvertGather(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value data, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value indices, n.input(1));
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 0));
  KILN_ASSIGN_OR_RETURN(bool sliced, ConvertGatherAsSlice(n, data, axis));
  if (sliced) return OkStatus();
  Value y = Gather(data, indices, axis);
  if (y.valid() && AllInputsKnownSmallInts(n) && data.rank() == 1) {
    const Tensor& d = *n.known(0);
    const Tensor& idx = *n.known(1);
    Tensor t(d.dtype(), y.shape());
    for (int64_t i = 0; i < idx.num_elements(); ++i) {
      int64_t j = idx.GetInt(i);
      if (j < 0) j += d.num_elements();
      if (j < 0 || j >= d.num_elements())
        return n.Fail("index ", idx.GetInt(i), " is out of range for ", d.Summary(0));
      t.SetInt(i, d.GetInt(j));
    }
    n.SetKnown(0, t);
    return OkStatus();
  }
  std::optional<std::vector<DimEntry>> p = n.Partial(0);
  const Tensor* idx = n.known(1);
  if (y.valid() && p && data.rank() == 1 && idx && idx->rank() <= 1) {
    std::vector<DimEntry> entries;
    for (int64_t j : idx->ToInts()) {
      if (j < 0) j += static_cast<int64_t>(p->size());
      if (j < 0 || j >= static_cast<int64_t>(p->size()))
        return n.Fail("index ", j, " is out of range for a shape of ", p->size(), " dims");
      entries.push_back((*p)[j]);
    }
    n.SetPartial(0, y, std::move(entries));
    return OkStatus();
  }
  n.SetOutput(0, y);
  return OkStatus();
}

Status ConvertPad(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(std::string mode, n.String("mode", "constant"));
  std::vector<int64_t> pads;
  double value = 0;
  if (n.opset() < 11) {
    KILN_ASSIGN_OR_RETURN(pads, n.Ints("pads"));
    KILN_ASSIGN_OR_RETURN(value, n.Float("value", 0.0));
  } else {
    KILN_ASSIGN_OR_RETURN(pads, n.ConstInts(1));
    if (n.has_input(2)) {
      KILN_ASSIGN_OR_RETURN(value, n.ConstScalar(2));
    }
    if (n.has_input(3)) return n.Unsupported("the 'axes' input of Pad (opset 18) is not supported");
  }
  n.SetOutput(0, Pad(x, pads, mode, value));
  return OkStatus();
}

Status ConvertTile(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, n.ConstInts(1));
  n.SetOutput(0, Tile(x, repeats));
  return OkStatus();
}

// Expand broadcasts both ways: the result is broadcast(x.shape, shape).
Status ConvertExpand(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  if (!n.known(1)) {  // a shape known at run time: x + zeros of that shape broadcasts both ways
    KILN_ASSIGN_OR_RETURN(std::vector<ShapeDim> dims, ShapeDims(n, 1));
    DType work = x.dtype() == boolean ? i64 : x.dtype();
    KILN_ASSIGN_OR_RETURN(Value zeros, ZerosOfDims(n, dims, work));
    Value y = Add(work == x.dtype() ? x : Cast(x, work), zeros);
    n.SetOutput(0, work == x.dtype() ? y : Cast(y, x.dtype()));
    return OkStatus();
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, n.ConstInts(1));
  for (int64_t d : shape)
    if (d < 0) return n.Fail("shape ", Shape(shape).ToString(), " has a negative dim");
  Result<Shape> out = BroadcastShapes(x.shape(), Shape(shape));
  if (!out.ok()) return n.Fail(out.error().message());
  if (out->IsFullyKnown()) {
    n.SetOutput(0, BroadcastTo(x, out->dims()));
    return OkStatus();
  }
  // Unknown dims of x decide: broadcast by multiplying with ones of `shape`.
  KILN_ASSIGN_OR_RETURN(Tensor ones, NewTensor(n, x.dtype(), Shape(shape)));
  for (int64_t i = 0; i < ones.num_elements(); ++i) ones.SetDouble(i, 1);
  n.SetOutput(0, Mul(x, n.g().Constant(ones)));
  return OkStatus();
}

// DepthToSpace / SpaceToDepth as Reshape -> Transpose -> Reshape (C, H, W known).
Status ConvertDepthSpace(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(int64_t b, n.Int("blocksize", 0));
  if (b <= 0) return n.Fail("blocksize must be > 0, got ", b);
  if (x.rank() != 4) return n.Fail("needs a 4-D NCHW input, got ", x.shape().ToString());
  int64_t c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  if (c < 0 || h < 0 || w < 0)
    return n.NotKnownYet("needs C, H and W known at import, got ", x.shape().ToString());
  Value y;
  if (n.op_type() == "DepthToSpace") {
    KILN_ASSIGN_OR_RETURN(std::string mode, n.String("mode", "DCR"));
    if (c % (b * b) != 0) return n.Fail("C = ", c, " is not divisible by blocksize^2");
    if (mode == "DCR") {
      y = Transpose(Reshape(x, {-1, b, b, c / (b * b), h, w}), {0, 3, 4, 1, 5, 2});
    } else if (mode == "CRD") {
      y = Transpose(Reshape(x, {-1, c / (b * b), b, b, h, w}), {0, 1, 4, 2, 5, 3});
    } else {
      return n.Fail("mode must be DCR or CRD, got '", mode, "'");
    }
    y = Reshape(y, {-1, c / (b * b), h * b, w * b});
  } else {
    if (h % b != 0 || w % b != 0) return n.Fail("H and W must be divisible by blocksize ", b);
    y = Transpose(Reshape(x, {-1, c, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
    y = Reshape(y, {-1, c * b * b, h / b, w / b});
  }
  n.SetOutput(0, y);
  return OkStatus();
}

}  // namespace

void AddArrayConverters(ConverterTable& t) {
  t["Reshape"] = ConvertReshape;
  t["Flatten"] = ConvertFlatten;
  t["Squeeze"] = ConvertSqueeze;
  t["Unsqueeze"] = ConvertUnsqueeze;
  t["Transpose"] = ConvertTranspose;
  t["Concat"] = ConvertConcat;
  t["Split"] = ConvertSplit;
  t["Slice"] = ConvertSlice;
  t["Gather"] = ConvertGather;
  t["Pad"] = ConvertPad;
  t["Tile"] = ConvertTile;
  t["Expand"] = ConvertExpand;
  t["DepthToSpace"] = ConvertDepthSpace;
  t["SpaceToDepth"] = ConvertDepthSpace;
}

}  // namespace kiln::onnx_import
