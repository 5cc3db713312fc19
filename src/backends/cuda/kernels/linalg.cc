// The CUDA kernels of the matrix products through cuBLAS: dot, batch_dot, FullyConnected and
// their gradients.
#include <cstdint>

#include "backends/cuda/cublas_library.h"
#include "backends/cuda/kernels/gpu_kernel.h"
#include "nanomx/env.h"
#include "ops/nn.h"
#include "ops/op_params.h"

namespace nanomx::ops::cuda_kernels {
namespace {

// One cuBLAS handle per thread (a handle is not to be shared between threads launching at
// once), on the thread's device. TF32 is off unless NANOMX_CUBLAS_TF32=1, so that results match
// the CPU's float32 within tolerance.
cublasHandle_t blas_handle() {
  thread_local cublasHandle_t handle = nullptr;
  thread_local int device = -1;
  int current = 0;
  NANOMX_CUDA_CALL(cudaGetDevice(&current));
  if (handle == nullptr || device != current) {
    // A handle of another device is dropped (threads stay on one device in practice).
    NANOMX_CHECK(cu::cublas().create(&handle) == CUBLAS_STATUS_SUCCESS)
        << "cuBLAS: cannot create a handle on gpu(" << current << ")";
    static const bool tf32 = env::get_int("CUBLAS_TF32", 0) != 0;
    NANOMX_CHECK(cu::cublas().set_math_mode(
                     handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH) ==
                 CUBLAS_STATUS_SUCCESS)
        << "cuBLAS: cannot set the math mode";
    device = current;
  }
  return handle;
}

// Row-major C (m x n) = op(A) op(B) for `batch` products whose operands lie one after the
// other (A: m*k apart, B: k*n, C: m*n): column-major C^T = op(B)^T op(A)^T. float32 through
// cublasSgemm (one product) or its strided-batched form, float64 through the Dgemm pair, float16
// through cublasGemmStridedBatchedEx computing in float32.
void gemm_batched(const ParsedParams& p, cu::ConstTensor a, cu::ConstTensor b, cu::Tensor c,
                  const DotDims& d, int64_t batch, cudaStream_t s) {
  if (batch == 0 || d.m == 0 || d.n == 0) return;
  if (d.k == 0) {  // an empty sum: zeros
    NANOMX_CUDA_CALL(cudaMemsetAsync(
        c.data, 0, static_cast<size_t>(batch * d.m * d.n) * cu::elem_size(c.elem), s));
    return;
  }
  NANOMX_CHECK(d.m <= INT32_MAX && d.n <= INT32_MAX && d.k <= INT32_MAX && batch <= INT32_MAX)
      << p.op() << ": " << batch << " x " << d.m << " x " << d.k << " x " << d.n
      << " exceeds cuBLAS' int range";
  cublasHandle_t h = blas_handle();
  const cu::CublasLibrary& blas = cu::cublas();
  NANOMX_CHECK(blas.set_stream(h, s) == CUBLAS_STATUS_SUCCESS) << "cuBLAS: cannot set the stream";
  const int lda = static_cast<int>(d.ta ? d.m : d.k), ldb = static_cast<int>(d.tb ? d.k : d.n);
  const cublasOperation_t op_b = d.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = d.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int n = static_cast<int>(d.n), m = static_cast<int>(d.m), k = static_cast<int>(d.k);
  const long long sa = d.m * d.k, sb = d.k * d.n, sc = d.m * d.n;
  const int count = static_cast<int>(batch);
  cublasStatus_t status = CUBLAS_STATUS_NOT_SUPPORTED;
  switch (c.elem) {
    case cu::Elem::kFloat32: {
      const float alpha = 1.f, beta = 0.f;
      const auto* A = static_cast<const float*>(a.data);
      const auto* B = static_cast<const float*>(b.data);
      auto* C = static_cast<float*>(c.data);
      status = batch == 1 ? blas.sgemm(h, op_b, op_a, n, m, k, &alpha, B, ldb, A, lda, &beta, C, n)
                          : blas.sgemm_strided_batched(h, op_b, op_a, n, m, k, &alpha, B, ldb, sb,
                                                       A, lda, sa, &beta, C, n, sc, count);
      break;
    }
    case cu::Elem::kFloat64: {
      const double alpha = 1.0, beta = 0.0;
      const auto* A = static_cast<const double*>(a.data);
      const auto* B = static_cast<const double*>(b.data);
      auto* C = static_cast<double*>(c.data);
      status = batch == 1 ? blas.dgemm(h, op_b, op_a, n, m, k, &alpha, B, ldb, A, lda, &beta, C, n)
                          : blas.dgemm_strided_batched(h, op_b, op_a, n, m, k, &alpha, B, ldb, sb,
                                                       A, lda, sa, &beta, C, n, sc, count);
      break;
    }
    case cu::Elem::kFloat16: {
      const float alpha = 1.f, beta = 0.f;
      status = blas.gemm_strided_batched_ex(
          h, op_b, op_a, n, m, k, &alpha, b.data, CUDA_R_16F, ldb, sb, a.data, CUDA_R_16F, lda, sa,
          &beta, c.data, CUDA_R_16F, n, sc, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      break;
    }
    default:  // the integer types: gpu_kernel refuses them before (kSameFloat)
      break;
  }
  NANOMX_CHECK(status == CUBLAS_STATUS_SUCCESS)
      << p.op() << ": the cuBLAS matrix product failed (status " << static_cast<int>(status) << ")";
}

void gemm(const ParsedParams& p, cu::ConstTensor a, cu::ConstTensor b, cu::Tensor c,
          const DotDims& d, cudaStream_t s) {
  gemm_batched(p, a, b, c, d, 1, s);
}

void dot(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
         cudaStream_t s) {
  const DotDims d = dot_dims(p.get<DotParams>(), in[0].shape(), in[1].shape(), nullptr);
  gemm(p, f(in[0]), f(in[1]), fw(out[0]), d, s);
}

void batch_dot(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
               cudaStream_t s) {
  int64_t batch = 0;
  const DotDims d =
      batch_dot_dims(p.get<DotParams>(), in[0].shape(), in[1].shape(), nullptr, &batch);
  gemm_batched(p, f(in[0]), f(in[1]), fw(out[0]), d, batch, s);
}

// dA and dB of C = op(A) op(B), `batch` products at once: MXNet's four cases (as the CPU's
// dot_grads in backends/cpu/kernels/backward.cc).
void dot_grads(const ParsedParams& p, cu::ConstTensor dc, cu::ConstTensor a, cu::ConstTensor b,
               cu::Tensor da, cu::Tensor db, const DotDims& d, int64_t batch, cudaStream_t s) {
  const int64_t m = d.m, k = d.k, n = d.n;
  // The products' operands are m*k (A), k*n (B) and m*n (C) apart whatever the transposes, so
  // each gradient product below keeps its operands' strides by its own dims.
  if (!d.ta && !d.tb) {
    gemm_batched(p, dc, b, da, DotDims{m, n, k, false, true}, batch, s);  // dA = dC B^T
    gemm_batched(p, a, dc, db, DotDims{k, m, n, true, false}, batch, s);  // dB = A^T dC
  } else if (d.ta && !d.tb) {
    gemm_batched(p, b, dc, da, DotDims{k, n, m, false, true}, batch, s);   // dA = B dC^T
    gemm_batched(p, a, dc, db, DotDims{k, m, n, false, false}, batch, s);  // dB = A dC
  } else if (!d.ta && d.tb) {
    gemm_batched(p, dc, b, da, DotDims{m, n, k, false, false}, batch, s);  // dA = dC B
    gemm_batched(p, dc, a, db, DotDims{n, m, k, true, false}, batch, s);   // dB = dC^T A
  } else {
    gemm_batched(p, b, dc, da, DotDims{k, n, m, true, true}, batch, s);  // dA = B^T dC^T
    gemm_batched(p, dc, a, db, DotDims{n, m, k, true, true}, batch, s);  // dB = dC^T A^T
  }
}

void dot_backward(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                  cudaStream_t s) {
  const DotDims d = dot_dims(p.get<DotParams>(), in[1].shape(), in[2].shape(), nullptr);
  dot_grads(p, f(in[0]), f(in[1]), f(in[2]), fw(out[0]), fw(out[1]), d, 1, s);
}

void batch_dot_backward(const ParsedParams& p, std::span<const NDArray> in,
                        std::span<const NDArray> out, cudaStream_t s) {
  int64_t batch = 0;
  const DotDims d =
      batch_dot_dims(p.get<DotParams>(), in[1].shape(), in[2].shape(), nullptr, &batch);
  dot_grads(p, f(in[0]), f(in[1]), f(in[2]), fw(out[0]), fw(out[1]), d, batch, s);
}

void fully_connected(const ParsedParams& p, std::span<const NDArray> in,
                     std::span<const NDArray> out, cudaStream_t s) {
  const auto& fc = p.get<FullyConnectedParams>();
  const int64_t n = fc.num_hidden;
  const int64_t k = in[1].shape()[1];
  const int64_t m = k == 0 ? 0 : in[0].size() / k;
  gemm(p, f(in[0]), f(in[1]), fw(out[0]), DotDims{m, k, n, false, true}, s);
  if (!fc.no_bias) check_launch(p, cu::add_bias(fw(out[0]), f(in[2]), m, n, s));
}

// dW = dY^T X, db = column sums of dY, dX = dY W (last: dX may share X's buffer).
void fully_connected_backward(const ParsedParams& p, std::span<const NDArray> in,
                              std::span<const NDArray> out, cudaStream_t s) {
  const auto& fc = p.get<FullyConnectedParams>();
  const NDArray &dy = in[0], &x = in[1], &w = in[2];
  const int64_t n = fc.num_hidden, k = w.shape()[1];
  const int64_t m = n == 0 ? 0 : dy.size() / n;
  gemm(p, f(dy), f(x), fw(out[1]), DotDims{n, m, k, true, false}, s);
  if (!fc.no_bias)
    check_launch(p, cu::reduce(cu::Reducer::kSum, f(dy), fw(out[2]), 1, m, n, 1.0, false, 0, s));
  gemm(p, f(dy), f(w), fw(out[0]), DotDims{m, n, k, false, false}, s);
}

}  // namespace

void add_linalg_kernels(const AddKernel& add) {
  add("dot", gpu_kernel<dot>);
  add("_backward_dot", gpu_kernel<dot_backward>);
  add("batch_dot", gpu_kernel<batch_dot>);
  add("_backward_batch_dot", gpu_kernel<batch_dot_backward>);
  add("FullyConnected", gpu_kernel<fully_connected>);
  add("_backward_FullyConnected", gpu_kernel<fully_connected_backward>);
}

}  // namespace nanomx::ops::cuda_kernels
