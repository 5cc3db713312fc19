// The CUDA kernels of the layout operators (launch.h says what each computes): a strided copy
// (every layout operator is one or a few) and a strided fill.
#include "backends/cuda/kernels/device.cuh"

namespace nanomx::ops::cuda {
namespace {

template <typename T>
__global__ void fill_strided_kernel(T* dst, Acc<T> value, int64_t n, Strided s) {
  const T v = narrow<T>(value);
  NANOMX_CUDA_LOOP(i, n) {
    int64_t rest = i, to = s.dst_base;
    for (int d = s.ndim - 1; d >= 0; --d) {
      to += (rest % s.shape[d]) * s.dst_strides[d];
      rest /= s.shape[d];
    }
    dst[to] = v;
  }
}

template <typename E>
__global__ void copy_strided_kernel(const E* src, E* dst, int64_t n, Strided s) {
  NANOMX_CUDA_LOOP(i, n) {
    int64_t rest = i, from = s.src_base, to = s.dst_base;
    for (int d = s.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % s.shape[d];
      rest /= s.shape[d];
      from += c * s.src_strides[d];
      to += c * s.dst_strides[d];
    }
    dst[to] = src[from];
  }
}

}  // namespace

cudaError_t copy_strided(const void* src, void* dst, size_t elem_bytes, int64_t n, const Strided& s,
                         cudaStream_t stream) {
  if (n > 0) {
    by_size(elem_bytes, [&](auto tag) {
      using E = decltype(tag);
      launch_kernel(grid_for(n), stream, copy_strided_kernel<E>, static_cast<const E*>(src),
                    static_cast<E*>(dst), n, s);
    });
  }
  return cudaGetLastError();
}

cudaError_t fill_strided(Tensor dst, double value, int64_t n, const Strided& s,
                         cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(dst.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, fill_strided_kernel<T>, as<T>(dst), rounded<T>(value), n,
                    s);
    });
  }
  return cudaGetLastError();
}

}  // namespace nanomx::ops::cuda
