// The host-emulated device's cuBLAS: the entry points src/backends/cuda/cublas_library.cc resolves,
// as a library it can dlopen (an EMULATED build compiles its path in). Column-major gemm with
// cuBLAS' argument checks (a wrong leading dimension is CUBLAS_STATUS_INVALID_VALUE, not a
// silent misread), run on the handle's stream by OpenBLAS (float16 through float32 copies, as
// cuBLAS computes it in float32). Before it runs, every operand's extent -- the last element its
// leading dimension and batch stride reach -- must lie inside one device allocation: where a GPU
// would fault with an illegal address, this aborts naming the operand.
#include <cblas.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "hostgpu.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
};

namespace {

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

  // The stored (column-major) shapes of A and B: op(A) is m x k, op(B) k x n.
  int a_rows() const { return ta == CUBLAS_OP_N ? m : k; }
  int a_cols() const { return ta == CUBLAS_OP_N ? k : m; }
  int b_rows() const { return tb == CUBLAS_OP_N ? k : n; }
  int b_cols() const { return tb == CUBLAS_OP_N ? n : k; }
};

bool valid(const Gemm& g) {
  auto op_ok = [](cublasOperation_t t) { return t == CUBLAS_OP_N || t == CUBLAS_OP_T; };
  return op_ok(g.ta) && op_ok(g.tb) && g.m >= 0 && g.n >= 0 && g.k >= 0 && g.batch >= 0 &&
         g.lda >= std::max(1, g.a_rows()) && g.ldb >= std::max(1, g.b_rows()) &&
         g.ldc >= std::max(1, g.m);
}

// The bytes from an operand's first element to its last: (cols - 1) * ld + rows elements per
// matrix, the last matrix `stride` elements after the first.
size_t extent(int rows, int cols, int ld, long long stride, int batch, size_t elem) {
  const long long one = static_cast<long long>(cols - 1) * ld + rows;
  return static_cast<size_t>(static_cast<long long>(batch - 1) * stride + one) * elem;
}

void check_operand(const char* name, const void* p, int rows, int cols, int ld, long long stride,
                   int batch, size_t elem) {
  if (rows == 0 || cols == 0) return;
  const size_t bytes = extent(rows, cols, ld, stride, batch, elem);
  if (!nanomx::hostgpu::is_device_range(p, bytes)) {
    std::fprintf(stderr,
                 "hostgpu cuBLAS: gemm operand %s (%d x %d, ld %d, stride %lld, batch %d) reaches "
                 "%zu bytes from %p, outside any device allocation: a GPU would fault here\n",
                 name, rows, cols, ld, stride, batch, bytes, p);
    std::abort();
  }
}

CBLAS_TRANSPOSE trans(cublasOperation_t t) { return t == CUBLAS_OP_N ? CblasNoTrans : CblasTrans; }

void gemm(const Gemm& g, const float* a, const float* b, float* c, int ldc) {
  cblas_sgemm(CblasColMajor, trans(g.ta), trans(g.tb), g.m, g.n, g.k, static_cast<float>(g.alpha),
              a, g.lda, b, g.ldb, static_cast<float>(g.beta), c, ldc);
}
void gemm(const Gemm& g, const double* a, const double* b, double* c, int ldc) {
  cblas_dgemm(CblasColMajor, trans(g.ta), trans(g.tb), g.m, g.n, g.k, g.alpha, a, g.lda, b, g.ldb,
              g.beta, c, ldc);
}

std::vector<float> widened(const __half* p, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = __half2float(p[i]);
  return v;
}

// T the storage type: float and double straight through OpenBLAS, __half widened to float (C
// too: beta may read it) and narrowed back.
template <typename T>
void run(const Gemm& g) {
  for (int p = 0; p < g.batch; ++p) {
    const T* a = static_cast<const T*>(g.a) + p * g.stride_a;
    const T* b = static_cast<const T*>(g.b) + p * g.stride_b;
    T* c = static_cast<T*>(g.c) + p * g.stride_c;
    if constexpr (std::is_same_v<T, __half>) {
      const size_t na = extent(g.a_rows(), g.a_cols(), g.lda, 0, 1, 1);
      const size_t nb = extent(g.b_rows(), g.b_cols(), g.ldb, 0, 1, 1);
      const size_t nc = extent(g.m, g.n, g.ldc, 0, 1, 1);
      const std::vector<float> wa = widened(a, g.k > 0 ? na : 0), wb = widened(b, g.k > 0 ? nb : 0);
      std::vector<float> wc = g.beta == 0 ? std::vector<float>(nc) : widened(c, nc);
      gemm(g, wa.data(), wb.data(), wc.data(), g.ldc);
      for (int j = 0; j < g.n; ++j) {
        for (int i = 0; i < g.m; ++i) {
          const size_t at = i + static_cast<size_t>(j) * g.ldc;
          c[at] = __float2half(wc[at]);
        }
      }
    } else {
      gemm(g, a, b, c, g.ldc);
    }
  }
}

template <typename T>
cublasStatus_t submit(cublasHandle_t handle, const Gemm& g) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!valid(g)) return CUBLAS_STATUS_INVALID_VALUE;
  if (g.m == 0 || g.n == 0 || g.batch == 0) return CUBLAS_STATUS_SUCCESS;
  check_operand("A", g.a, g.a_rows(), g.a_cols(), g.lda, g.stride_a, g.batch, sizeof(T));
  check_operand("B", g.b, g.b_rows(), g.b_cols(), g.ldb, g.stride_b, g.batch, sizeof(T));
  check_operand("C", g.c, g.m, g.n, g.ldc, g.stride_c, g.batch, sizeof(T));
  const cudaError_t status = nanomx::hostgpu::enqueue(handle->stream, [g] { run<T>(g); });
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
  return submit<float>(handle,
                       {ta, tb, m, n, k, *alpha, *beta, a, lda, 0, b, ldb, 0, c, ldc, 0, 1});
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float* alpha, const float* a, int lda,
                                         long long stride_a, const float* b, int ldb,
                                         long long stride_b, const float* beta, float* c, int ldc,
                                         long long stride_c, int batch) {
  return submit<float>(handle, {ta, tb, m, n, k, *alpha, *beta, a, lda, stride_a, b, ldb, stride_b,
                                c, ldc, stride_c, batch});
}

cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                              int m, int n, int k, const double* alpha, const double* a, int lda,
                              const double* b, int ldb, const double* beta, double* c, int ldc) {
  return submit<double>(handle,
                        {ta, tb, m, n, k, *alpha, *beta, a, lda, 0, b, ldb, 0, c, ldc, 0, 1});
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const double* alpha, const double* a, int lda,
                                         long long stride_a, const double* b, int ldb,
                                         long long stride_b, const double* beta, double* c, int ldc,
                                         long long stride_c, int batch) {
  return submit<double>(handle, {ta, tb, m, n, k, *alpha, *beta, a, lda, stride_a, b, ldb, stride_b,
                                 c, ldc, stride_c, batch});
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
  return submit<__half>(handle, {ta, tb, m, n, k, al, be, a, lda, stride_a, b, ldb, stride_b, c,
                                 ldc, stride_c, batch});
}

}  // extern "C"
