#include "runtime/cuda/driver_matmul.h"

#include <bit>

namespace kiln::cuda {
namespace {

cudaDataType_t CudaType(DType t) {
  return t == f16 ? CUDA_R_16F : t == bf16 ? CUDA_R_16BF : CUDA_R_32F;
}

cublasLtEpilogue_t CublasEpilogue(const MatmulCall& call) {
  switch (call.activation) {
    case MatmulCall::Activation::kRelu:
      return call.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case MatmulCall::Activation::kGeluTanh:
      return call.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    default:
      return call.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  }
}

// The alignment cuBLASLt may assume for every matrix of a batch: the largest power of two (at
// most 256, its default) dividing the start and the batch stride in bytes.
uint32_t AlignmentOf(DevicePtr start, int64_t batch, int64_t stride_bytes) {
  uint64_t bits = start | 256u;
  if (batch > 1) bits |= static_cast<uint64_t>(stride_bytes);
  return static_cast<uint32_t>(uint64_t{1} << std::countr_zero(bits));
}

// A call's cuBLASLt objects, destroyed with it.
struct DriverMatmul : PreparedMatmul {
  explicit DriverMatmul(const CublasLtApi& api) : api(api) {}
  ~DriverMatmul() override {
    if (preference) api.cublasLtMatmulPreferenceDestroy(preference);
    for (cublasLtMatrixLayout_t layout : {a, b, d})
      if (layout) api.cublasLtMatrixLayoutDestroy(layout);
    if (desc) api.cublasLtMatmulDescDestroy(desc);
  }
  const CublasLtApi& api;
  MatmulCall call;
  MatmulOperands operands;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // C is D
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulAlgo_t algo = {};
  size_t workspace_bytes = 0;
};

template <typename T>
Status SetDesc(const CublasLtApi& api, cublasLtMatmulDesc_t desc,
               cublasLtMatmulDescAttributes_t attr, const T& value) {
  return CheckCublas(api, api.cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)),
                     "cublasLtMatmulDescSetAttribute");
}

template <typename T>
Status SetPreference(const CublasLtApi& api, cublasLtMatmulPreference_t pref,
                     cublasLtMatmulPreferenceAttributes_t attr, const T& value) {
  return CheckCublas(api,
                     api.cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)),
                     "cublasLtMatmulPreferenceSetAttribute");
}

// A column-major rows x cols layout with leading dimension ld, strided over `batch`.
Status MakeLayout(const CublasLtApi& api, cublasLtMatrixLayout_t* layout, DType t, int64_t rows,
                  int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  KILN_RETURN_IF_ERROR(
      CheckCublas(api, api.cublasLtMatrixLayoutCreate(layout, CudaType(t), rows, cols, ld),
                  "cublasLtMatrixLayoutCreate"));
  if (batch == 1) return OkStatus();
  const int32_t count = static_cast<int32_t>(batch);
  KILN_RETURN_IF_ERROR(
      CheckCublas(api,
                  api.cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                       &count, sizeof(count)),
                  "cublasLtMatrixLayoutSetAttribute"));
  return CheckCublas(
      api,
      api.cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                           &stride, sizeof(stride)),
      "cublasLtMatrixLayoutSetAttribute");
}

}  // namespace

Result<std::unique_ptr<DriverMatmuls>> DriverMatmuls::Create(DevicePtr workspace) {
  KILN_ASSIGN_OR_RETURN(const CublasLtApi* api, LoadCublasLt());
  cublasLtHandle_t handle = nullptr;
  KILN_RETURN_IF_ERROR(CheckCublas(*api, api->cublasLtCreate(&handle), "cublasLtCreate"));
  return std::unique_ptr<DriverMatmuls>(new DriverMatmuls(*api, handle, workspace));
}

DriverMatmuls::~DriverMatmuls() { api_.cublasLtDestroy(handle_); }

