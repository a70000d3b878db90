#include "runtime/cpu/product_adder.h"

#include <vector>

#include "runtime/cpu/packed_sgemm.h"

namespace kiln::cpu {
namespace {

// Up to this k, a bf16 product is widened and added by the packed sgemm even where oneDNN has a
// native bf16 matmul: it is bound by reading and writing c (k / 4 FLOPs per byte of c), which the
// packed sgemm streams faster (AlexNet-S's fc6 gradient at batch 2, k = 2: 12.1 ms through oneDNN,
// 7.7 through the packed sgemm on a 2-core Zen 4), and widening a and b costs little beside c.
constexpr int64_t kMostWidenedK = 64;

class PackedSgemmAdder : public ProductAdder {
 public:
  explicit PackedSgemmAdder(const GemmParams& p) : p_(p) {}
  Status Add(const void* a, const void* b, float* c, float alpha, int threads) const override {
    SgemmProblem s;
    s.m = p_.m, s.n = p_.n, s.k = p_.k;
    s.trans_a = p_.trans_a, s.trans_b = p_.trans_b;
    s.a = static_cast<const float*>(a), s.b = static_cast<const float*>(b), s.c = c;
    s.accumulate = true;
    s.alpha = alpha;
    PackedSgemm(s, threads);
    return OkStatus();
  }

 private:
  GemmParams p_;
};

class WidenedAdder : public ProductAdder {
 public:
  WidenedAdder(const GemmParams& p, std::unique_ptr<ProductAdder> f32_adder)
      : a_count_(p.m * p.k), b_count_(p.k * p.n), f32_adder_(std::move(f32_adder)) {}
  Status Add(const void* a, const void* b, float* c, float alpha, int threads) const override {
    thread_local std::vector<float> wide;
    wide.resize(static_cast<size_t>(a_count_ + b_count_));
    Widen(static_cast<const uint16_t*>(a), a_count_, wide.data());
    Widen(static_cast<const uint16_t*>(b), b_count_, wide.data() + a_count_);
    return f32_adder_->Add(wide.data(), wide.data() + a_count_, c, alpha, threads);
  }

 private:
  static void Widen(const uint16_t* from, int64_t count, float* to) {
    for (int64_t i = 0; i < count; ++i) to[i] = BFloat16ToFloat(from[i]);
  }

  int64_t a_count_, b_count_;
  std::unique_ptr<ProductAdder> f32_adder_;
};

Result<std::unique_ptr<ProductAdder>> MakeF32Adder(const Step& step, const GemmParams& p) {
  if (HasPackedSgemm()) return std::unique_ptr<ProductAdder>(new PackedSgemmAdder(p));
  return MakeBlasProductAdder(step, p);
}

}  // namespace

std::unique_ptr<ProductAdder> MakeWidenedProductAdder(const GemmParams& p,
                                                      std::unique_ptr<ProductAdder> f32_adder) {
  return std::unique_ptr<ProductAdder>(new WidenedAdder(p, std::move(f32_adder)));
}

Result<std::unique_ptr<ProductAdder>> MakeProductAdder(const Step& step, const GemmParams& p) {
  if (p.batch != 1 || p.bias || p.relu || p.gelu_tanh || p.out_dtype != f32 ||
      (p.dtype != f32 && p.dtype != bf16))
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "': a product update multiplies one pair of f32 or bf16 matrices into f32, "
                     "without an epilogue");
  if (p.dtype == f32) return MakeF32Adder(step, p);
  if (p.k > kMostWidenedK || !HasPackedSgemm()) {
    Result<std::unique_ptr<ProductAdder>> native = MakeOnednnProductAdder(step, p);
    if (native.ok() || native.error().code() != ErrorCode::kUnimplemented) return native;
  }
  GemmParams wide = p;
  wide.dtype = f32;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<ProductAdder> f32_adder, MakeF32Adder(step, wide));
  return MakeWidenedProductAdder(p, std::move(f32_adder));
}

}  // namespace kiln::cpu
