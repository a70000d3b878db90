// Reading and writing numpy .npy files (format versions 1.0, 2.0 and 3.0).
//
// Supported dtypes (numpy descr -> kiln): '<f4' f32, '<f8' f64, '<f2' f16, '|i1' i8, '|u1' u8,
// '<i4' i32, '<i8' i64, '|b1' bool. bfloat16 has no numpy descr: kiln writes it as '|V2' (raw
// 2-byte void, which numpy loads as np.void; ml_dtypes users can `.view(ml_dtypes.bfloat16)`), and
// reads '|V2' or '<V2' back as bf16. On read, big-endian ('>') and native ('=') descrs are byte-
// swapped as needed, and fortran_order True arrays are transposed into kiln's row-major order.
// Writing always produces little-endian, C-order, version 1.0 (2.0 if the header needs it).
//
// Every malformed input (bad magic, truncated header or data, malformed header dict, unsupported
// or object descr, negative or oversized shape) is an Error naming the file and what was expected;
// no sequence of bytes crashes the parser.
#pragma once

#include <string>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

// The header of a .npy file: its data, data_offset bytes from the start, holds the elements of
// `shape` in row-major order (or column-major with fortran_order), byte-swapped from kiln's
// little-endian when byte_swapped.
struct NpyHeader {
  DType dtype = DType::kInvalid;
  Shape shape;
  bool fortran_order = false;
  bool byte_swapped = false;
  size_t data_offset = 0;
};
// Parses the header at the start of `bytes` (the whole file, or at least its header).
Result<NpyHeader> ParseNpyHeader(const std::string& bytes, const std::string& origin);

// Reads a .npy file (at most kMaxTensorBytes of data).
Result<Tensor> ReadNpy(const std::string& path);
// Parses the bytes of a .npy file; `origin` (a path or "<memory>") names it in errors.
Result<Tensor> ParseNpy(const std::string& bytes, const std::string& origin);
// Writes `t` to `path` atomically (temporary file, fsync, rename).
Status WriteNpy(const std::string& path, const Tensor& t);
// The bytes of a .npy file holding `t` (a tensor, not a container).
std::string SerializeNpy(const Tensor& t);

}  // namespace kiln
