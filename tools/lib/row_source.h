// Where kiln train's examples come from: the rows (along the first axis) of one --data or --val
// array, read when a batch needs them. A folder of .npy shards and a CSV file are read row by row
// from the file (pread), never whole, so that a data set larger than memory trains; memory holds
// the batches in the making (and, for CSV, an index of 8 bytes per line).
//
//   NAME=FILE.npy | FILE.pb           one array, read whole when opened
//   NAME=DIR                          every *.npy file in DIR (name order): shards of one dtype and
//                                     the same dims after the first, concatenated along it
//   NAME=FILE.csv[:COLUMNS][:DTYPE]   columns of a CSV file of numbers (a first line that is not
//                                     all numbers is a header naming the columns). COLUMNS: "3",
//                                     "0-19", "1,4,7" or header names ("age,income"); default all.
//                                     One column gives rows of rank 0 (an [N] array), several [N,
//                                     K]. DTYPE: f32 (default), f64, i32 or i64 (integers must be
//                                     whole numbers).
// Rows() may be called from several threads at once. Errors name the file, and for CSV the line
// and column.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln::cli {

class RowSource {
 public:
  virtual ~RowSource() = default;
  int64_t rows() const { return rows_; }
  DType dtype() const { return dtype_; }
  const Shape& row_shape() const { return row_shape_; }  // the dims after the first
  // Rows order[begin, end) (rows begin..end-1 without an order) as one [end - begin, row_shape]
  // tensor.
  virtual Result<Tensor> Rows(const std::vector<int64_t>* order, int64_t begin,
                              int64_t end) const = 0;

 protected:
  int64_t rows_ = 0;
  DType dtype_ = DType::kInvalid;
  Shape row_shape_;
};

using NamedRowSource = std::pair<std::string, std::shared_ptr<const RowSource>>;

// The rows of an array in memory (rank >= 1).
std::shared_ptr<const RowSource> RowsOf(Tensor t);
// Opens "NAME=SPEC" values (`flag` names the flag in errors).
Result<std::vector<NamedRowSource>> OpenRowSources(const std::vector<std::string>& specs,
                                                   const std::string& flag);
// Every row of each source, as whole arrays (for validation sets).
Result<std::vector<std::pair<std::string, Tensor>>> ReadAllRows(
    const std::vector<NamedRowSource>& sources);

}  // namespace kiln::cli
