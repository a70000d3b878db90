#include "tools/lib/batch_rows.h"

#include <cstring>

namespace kiln::cli {

Tensor BatchRows(const Tensor& t, const std::vector<int64_t>* order, int64_t begin, int64_t end) {
  Shape shape = t.shape();
  shape.set_dim(0, end - begin);
  Tensor out(t.dtype(), shape);
  const int64_t row_bytes = t.shape()[0] ? t.byte_size() / t.shape()[0] : 0;
  for (int64_t i = begin; i < end; ++i)
    std::memcpy(static_cast<uint8_t*>(out.raw_data()) + (i - begin) * row_bytes,
                static_cast<const uint8_t*>(t.raw_data()) + (order ? (*order)[i] : i) * row_bytes,
                row_bytes);
  return out;
}

}  // namespace kiln::cli
