// The CUDA kernels of the optimizer updates (launch.h says what each computes): sgd (with
// momentum; mixed precision) and adam.
#include "backends/cuda/kernels/device.cuh"

namespace nanomx::ops::cuda {
namespace {

template <typename A>
__device__ __forceinline__ A clip_grad(A g, A c) {
  if (c < A(0)) return g;  // clip_gradient < 0: no clipping; NaN passes, as the CPU kernel
  return g > c ? c : (g < -c ? -c : g);
}

template <typename T>
__global__ void sgd_kernel(const T* w, const T* g, T* mom, T* out, int64_t n, Acc<T> lr, Acc<T> wd,
                           Acc<T> rescale, Acc<T> clip, Acc<T> momentum) {
  using A = Acc<T>;
  NANOMX_CUDA_LOOP(i, n) {
    const A wi = widen(w[i]);
    const A gi = clip_grad(rescale * widen(g[i]), clip);
    if (mom == nullptr) {
      out[i] = narrow<T>((A(1) - lr * wd) * wi - lr * gi);
    } else {
      const A mi = momentum * widen(mom[i]) - lr * wd * wi - lr * gi;
      mom[i] = narrow<T>(mi);
      out[i] = narrow<T>(wi + mi);
    }
  }
}

template <typename T>
__global__ void adam_kernel(const T* w, const T* g, T* mean, T* var, T* out, int64_t n, Acc<T> lr,
                            Acc<T> wd, Acc<T> rescale, Acc<T> clip, Acc<T> b1, Acc<T> b2,
                            Acc<T> eps) {
  using A = Acc<T>;
  NANOMX_CUDA_LOOP(i, n) {
    const A wi = widen(w[i]);
    const A gi = clip_grad(rescale * widen(g[i]) + wd * wi, clip);
    const A mi = b1 * widen(mean[i]) + (A(1) - b1) * gi;
    const A vi = b2 * widen(var[i]) + (A(1) - b2) * gi * gi;
    mean[i] = narrow<T>(mi);
    var[i] = narrow<T>(vi);
    out[i] = narrow<T>(wi - lr * mi / (m_sqrt(vi) + eps));
  }
}

template <typename T>
__global__ void mp_sgd_kernel(const T* g, float* mom, float* w32, T* out, int64_t n, float lr,
                              float wd, float rescale, float clip, float momentum) {
  NANOMX_CUDA_LOOP(i, n) {
    const float wi = w32[i];
    const float step = lr * clip_grad(rescale * static_cast<float>(widen(g[i])), clip);
    float wn;
    if (mom == nullptr) {
      wn = (1.f - lr * wd) * wi - step;
    } else {
      const float mi = momentum * mom[i] - lr * wd * wi - step;
      mom[i] = mi;
      wn = wi + mi;
    }
    w32[i] = wn;
    out[i] = narrow<T>(static_cast<Acc<T>>(wn));
  }
}

}  // namespace

cudaError_t sgd(ConstTensor w, ConstTensor g, Tensor mom, Tensor out, int64_t n, double lr,
                double wd, double rescale, double clip, double momentum, cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      using A = Acc<T>;
      launch_kernel(grid_for(n), stream, sgd_kernel<T>, as<T>(w), as<T>(g), as<T>(mom), as<T>(out),
                    n, static_cast<A>(lr), static_cast<A>(wd), static_cast<A>(rescale),
                    static_cast<A>(clip), static_cast<A>(momentum));
    });
  }
  return cudaGetLastError();
}

cudaError_t adam(ConstTensor w, ConstTensor g, Tensor mean, Tensor var, Tensor out, int64_t n,
                 double lr, double wd, double rescale, double clip, double beta1, double beta2,
                 double epsilon, cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      using A = Acc<T>;
      launch_kernel(grid_for(n), stream, adam_kernel<T>, as<T>(w), as<T>(g), as<T>(mean),
                    as<T>(var), as<T>(out), n, A(lr), A(wd), A(rescale), A(clip), A(beta1),
                    A(beta2), A(epsilon));
    });
  }
  return cudaGetLastError();
}

cudaError_t mp_sgd(ConstTensor g, float* mom, float* w32, Tensor out, int64_t n, float lr, float wd,
                   float rescale, float clip, float momentum, cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, mp_sgd_kernel<T>, as<T>(g), mom, w32, as<T>(out), n, lr,
                    wd, rescale, clip, momentum);
    });
  }
  return cudaGetLastError();
}

}  // namespace nanomx::ops::cuda
