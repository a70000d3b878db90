#include "runtime/cpu/strided_region.h"

namespace kiln::cpu {
namespace {

// Whether every element `view` reaches over `dims` (each >= 1) lies in [0, elements); false when
// the arithmetic would overflow (the attributes may come from a file).
bool Inside(const StridedView& view, const std::vector<int64_t>& dims, int64_t elements) {
  int64_t lo = view.offset, hi = view.offset;
  for (size_t d = 0; d < dims.size(); ++d) {
    int64_t span = 0;
    if (__builtin_mul_overflow(dims[d] - 1, view.strides[d], &span)) return false;
    int64_t& end = span < 0 ? lo : hi;
    if (__builtin_add_overflow(end, span, &end)) return false;
  }
  return lo >= 0 && hi < elements;
}

// The same region over fewer dims: dims of extent 1 dropped, and neighbours that both views walk
// as one (a stride equal to the next dim's extent times its stride) merged.
void Simplify(StridedRegion& r) {
  std::vector<int64_t> d2, s2, t2;
  for (size_t d = 0; d < r.dims.size(); ++d) {
    if (r.dims[d] == 1) continue;
    if (!d2.empty() && s2.back() == r.dims[d] * r.src.strides[d] &&
        t2.back() == r.dims[d] * r.dst.strides[d]) {
      d2.back() *= r.dims[d];
      s2.back() = r.src.strides[d];
      t2.back() = r.dst.strides[d];
      continue;
    }
    d2.push_back(r.dims[d]);
    s2.push_back(r.src.strides[d]);
    t2.push_back(r.dst.strides[d]);
  }
  r.dims = std::move(d2);
  r.src.strides = std::move(s2);
  r.dst.strides = std::move(t2);
}

}  // namespace

int64_t StridedRegion::count() const {
  if (empty) return 0;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Result<StridedRegion> ReadStridedRegion(const Step& step, int64_t src_elements,
                                        int64_t dst_elements) {
  StridedRegion r;
  KILN_ASSIGN_OR_RETURN(r.dims, step.attrs.GetInts("dims"));
  KILN_ASSIGN_OR_RETURN(r.src.offset, step.attrs.GetInt("src_offset"));
  KILN_ASSIGN_OR_RETURN(r.src.strides, step.attrs.GetInts("src_strides"));
  KILN_ASSIGN_OR_RETURN(r.dst.offset, step.attrs.GetInt("dst_offset"));
  KILN_ASSIGN_OR_RETURN(r.dst.strides, step.attrs.GetInts("dst_strides"));
  if (r.src.strides.size() != r.dims.size() || r.dst.strides.size() != r.dims.size())
    return MakeError(ErrorCode::kInternal, step.callee, " '", step.node.name, "': ", r.dims.size(),
                     " dims but ", r.src.strides.size(), " and ", r.dst.strides.size(), " strides");
  for (int64_t d : r.dims) {
    if (d < 0)
      return MakeError(ErrorCode::kInternal, step.callee, " '", step.node.name,
                       "': a negative extent");
    r.empty = r.empty || d == 0;
  }
  if (r.empty) return r;
  int64_t count = 1;
  for (int64_t d : r.dims)
    if (__builtin_mul_overflow(count, d, &count) || count > dst_elements)
      return MakeError(ErrorCode::kInternal, step.callee, " '", step.node.name,
                       "': more elements than its destination's ", dst_elements);
  if (!Inside(r.src, r.dims, src_elements) || !Inside(r.dst, r.dims, dst_elements))
    return MakeError(ErrorCode::kInternal, step.callee, " '", step.node.name,
                     "': the views reach outside its buffers of ", src_elements, " and ",
                     dst_elements, " elements");
  Simplify(r);
  return r;
}

}  // namespace kiln::cpu
