// The packed sgemm's path for products of very few rows (runtime/cpu/packed_sgemm.h): a batch of
// one to four vectors against a weight matrix (an MLP or AlexNet's classifier at a small batch,
// and its input gradient). Such a product is bound by reading op(b) once; packing it first
// (reading and writing it again) would triple that, so these read op(b) where it lies: without
// trans_b, each thread's 64-column stripes of c (4 zmm per row) advance together through blocks
// of 8 rows of b, so b is read as 8 streams along its rows (one stripe down all of k at a time
// strides 4 KiB pages apart: AlexNet's 9216 x 4096 fc6 read at 10 GB/s instead of 20); a b of
// 16 MiB or more is split by rows instead of columns, each thread reading one contiguous range of
// it into partial sums of c added afterwards in thread order (fc6 at batch 2 on a 2-core Zen 4:
// 10.3-10.9 -> 6.1-7.3 ms, the machine's sequential read rate). With trans_b (b stored n x k), four
// of b's rows at a time as dot products along k with each row of op(a). Stripes (groups of rows)
// are split over the session's threads. The sums run in k order per lane (without trans_b and
// without the split: exactly a naive loop's order).
#pragma once

#include "runtime/cpu/packed_sgemm.h"

namespace kiln::cpu {

inline constexpr int64_t kFewRows = 4;

// Computes `p` when p.m <= kFewRows, op(b) is not prepacked and the product is not accumulated
// into c; returns false (doing nothing) otherwise. Requires HasPackedSgemm().
bool FewRowsSgemm(const SgemmProblem& p, int threads);

}  // namespace kiln::cpu
