#include "ir/shape.h"

#include <algorithm>

namespace kiln {

bool Shape::IsFullyKnown() const {
  return std::all_of(dims_.begin(), dims_.end(), [](int64_t d) { return d >= 0; });
}

int64_t Shape::NumElements() const {
  int64_t n = 1;
  for (int64_t d : dims_) {
    if (d < 0) return kUnknownDim;
    n *= d;
  }
  return n;
}

std::string Shape::ToString() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

bool Shape::IsCompatibleWith(const Shape& concrete) const {
  if (rank() != concrete.rank()) return false;
  for (int i = 0; i < rank(); ++i)
    if (dims_[i] >= 0 && dims_[i] != concrete.dims_[i]) return false;
  return true;
}

Result<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da == 1) {
      out[i] = db;
    } else if (db == 1) {
      out[i] = da;
    } else if (da == kUnknownDim || db == kUnknownDim) {
      out[i] = da == kUnknownDim ? db : da;  // the known one (or unknown): checked at run time
    } else if (da == db) {
      out[i] = da;
    } else {
      return MakeError(ErrorCode::kInvalidArgument, "shapes ", a.ToString(), " and ", b.ToString(),
                       " do not broadcast (dimension ", i, ": ", da, " vs ", db, ")");
    }
  }
  return Shape(std::move(out));
}

Result<int> NormalizeAxis(int64_t axis, int rank) {
  if (rank == 0 && (axis == 0 || axis == -1)) return 0;
  if (axis < -rank || axis >= rank)
    return MakeError(ErrorCode::kInvalidArgument, "axis ", axis, " is out of range for rank ",
                     rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<int64_t> RowMajorStrides(const Shape& s) {
  std::vector<int64_t> strides(s.rank());
  int64_t stride = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= s[i];
  }
  return strides;
}

}  // namespace kiln
