// ONNX indexing: GatherElements, ScatterElements (reduction none, add, mul) and the deprecated
// Scatter (ScatterElements without reduction), onto kiln's ops of the same names; GatherND and
// ScatterND as those on the data seen as a matrix: one row per index tuple (the indexed leading
// dims flattened, a tuple's row its row-major linear index, negative entries counted from the end)
// and the trailing dims as columns. GatherND's batch_dims become blocks of rows, offset per batch.
// Both need the data's dims and the tuple length known (else they convert once the run knows them).
// ReverseSequence is a GatherElements along the time axis; NonZero maps to kiln's, and Compress is
// a Gather of its condition's NonZero positions. Unique maps to kiln's.
#include <algorithm>
#include <optional>

#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/array_elements.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/ops/unique.h"

namespace kiln::onnx_import {
namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= dims[d];
  return p;
}

// The rows of `data` (dims `dims`, its dims [first, first + k) indexed) that index tuples
// `tuples` ([..., k]) name: a tuple's row-major linear index over those dims, an entry below 0
// counted from the end of its dim. Has `tuples`' shape without its last dim.
Value LinearIndex(const OnnxNode& n, Value tuples, const std::vector<int64_t>& dims, size_t first,
                  int64_t k) {
  std::vector<int64_t> strides(static_cast<size_t>(k)), sizes(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) {
    const size_t d = first + static_cast<size_t>(j);
    sizes[static_cast<size_t>(j)] = dims[d];
    strides[static_cast<size_t>(j)] = Product(dims, d + 1, first + static_cast<size_t>(k));
  }
  Value idx = tuples.dtype() == i64 ? tuples : Cast(tuples, i64);
  Value size = n.g().Constant(Tensor::FromVector<int64_t>(Shape{k}, sizes));
  idx = Select(Less(idx, n.g().Scalar(0, i64)), idx + size, idx);
  Value stride = n.g().Constant(Tensor::FromVector<int64_t>(Shape{k}, strides));
  return Sum(idx * stride, {tuples.rank() - 1});
}

Status ConvertGatherND(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value data, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value indices, n.input(1));
  KILN_ASSIGN_OR_RETURN(int64_t b, n.Int("batch_dims", 0));
  const int r = data.rank(), q = indices.rank();
  if (q < 1 || b < 0 || b >= std::min(r, q))
    return n.Fail("batch_dims ", b, " for data of rank ", r, " and indices of rank ", q);
  if (!data.shape().IsFullyKnown() || !indices.shape().IsFullyKnown())
    return n.NotKnownYet("needs the dims of data and indices known, got ", data.shape().ToString(),
                         " and ", indices.shape().ToString());
  const std::vector<int64_t>& dims = data.shape().dims();
  const std::vector<int64_t>& idims = indices.shape().dims();
  const int64_t k = idims.back();
  if (k < 1 || b + k > r)
    return n.Fail("index tuples of ", k, " entries after ", b, " batch dims for data of rank ", r);
  const size_t nb = static_cast<size_t>(b), nk = static_cast<size_t>(b + k);
  for (size_t d = 0; d < nb; ++d)
    if (idims[d] != dims[d])
      return n.Fail("batch dim ", d, " is ", dims[d], " in data and ", idims[d], " in indices");
  const int64_t batches = Product(dims, 0, nb), rows = Product(dims, nb, nk),
                cols = Product(dims, nk, dims.size());
  const int64_t per_batch = Product(idims, nb, idims.size() - 1);
  Value row = LinearIndex(n, Reshape(indices, {batches, per_batch, k}), dims, nb, k);
  if (batches > 1) {
    std::vector<int64_t> offsets(static_cast<size_t>(batches));
    for (int64_t i = 0; i < batches; ++i) offsets[static_cast<size_t>(i)] = i * rows;
    row = row + n.g().Constant(Tensor::FromVector<int64_t>(Shape{batches, 1}, offsets));
  }
  Value picked = Gather(Reshape(data, {batches * rows, cols}), Reshape(row, {batches * per_batch}));
  std::vector<int64_t> out(idims.begin(), idims.end() - 1);
  out.insert(out.end(), dims.begin() + static_cast<std::ptrdiff_t>(nk), dims.end());
  n.SetOutput(0, Reshape(picked, out));
  return OkStatus();
}

Status ConvertScatterND(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value data, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value indices, n.input(1));
  KILN_ASSIGN_OR_RETURN(Value updates, n.input(2));
  KILN_ASSIGN_OR_RETURN(std::string reduction, n.String("reduction", "none"));
  if (!data.shape().IsFullyKnown() || !indices.shape().IsFullyKnown())
    return n.NotKnownYet("needs the dims of data and indices known, got ", data.shape().ToString(),
                         " and ", indices.shape().ToString());
  const std::vector<int64_t>& dims = data.shape().dims();
  const std::vector<int64_t>& idims = indices.shape().dims();
  const int64_t k = idims.empty() ? 0 : idims.back();
  if (idims.empty() || k < 1 || k > data.rank())
    return n.Fail("index tuples of ", k, " entries for data of rank ", data.rank());
  const size_t nk = static_cast<size_t>(k);
  const int64_t rows = Product(dims, 0, nk), cols = Product(dims, nk, dims.size());
  const int64_t tuples = Product(idims, 0, idims.size() - 1);
  std::vector<int64_t> want(idims.begin(), idims.end() - 1);
  want.insert(want.end(), dims.begin() + static_cast<std::ptrdiff_t>(nk), dims.end());
  if (updates.shape() != Shape(want))
    return n.Fail("updates are ", updates.shape().ToString(), "; indices ",
                  indices.shape().ToString(), " into data ", data.shape().ToString(), " need ",
                  Shape(want).ToString());
  Value row = LinearIndex(n, Reshape(indices, {tuples, k}), dims, 0, k);
  Value at = BroadcastTo(Reshape(row, {tuples, 1}), {tuples, cols});
  Value scattered = ScatterElements(Reshape(data, {rows, cols}), at,
                                    Reshape(updates, {tuples, cols}), 0, reduction);
  n.SetOutput(0, Reshape(scattered, dims));
  return OkStatus();
}

