// Inference of the "array" ops that keep or rearrange every element: Reshape, Transpose, Squeeze,
// Unsqueeze, Flatten, BroadcastTo, Tile and Shape (see ir/ops/array.h for the semantics).
#include <string>

#include "ir/ops/array_internal.h"

namespace kiln::internal {
namespace {

// Product of dims[begin, end): 0 when one is 0, else -1 when one is unknown; an error on overflow.
Result<int64_t> DimProduct(const InferContext& ctx, const Shape& s, int begin, int end) {
  for (int i = begin; i < end; ++i)
    if (s[i] == 0) return 0;
  int64_t n = 1;
  bool unknown = false;
  for (int i = begin; i < end; ++i) {
    if (s[i] < 0) {
      unknown = true;
      continue;
    }
    std::optional<int64_t> m = CheckedMul(n, s[i]);
    if (!m) return ctx.Fail("the element count of ", s.ToString(), " overflows int64");
    n = *m;
  }
  return unknown ? kUnknownDim : n;
}

}  // namespace

Status InferReshape(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> target, ctx.attrs().GetInts("shape"));
  const Shape& in = ctx.shape(0);
  std::vector<int64_t> out(target.size());
  std::vector<bool> copied(in.rank(), false);
  int inferred = -1;
  int64_t out_rest = 1;  // product of the explicit (positive) target dims
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t t = target[i];
    if (t == -1) {
      if (inferred >= 0)
        return ctx.Fail("attribute 'shape' ", IntsToString(target), " has more than one -1");
      inferred = static_cast<int>(i);
    } else if (t < -1) {
      return ctx.Fail("attribute 'shape' ", IntsToString(target), " has entry ", t,
                      "; entries must be >= -1");
    } else if (t == 0) {
      if (static_cast<int>(i) >= in.rank())
        return ctx.Fail("attribute 'shape' ", IntsToString(target),
                        " has 0 (copy the input dim) at", " position ", i, ", but the input ",
                        in.ToString(), " has rank ", in.rank());
      out[i] = in[i];
      copied[i] = true;
    } else {
      out[i] = t;
      std::optional<int64_t> m = CheckedMul(out_rest, t);
      if (!m) return ctx.Fail("attribute 'shape' ", IntsToString(target), " overflows int64");
      out_rest = *m;
    }
  }
  // The input dims that are not copied must hold exactly the explicit and inferred dims.
  std::vector<int64_t> rest;
  for (int i = 0; i < in.rank(); ++i)
    if (!copied[i]) rest.push_back(in[i]);
  KILN_ASSIGN_OR_RETURN(int64_t in_rest,
                        DimProduct(ctx, Shape(rest), 0, static_cast<int>(rest.size())));
  if (inferred >= 0) {
    if (in_rest >= 0 && in_rest % out_rest != 0)
      return ctx.Fail("cannot reshape ", in.ToString(), " to ", IntsToString(target), ": ", in_rest,
                      " elements are not divisible by ", out_rest);
    out[inferred] = in_rest >= 0 ? in_rest / out_rest : kUnknownDim;
  } else if (in_rest >= 0 && in_rest != out_rest) {
    return ctx.Fail("cannot reshape ", in.ToString(), " to ", Shape(out).ToString(),
                    " (attribute 'shape' ", IntsToString(target), "): the element counts differ");
  }
  ctx.AddOutput(ctx.dtype(0), Shape(std::move(out)));
  return OkStatus();
}

std::vector<int64_t> TransposePermutation(const AttrMap& attrs, int rank) {
  std::vector<int64_t> perm = attrs.Find("perm")->get<std::vector<int64_t>>();
  if (perm.empty())
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  return perm;
}

Status InferTranspose(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  std::vector<int64_t> perm = TransposePermutation(ctx.attrs(), in.rank());
  if (static_cast<int>(perm.size()) != in.rank())
    return ctx.Fail("attribute 'perm' ", IntsToString(perm), " must have one entry per input dim (",
                    in.rank(), " for ", in.ToString(), "), has ", perm.size());
  std::vector<bool> seen(in.rank(), false);
  std::vector<int64_t> out(in.rank());
  for (int i = 0; i < in.rank(); ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= in.rank() || seen[p])
      return ctx.Fail("attribute 'perm' ", IntsToString(perm), " is not a permutation of 0..",
                      in.rank() - 1);
    seen[p] = true;
    out[i] = in[static_cast<int>(p)];
  }
  ctx.AddOutput(ctx.dtype(0), Shape(std::move(out)));
  return OkStatus();
}

