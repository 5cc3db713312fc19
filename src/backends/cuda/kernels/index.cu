// The CUDA kernels of take, pick, one_hot and where (launch.h says what each computes; the
// sorting and gather/scatter by index tuples are in index_kernels.cu).
#include "backends/cuda/kernels/device.cuh"

namespace nanomx::ops::cuda {
namespace {

template <typename E>
__global__ void take_kernel(const E* x, Indices idx, E* out, int64_t outer, int64_t n,
                            int64_t inner, int64_t m, int mode, int64_t* bad) {
  NANOMX_CUDA_LOOP(e, outer * m * inner) {
    const int64_t i = e % inner, j = (e / inner) % m, o = e / (inner * m);
    int64_t k = index_at(idx, j);
    if (mode == 0) {
      k = k < 0 ? 0 : (k >= n ? n - 1 : k);
    } else if (mode == 1) {
      k = ((k % n) + n) % n;
    } else {
      if (k < -n || k >= n) {
        atomic_min_i64(bad, j);
        continue;
      }
      if (k < 0) k += n;
    }
    out[e] = x[(o * n + k) * inner + i];
  }
}

template <typename E>
__global__ void pick_kernel(const E* x, Indices idx, E* out, int64_t outer, int64_t len,
                            int64_t inner, bool wrap) {
  NANOMX_CUDA_LOOP(e, outer * inner) {
    const int64_t o = e / inner, i = e % inner;
    int64_t k = index_at(idx, e);
    k = wrap ? ((k % len) + len) % len : (k < 0 ? 0 : (k >= len ? len - 1 : k));
    out[e] = x[(o * len + k) * inner + i];
  }
}

template <typename T>
__global__ void one_hot_kernel(Indices idx, T* out, int64_t n, int64_t depth, Acc<T> on,
                               Acc<T> off) {
  NANOMX_CUDA_LOOP(e, n * depth) {
    out[e] = narrow<T>(index_at(idx, e / depth) == e % depth ? on : off);
  }
}

template <typename E>
__global__ void where_kernel(Indices cond, const E* x, const E* y, E* out, int64_t n, int64_t row) {
  NANOMX_CUDA_LOOP(i, n) { out[i] = index_as_double(cond, i / row) != 0 ? x[i] : y[i]; }
}

}  // namespace

cudaError_t take(const void* x, Indices idx, void* out, size_t elem_bytes, int64_t outer, int64_t n,
                 int64_t inner, int64_t m, int mode, int64_t* bad, cudaStream_t stream) {
  const int64_t total = outer * m * inner;
  if (total > 0) {
    by_size(elem_bytes, [&](auto tag) {
      using E = decltype(tag);
      launch_kernel(grid_for(total), stream, take_kernel<E>, static_cast<const E*>(x), idx,
                    static_cast<E*>(out), outer, n, inner, m, mode, bad);
    });
  }
  return cudaGetLastError();
}

cudaError_t pick(const void* x, Indices idx, void* out, size_t elem_bytes, int64_t outer,
                 int64_t len, int64_t inner, bool wrap, cudaStream_t stream) {
  if (outer * inner > 0) {
    by_size(elem_bytes, [&](auto tag) {
      using E = decltype(tag);
      launch_kernel(grid_for(outer * inner), stream, pick_kernel<E>, static_cast<const E*>(x), idx,
                    static_cast<E*>(out), outer, len, inner, wrap);
    });
  }
  return cudaGetLastError();
}

cudaError_t one_hot(Indices idx, Tensor out, int64_t n, int64_t depth, double on, double off,
                    cudaStream_t stream) {
  if (n * depth > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n * depth), stream, one_hot_kernel<T>, idx, as<T>(out), n, depth,
                    rounded<T>(on), rounded<T>(off));
    });
  }
  return cudaGetLastError();
}

cudaError_t where(Indices cond, const void* x, const void* y, void* out, size_t elem_bytes,
                  int64_t n, int64_t row, cudaStream_t stream) {
  if (n > 0) {
    by_size(elem_bytes, [&](auto tag) {
      using E = decltype(tag);
      launch_kernel(grid_for(n), stream, where_kernel<E>, cond, static_cast<const E*>(x),
                    static_cast<const E*>(y), static_cast<E*>(out), n, row);
    });
  }
  return cudaGetLastError();
}

}  // namespace nanomx::ops::cuda