Status ConvertGatherElements(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value data, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value indices, n.input(1));
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 0));
  n.SetOutput(0, GatherElements(data, indices, axis));
  return OkStatus();
}

Status ConvertScatterElements(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value data, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value indices, n.input(1));
  KILN_ASSIGN_OR_RETURN(Value updates, n.input(2));
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 0));
  KILN_ASSIGN_OR_RETURN(std::string reduction, n.String("reduction", "none"));
  n.SetOutput(0, ScatterElements(data, indices, updates, axis, reduction));
  return OkStatus();
}

// ReverseSequence: along time_axis, the first sequence_lens[b] elements of batch entry b in
// reverse order, the rest as they are: a GatherElements along time_axis with, at time t,
// len - 1 - t where t < len, else t.
Status ConvertReverseSequence(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value lens, n.input(1));
  KILN_ASSIGN_OR_RETURN(int64_t batch_axis, n.Int("batch_axis", 1));
  KILN_ASSIGN_OR_RETURN(int64_t time_axis, n.Int("time_axis", 0));
  const int r = x.rank();
  if (r < 2 || batch_axis < 0 || time_axis < 0 || batch_axis >= r || time_axis >= r ||
      batch_axis == time_axis || lens.rank() != 1)
    return n.Fail("batch_axis ", batch_axis, " and time_axis ", time_axis, " for input ",
                  x.type().ToString(), " and sequence_lens ", lens.type().ToString());
  if (!x.shape().IsFullyKnown())
    return n.NotKnownYet("needs the input's dims known, got ", x.shape().ToString());
  const std::vector<int64_t>& dims = x.shape().dims();
  const int64_t steps = dims[static_cast<size_t>(time_axis)];
  std::vector<int64_t> iota(static_cast<size_t>(steps)), along_time(r, 1), along_batch(r, 1);
  for (int64_t i = 0; i < steps; ++i) iota[static_cast<size_t>(i)] = i;
  along_time[static_cast<size_t>(time_axis)] = steps;
  along_batch[static_cast<size_t>(batch_axis)] = dims[static_cast<size_t>(batch_axis)];
  Value t = n.g().Constant(Tensor::FromVector<int64_t>(Shape(along_time), iota));
  Value len = Reshape(lens.dtype() == i64 ? lens : Cast(lens, i64), along_batch);
  Value at = Select(Less(t, len), len - 1.0 - t, t);
  n.SetOutput(0, GatherElements(x, BroadcastTo(at, dims), time_axis));
  return OkStatus();
}

Status ConvertNonZero(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  n.SetOutput(0, NonZero(x));
  return OkStatus();
}

// Compress: the slices along `axis` (of the flattened input without one) where the 1-D condition
// is true, a Gather of its NonZero positions (a condition shorter than the axis selects none of
// the rest).
Status ConvertCompress(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value condition, n.input(1));
  if (condition.rank() != 1)
    return n.Fail("the condition must be 1-D, got ", condition.type().ToString());
  Value picked = Reshape(NonZero(condition), {-1});
  if (!n.has_attr("axis")) {
    n.SetOutput(0, Gather(Reshape(x, {-1}), picked, 0));
    return OkStatus();
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 0));
  if (axis < -x.rank() || axis >= x.rank())
    return n.Fail("axis ", axis, " is out of range for ", x.type().ToString());
  n.SetOutput(0, Gather(x, picked, axis));
  return OkStatus();
}

Status ConvertUnique(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(int64_t sorted, n.Int("sorted", 1));
  std::optional<int64_t> axis;
  if (n.has_attr("axis")) {
    KILN_ASSIGN_OR_RETURN(axis, n.Int("axis", 0));
    if (*axis < -x.rank() || *axis >= x.rank())
      return n.Fail("axis ", *axis, " is out of range for ", x.type().ToString());
  }
  UniqueResult u = Unique(x, axis, sorted != 0);
  const Value outputs[] = {u.y, u.indices, u.inverse, u.counts};
  for (int i = 0; i < 4; ++i)
    if (n.wants_output(i)) n.SetOutput(i, outputs[i]);
  return OkStatus();
}

}  // namespace

void AddIndexConverters(ConverterTable& t) {
  t["Unique"] = ConvertUnique;
  t["GatherElements"] = ConvertGatherElements;
  t["ScatterElements"] = ConvertScatterElements;
  t["Scatter"] = ConvertScatterElements;
  t["GatherND"] = ConvertGatherND;
  t["ScatterND"] = ConvertScatterND;
  t["ReverseSequence"] = ConvertReverseSequence;
  t["NonZero"] = ConvertNonZero;
  t["Compress"] = ConvertCompress;
}

}  // namespace kiln::onnx_import
