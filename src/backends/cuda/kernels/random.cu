// The CUDA kernel of _random_uniform and _random_normal (launch.h says what it computes); the
// other samplers are in index_kernels.cu.
#include "backends/cuda/kernels/device.cuh"

namespace nanomx::ops::cuda {
namespace {

template <typename T>
__global__ void random_kernel(bool uniform, T* out, int64_t n, uint64_t key, double a, double b) {
  NANOMX_CUDA_LOOP(j, (n + 1) / 2) {
    const int64_t i = 2 * j;
    const double u1 = uniform01(key, static_cast<uint64_t>(i));
    const double u2 = uniform01(key, static_cast<uint64_t>(i + 1));
    double v1, v2;
    if (uniform) {
      v1 = a + (b - a) * u1;
      v2 = a + (b - a) * u2;
    } else {
      const double r = sqrt(-2.0 * log(1.0 - u1));  // 1 - u1 in (0, 1]: finite
      v1 = a + b * r * cospi(2.0 * u2);
      v2 = a + b * r * sinpi(2.0 * u2);
    }
    out[i] = narrow<T>(static_cast<Acc<T>>(v1));
    if (i + 1 < n) out[i + 1] = narrow<T>(static_cast<Acc<T>>(v2));
  }
}

}  // namespace

cudaError_t random_fill(bool uniform, Tensor out, int64_t n, uint64_t key, double a, double b,
                        cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for((n + 1) / 2), stream, random_kernel<T>, uniform, as<T>(out), n, key, a,
                    b);
    });
  }
  return cudaGetLastError();
}

}  // namespace nanomx::ops::cuda