Status InferSqueeze(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.attrs().GetInts("axes"));
  const Shape& in = ctx.shape(0);
  std::vector<bool> drop(in.rank(), false);
  if (axes.empty()) {
    for (int i = 0; i < in.rank(); ++i) {
      if (in[i] < 0)
        return ctx.Fail("cannot tell which dims of ", in.ToString(), " have size 1 (dim ", i,
                        " is unknown); pass explicit 'axes'");
      drop[i] = in[i] == 1;
    }
  }
  for (int64_t axis : axes) {
    Result<int> a = NormalizeAxis(axis, in.rank());
    if (!a.ok() || in.rank() == 0)
      return ctx.Fail("attribute 'axes': axis ", axis, " is out of range for ", in.ToString());
    if (drop[*a])
      return ctx.Fail("attribute 'axes' ", IntsToString(axes), " names dim ", *a, " twice");
    if (in[*a] >= 0 && in[*a] != 1)
      return ctx.Fail("cannot squeeze dim ", *a, " of ", in.ToString(), ": its size is ", in[*a],
                      ", expected 1");
    drop[*a] = true;
  }
  std::vector<int64_t> out;
  for (int i = 0; i < in.rank(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  ctx.AddOutput(ctx.dtype(0), Shape(std::move(out)));
  return OkStatus();
}

Status InferUnsqueeze(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.attrs().GetInts("axes"));
  const Shape& in = ctx.shape(0);
  if (axes.empty()) return ctx.Fail("attribute 'axes' must name at least one new axis");
  int out_rank = in.rank() + static_cast<int>(axes.size());
  std::vector<bool> inserted(out_rank, false);
  for (int64_t axis : axes) {
    Result<int> a = NormalizeAxis(axis, out_rank);
    if (!a.ok())
      return ctx.Fail("attribute 'axes': axis ", axis, " is out of range for an output of rank ",
                      out_rank);
    if (inserted[*a])
      return ctx.Fail("attribute 'axes' ", IntsToString(axes), " names axis ", *a, " twice");
    inserted[*a] = true;
  }
  std::vector<int64_t> out(out_rank);
  for (int i = 0, next = 0; i < out_rank; ++i) out[i] = inserted[i] ? 1 : in[next++];
  ctx.AddOutput(ctx.dtype(0), Shape(std::move(out)));
  return OkStatus();
}

Status InferFlatten(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().GetInt("axis"));
  const Shape& in = ctx.shape(0);
  if (axis < -in.rank() || axis > in.rank())
    return ctx.Fail("attribute 'axis' is ", axis, ", expected a value in [", -in.rank(), ", ",
                    in.rank(), "] for ", in.ToString());
  int a = static_cast<int>(axis < 0 ? axis + in.rank() : axis);
  KILN_ASSIGN_OR_RETURN(int64_t outer, DimProduct(ctx, in, 0, a));
  KILN_ASSIGN_OR_RETURN(int64_t inner, DimProduct(ctx, in, a, in.rank()));
  ctx.AddOutput(ctx.dtype(0), Shape{outer, inner});
  return OkStatus();
}

Status InferBroadcastTo(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> target, ctx.attrs().GetInts("shape"));
  const Shape& in = ctx.shape(0);
  for (int64_t d : target)
    if (d < 0) return ctx.Fail("attribute 'shape' ", IntsToString(target), " has a negative dim");
  int offset = static_cast<int>(target.size()) - in.rank();
  if (offset < 0)
    return ctx.Fail("cannot broadcast ", in.ToString(), " to ", IntsToString(target),
                    ", which has fewer dims");
  for (int i = 0; i < in.rank(); ++i) {
    int64_t d = in[i], t = target[offset + i];
    if (d >= 0 && d != 1 && d != t)
      return ctx.Fail("cannot broadcast ", in.ToString(), " to ", IntsToString(target), ": dim ", i,
                      " has size ", d, ", expected 1 or ", t);
  }
  ctx.AddOutput(ctx.dtype(0), Shape(std::move(target)));
  return OkStatus();
}

Result<Shape> TiledShape(const InferContext& ctx, const Shape& in) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> multiples, ctx.attrs().GetInts("multiples"));
  if (static_cast<int>(multiples.size()) != in.rank())
    return ctx.Fail("attribute 'multiples' ", IntsToString(multiples), " must have one entry per",
                    " input dim (", in.rank(), " for ", in.ToString(), ")");
  std::vector<int64_t> out(in.rank());
  for (int i = 0; i < in.rank(); ++i) {
    int64_t m = multiples[i];
    if (m < 0)
      return ctx.Fail("attribute 'multiples' ", IntsToString(multiples), " has a negative entry");
    if (in[i] < 0) {
      out[i] = m == 0 ? 0 : kUnknownDim;
      continue;
    }
    std::optional<int64_t> d = CheckedMul(in[i], m);
    if (!d)
      return ctx.Fail("tiling dim ", i, " of ", in.ToString(), " ", m, " times overflows int64");
    out[i] = *d;
  }
  return Shape(std::move(out));
}

Status InferTile(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Shape out, TiledShape(ctx, ctx.shape(0)));
  ctx.AddOutput(ctx.dtype(0), std::move(out));
  return OkStatus();
}

Status InferShape(InferContext& ctx) {
  ctx.AddOutput(i64, Shape{ctx.shape(0).rank()});
  return OkStatus();
}

Result<std::vector<Tensor>> ShapeValue(const InferContext& ctx) {
  const Shape& shape = ctx.shape(0);
  if (!shape.IsFullyKnown()) return std::vector<Tensor>{};
  return std::vector<Tensor>{Tensor::FromVector<int64_t>(Shape{shape.rank()}, shape.dims())};
}

}  // namespace kiln::internal
