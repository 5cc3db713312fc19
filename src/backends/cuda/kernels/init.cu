// The CUDA kernels of the creation operators (launch.h says what each computes): _arange,
// _linspace, _eye (fill: elemwise.cu).
#include "backends/cuda/kernels/device.cuh"

namespace nanomx::ops::cuda {
namespace {

template <typename T>
__global__ void arange_kernel(T* out, int64_t n, Acc<T> start, Acc<T> step, int64_t repeat) {
  NANOMX_CUDA_LOOP(i, n) { out[i] = narrow<T>(start + static_cast<Acc<T>>(i / repeat) * step); }
}

template <typename T>
__global__ void linspace_kernel(T* out, int64_t n, double start, double step) {
  NANOMX_CUDA_LOOP(i, n) { out[i] = from_double<T>(start + step * static_cast<double>(i)); }
}

template <typename T>
__global__ void eye_kernel(T* out, int64_t rows, int64_t cols, int64_t k) {
  NANOMX_CUDA_LOOP(e, rows * cols) {
    out[e] = narrow<T>(e % cols - e / cols == k ? Acc<T>(1) : Acc<T>(0));
  }
}

}  // namespace

cudaError_t arange(Tensor out, int64_t n, double start, double step, int64_t repeat,
                   cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, arange_kernel<T>, as<T>(out), n, rounded<T>(start),
                    rounded<T>(step), repeat);
    });
  }
  return cudaGetLastError();
}

cudaError_t linspace(Tensor out, int64_t n, double start, double step, cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, linspace_kernel<T>, as<T>(out), n, start, step);
    });
  }
  return cudaGetLastError();
}

cudaError_t eye(Tensor out, int64_t rows, int64_t cols, int64_t k, cudaStream_t stream) {
  if (rows * cols > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(rows * cols), stream, eye_kernel<T>, as<T>(out), rows, cols, k);
    });
  }
  return cudaGetLastError();
}

}  // namespace nanomx::ops::cuda
