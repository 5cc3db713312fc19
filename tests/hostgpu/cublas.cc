// The host-emulated device's cuBLAS: the entry points src/ops/cuda/cublas_library.cc resolves,
// as a library it can dlopen (an EMULATED build compiles its path in). Column-major gemm with
// cuBLAS' argument checks (a wrong leading dimension is CUBLAS_STATUS_INVALID_VALUE, not a
// silent misread), run on the handle's stream; C is not read when beta is 0, as cuBLAS.
// Accumulates in the compute type: float for float and half, double for double.
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "hostgpu.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
};

namespace {

template <typename T>
double load(const void* p, int64_t i) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(static_cast<const __half*>(p)[i]);
  } else {
    return static_cast<const T*>(p)[i];
  }
}
template <typename T>
void store(void* p, int64_t i, double v) {
  if constexpr (std::is_same_v<T, __half>) {
    static_cast<__half*>(p)[i] = __float2half(static_cast<float>(v));
  } else {
    static_cast<T*>(p)[i] = static_cast<T>(v);
  }
}

struct Gemm {
  cublasOperation_t ta, tb;
  int m, n, k;
  double alpha, beta;
  const void* a;
  int lda;
  long long stride_a;
  const void* b;
  int ldb;
  long long stride_b;
  void* c;
  int ldc;
  long long stride_c;
  int batch;
};

bool valid(const Gemm& g) {
  auto op_ok = [](cublasOperation_t t) { return t == CUBLAS_OP_N || t == CUBLAS_OP_T; };
  const int a_rows = g.ta == CUBLAS_OP_N ? g.m : g.k;
  const int b_rows = g.tb == CUBLAS_OP_N ? g.k : g.n;
  return op_ok(g.ta) && op_ok(g.tb) && g.m >= 0 && g.n >= 0 && g.k >= 0 && g.batch >= 0 &&
         g.lda >= std::max(1, a_rows) && g.ldb >= std::max(1, b_rows) && g.ldc >= std::max(1, g.m);
}

// Acc is the compute type; T the storage type.
template <typename T, typename Acc>
void run(const Gemm& g) {
  for (int p = 0; p < g.batch; ++p) {
    const int64_t oa = p * g.stride_a, ob = p * g.stride_b, oc = p * g.stride_c;
    for (int j = 0; j < g.n; ++j) {
      for (int i = 0; i < g.m; ++i) {
        Acc sum = 0;
        for (int l = 0; l < g.k; ++l) {
          const int64_t ia = g.ta == CUBLAS_OP_N ? i + int64_t(l) * g.lda : l + int64_t(i) * g.lda;
          const int64_t ib = g.tb == CUBLAS_OP_N ? l + int64_t(j) * g.ldb : j + int64_t(l) * g.ldb;
          sum += static_cast<Acc>(load<T>(g.a, oa + ia)) * static_cast<Acc>(load<T>(g.b, ob + ib));
        }
        const int64_t ic = oc + i + int64_t(j) * g.ldc;
        const Acc prior = g.beta == 0 ? Acc(0) : static_cast<Acc>(g.beta * load<T>(g.c, ic));
        store<T>(g.c, ic, static_cast<Acc>(g.alpha) * sum + prior);
      }
    }
  }
}

template <typename T, typename Acc>
cublasStatus_t submit(cublasHandle_t handle, const Gemm& g) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!valid(g)) return CUBLAS_STATUS_INVALID_VALUE;
  if (g.m == 0 || g.n == 0 || g.batch == 0) return CUBLAS_STATUS_SUCCESS;
  const cudaError_t status = nanomx::hostgpu::enqueue(handle->stream, [g] { run<T, Acc>(g); });
  return status == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t) {
  return handle != nullptr ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                              int m, int n, int k, const float* alpha, const float* a, int lda,
                              const float* b, int ldb, const float* beta, float* c, int ldc) {
  return submit<float, float>(handle,
                              {ta, tb, m, n, k, *alpha, *beta, a, lda, 0, b, ldb, 0, c, ldc, 0, 1});
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float* alpha, const float* a, int lda,
                                         long long stride_a, const float* b, int ldb,
                                         long long stride_b, const float* beta, float* c, int ldc,
                                         long long stride_c, int batch) {
  return submit<float, float>(handle, {ta, tb, m, n, k, *alpha, *beta, a, lda, stride_a, b, ldb,
                                       stride_b, c, ldc, stride_c, batch});
}

cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                              int m, int n, int k, const double* alpha, const double* a, int lda,
                              const double* b, int ldb, const double* beta, double* c, int ldc) {
  return submit<double, double>(
      handle, {ta, tb, m, n, k, *alpha, *beta, a, lda, 0, b, ldb, 0, c, ldc, 0, 1});
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const double* alpha, const double* a, int lda,
                                         long long stride_a, const double* b, int ldb,
                                         long long stride_b, const double* beta, double* c, int ldc,
                                         long long stride_c, int batch) {
  return submit<double, double>(handle, {ta, tb, m, n, k, *alpha, *beta, a, lda, stride_a, b, ldb,
                                         stride_b, c, ldc, stride_c, batch});
}

// Only what nanomx asks of it: half storage, float compute (alpha and beta are floats then).
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void* alpha, const void* a, cudaDataType a_type,
                                          int lda, long long stride_a, const void* b,
                                          cudaDataType b_type, int ldb, long long stride_b,
                                          const void* beta, void* c, cudaDataType c_type, int ldc,
                                          long long stride_c, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t) {
  if (a_type != CUDA_R_16F || b_type != CUDA_R_16F || c_type != CUDA_R_16F ||
      compute != CUBLAS_COMPUTE_32F) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  const double al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  return submit<__half, float>(handle, {ta, tb, m, n, k, al, be, a, lda, stride_a, b, ldb, stride_b,
                                        c, ldc, stride_c, batch});
}

}  // extern "C"
