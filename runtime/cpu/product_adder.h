// Adding a matrix product into an f32 matrix: c += alpha * op(a) x op(b), for the "assign" step
// that updates a weight by its folded gradient product (compiler/assign_folding.h): one product
// (batch 1), no epilogue, f32 or bf16 operands (a mixed-precision gradient), c the weight itself.
//
// MakeProductAdder chooses how once, at load: f32 operands through kiln's packed sgemm where the
// CPU has AVX-512 (runtime/cpu/packed_sgemm.h, accumulate), else OpenBLAS's sgemm with beta 1;
// bf16 operands through oneDNN's native bf16 matmul (a sum post-op and an output scale given at
// run time) where the CPU has one and k is large enough for the product to be bound by its
// arithmetic (k > 64), else widened to f32 (into scratch of the running thread) and added as
// f32. Where a runtime built without oneDNN and OpenBLAS would need them, the step is
// refused (kUnimplemented, naming it).
#pragma once

#include <memory>

#include "runtime/cpu/gemm_params.h"

namespace kiln::cpu {

class ProductAdder {
 public:
  virtual ~ProductAdder() = default;
  // c += alpha * op(a) x op(b) on up to `threads` threads.
  virtual Status Add(const void* a, const void* b, float* c, float alpha, int threads) const = 0;
};

// `p` as ReadGemmParams read it from `step` (f32 or bf16 operands, c f32).
Result<std::unique_ptr<ProductAdder>> MakeProductAdder(const Step& step, const GemmParams& p);

// bf16 operands widened to f32 and added by `f32_adder` (MakeProductAdder's fallback; exposed
// for tests on CPUs that take the native path).
std::unique_ptr<ProductAdder> MakeWidenedProductAdder(const GemmParams& p,
                                                      std::unique_ptr<ProductAdder> f32_adder);

// The library ways (gemm_step.cc, onednn_matmul_step.cc; refused in a runtime without them):
// f32 through OpenBLAS, bf16 through oneDNN's native matmul (kUnimplemented where the CPU has
// none, which MakeProductAdder answers by widening).
Result<std::unique_ptr<ProductAdder>> MakeBlasProductAdder(const Step& step, const GemmParams& p);
Result<std::unique_ptr<ProductAdder>> MakeOnednnProductAdder(const Step& step, const GemmParams& p);

}  // namespace kiln::cpu