Result<std::shared_ptr<PreparedMatmul>> DriverMatmuls::Prepare(const MatmulCall& call,
                                                               const MatmulOperands& operands) {
  if (call.batch > INT32_MAX)
    return MakeError(ErrorCode::kUnimplemented, call.ToString(), ": more than 2^31 batches");
  auto m = std::make_shared<DriverMatmul>(api_);
  m->call = call;
  m->operands = operands;
  const std::string what = "preparing " + call.ToString();
  // f32 products stay exact f32 unless TF32 is allowed; 16-bit operands accumulate in f32.
  const cublasComputeType_t compute = call.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  Status st = CheckCublas(api_, api_.cublasLtMatmulDescCreate(&m->desc, compute, CUDA_R_32F),
                          "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = call.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = call.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const uint32_t epilogue = CublasEpilogue(call);
  if (st.ok()) st = SetDesc(api_, m->desc, CUBLASLT_MATMUL_DESC_TRANSA, ta);
  if (st.ok()) st = SetDesc(api_, m->desc, CUBLASLT_MATMUL_DESC_TRANSB, tb);
  if (st.ok()) st = SetDesc(api_, m->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
  if (st.ok() && call.bias) {
    const void* bias = reinterpret_cast<const void*>(operands.bias);
    st = SetDesc(api_, m->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  }
  if (st.ok())
    st = MakeLayout(api_, &m->a, call.ab_type, call.a_rows(), call.a_cols(), call.lda, call.batch,
                    call.stride_a);
  if (st.ok())
    st = MakeLayout(api_, &m->b, call.ab_type, call.b_rows(), call.b_cols(), call.ldb, call.batch,
                    call.stride_b);
  if (st.ok())
    st = MakeLayout(api_, &m->d, call.d_type, call.m, call.n, call.ldd, call.batch, call.stride_d);
  if (st.ok())
    st = CheckCublas(api_, api_.cublasLtMatmulPreferenceCreate(&m->preference),
                     "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = kMatmulWorkspaceBytes;
  const int64_t ab = DTypeSize(call.ab_type), d = DTypeSize(call.d_type);
  const uint32_t align_a = AlignmentOf(operands.a, call.batch, call.stride_a * ab);
  const uint32_t align_b = AlignmentOf(operands.b, call.batch, call.stride_b * ab);
  const uint32_t align_d = AlignmentOf(operands.d, call.batch, call.stride_d * d);
  if (st.ok())
    st = SetPreference(api_, m->preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace);
  if (st.ok())
    st = SetPreference(api_, m->preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a);
  if (st.ok())
    st = SetPreference(api_, m->preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b);
  if (st.ok())
    st = SetPreference(api_, m->preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d);
  if (st.ok())
    st = SetPreference(api_, m->preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d);
  if (!st.ok()) return st.error().WithContext(what);
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  st = CheckCublas(api_,
                   api_.cublasLtMatmulAlgoGetHeuristic(handle_, m->desc, m->a, m->b, m->d, m->d,
                                                       m->preference, 1, &result, &found),
                   "cublasLtMatmulAlgoGetHeuristic");
  if (!st.ok()) return st.error().WithContext(what);
  if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    return MakeError(ErrorCode::kUnimplemented, "cuBLASLt has no algorithm for ", call.ToString(),
                     " with operands aligned to ", align_a, ", ", align_b, " and ", align_d,
                     " bytes");
  m->algo = result.algo;
  m->workspace_bytes = result.workspaceSize;
  return std::shared_ptr<PreparedMatmul>(std::move(m));
}

Status DriverMatmuls::Run(const PreparedMatmul& matmul, CUstream stream) {
  const auto& m = static_cast<const DriverMatmul&>(matmul);
  const float alpha = m.call.alpha, beta = m.call.beta;
  void* d = reinterpret_cast<void*>(m.operands.d);
  return CheckCublas(
      api_,
      api_.cublasLtMatmul(handle_, m.desc, &alpha, reinterpret_cast<const void*>(m.operands.a), m.a,
                          reinterpret_cast<const void*>(m.operands.b), m.b, &beta, d, m.d, d, m.d,
                          &m.algo, reinterpret_cast<void*>(workspace_), m.workspace_bytes,
                          reinterpret_cast<cudaStream_t>(stream)),
      "cublasLtMatmul");
}

}  // namespace kiln::cuda
