// The CUDA kernels of the neural-network operators (launch.h says what each computes): softmax
// and its gradient (accumulating in double, as the CPU's), FullyConnected's bias, the
// activations' gradients, SoftmaxOutput's gradient.
#include "backends/cuda/kernels/device.cuh"

namespace nanomx::ops::cuda {
namespace {

// The sum of every thread's `value` in the block, returned to each thread; `partial` is the
// block's kThreads shared doubles, free again on return.
__device__ __forceinline__ double block_sum(double* partial, double value) {
  partial[threadIdx.x] = value;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const double sum = partial[0];
  __syncthreads();
  return sum;
}

// One block per (outer, inner) row: max, then the sum of exponentials, then the outputs.
template <typename T>
__global__ void softmax_kernel(const T* x, T* out, int64_t outer, int64_t len, int64_t inner,
                               double temperature, bool log) {
  __shared__ double partial[kThreads];
  for (int64_t e = blockIdx.x; e < outer * inner; e += gridDim.x) {
    const int64_t o = e / inner, in = e % inner;
    const T* xr = x + o * len * inner + in;
    T* yr = out + o * len * inner + in;
    double mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      mx = fmax(mx, static_cast<double>(widen(xr[j * inner])) / temperature);
    }
    partial[threadIdx.x] = mx;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s)
        partial[threadIdx.x] = fmax(partial[threadIdx.x], partial[threadIdx.x + s]);
      __syncthreads();
    }
    mx = partial[0];
    __syncthreads();
    double sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      sum += exp(static_cast<double>(widen(xr[j * inner])) / temperature - mx);
    }
    sum = block_sum(partial, sum);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const double z = static_cast<double>(widen(xr[j * inner])) / temperature - mx;
      yr[j * inner] = narrow<T>(static_cast<Acc<T>>(log ? z - ::log(sum) : exp(z) / sum));
    }
  }
}

// One block per (outer, inner) row: the row's sum of dy (log) or dy * y, then the gradient.
template <typename T>
__global__ void softmax_grad_kernel(int kind, const T* dy, const T* y, T* dx, int64_t outer,
                                    int64_t len, int64_t inner, double temperature) {
  __shared__ double partial[kThreads];
  for (int64_t e = blockIdx.x; e < outer * inner; e += gridDim.x) {
    const int64_t base = (e / inner) * len * inner + e % inner;
    double sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const int64_t i = base + j * inner;
      sum += kind == 1 ? double(widen(dy[i])) : double(widen(dy[i])) * double(widen(y[i]));
    }
    sum = block_sum(partial, sum);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const int64_t i = base + j * inner;
      const double g = widen(dy[i]), yi = widen(y[i]);
      const double v = kind == 1   ? (g - exp(yi) * sum) / temperature
                       : kind == 2 ? -yi * (g - sum) / temperature
                                   : yi * (g - sum) / temperature;
      dx[i] = narrow<T>(static_cast<Acc<T>>(v));
    }
  }
}

template <typename T>
__global__ void add_bias_kernel(T* out, const T* bias, int64_t m, int64_t n) {
  NANOMX_CUDA_LOOP(i, m * n) { out[i] = narrow<T>(widen(out[i]) + widen(bias[i % n])); }
}

template <typename T>
__global__ void activation_grad_kernel(ActGrad act, const T* dy, const T* v, T* dx, int64_t n) {
  using A = Acc<T>;
  NANOMX_CUDA_LOOP(i, n) {
    const A y = widen(v[i]);
    A d = 0;
    switch (act) {
      case ActGrad::kRelu:
        d = y != y ? y : (y > A(0) ? A(1) : A(0));
        break;
      case ActGrad::kSigmoid:
        d = y * (A(1) - y);
        break;
      case ActGrad::kTanh:
        d = A(1) - y * y;
        break;
      case ActGrad::kSoftRelu:
        d = -m_expm1(-y);
        break;
      case ActGrad::kSoftSign: {
        const A a = A(1) + m_fabs(y);
        d = A(1) / (a * a);
        break;
      }
    }
    dx[i] = narrow<T>(widen(dy[i]) * d);
  }
}

// Valid normalization needs the count of non-ignored labels: each block counts them itself
// (rows is a batch, small next to the gradient), so one launch does it all with no scratch.
template <typename T>
__global__ void softmax_output_grad_kernel(const T* y, const T* label, T* grad,
                                           SoftmaxOutputGrad g) {
  using A = Acc<T>;
  __shared__ A scale;
  if (g.divide_by_valid) {
    __shared__ int64_t counts[kThreads];
    int64_t count = 0;
    for (int64_t r = threadIdx.x; r < g.rows; r += blockDim.x) {
      count += static_cast<int>(widen(label[r])) != static_cast<int>(g.ignore_label);
    }
    counts[threadIdx.x] = count;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) counts[threadIdx.x] += counts[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) scale = A(g.grad_scale) / A(counts[0] > 0 ? counts[0] : 1);
  } else if (threadIdx.x == 0) {
    scale = A(g.grad_scale) / A(g.batch);
    if (g.divide_by_inner) scale /= A(g.inner);
  }
  __syncthreads();
  const A alpha = A(g.smooth_alpha);
  const A off = alpha > A(0) && g.classes > 1 ? alpha / A(g.classes - 1) : A(0);
  NANOMX_CUDA_LOOP(e, g.rows * g.classes) {
    const int64_t r = e / g.classes, j = e % g.classes;
    const int64_t i = (r / g.inner) * g.classes * g.inner + r % g.inner + j * g.inner;
    const int lab = static_cast<int>(widen(label[r]));
    A v = 0;
    if (!(g.use_ignore && lab == static_cast<int>(g.ignore_label))) {
      const A yi = widen(y[i]);
      v = (yi - (j == lab ? A(1) - alpha : off)) * scale;
      if (g.out_grad) v *= yi;  // MXNet's quirk (see the CPU kernel)
    }
    grad[i] = narrow<T>(v);
  }
}

template <typename T>
__global__ void softmax_output_grad_dense_kernel(const T* y, const T* label, T* grad, int64_t n,
                                                 Acc<T> scale) {
  NANOMX_CUDA_LOOP(i, n) { grad[i] = narrow<T>((widen(y[i]) - widen(label[i])) * scale); }
}

}  // namespace

cudaError_t softmax(ConstTensor x, Tensor out, int64_t outer, int64_t len, int64_t inner,
                    double temperature, bool log, cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows > 0 && len > 0) {
    const unsigned blocks = static_cast<unsigned>(rows < 65535 * 8 ? rows : 65535 * 8);
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_synced_kernel(blocks, stream, softmax_kernel<T>, as<T>(x), as<T>(out), outer, len,
                           inner, temperature, log);
    });
  }
  return cudaGetLastError();
}

cudaError_t softmax_grad(int kind, ConstTensor dy, ConstTensor y, Tensor dx, int64_t outer,
                         int64_t len, int64_t inner, double temperature, cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows > 0 && len > 0) {
    const unsigned blocks = static_cast<unsigned>(rows < 65535 * 8 ? rows : 65535 * 8);
    dispatch(dx.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_synced_kernel(blocks, stream, softmax_grad_kernel<T>, kind, as<T>(dy), as<T>(y),
                           as<T>(dx), outer, len, inner, temperature);
    });
  }
  return cudaGetLastError();
}

cudaError_t add_bias(Tensor out, ConstTensor bias, int64_t m, int64_t n, cudaStream_t stream) {
  if (m * n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(m * n), stream, add_bias_kernel<T>, as<T>(out), as<T>(bias), m, n);
    });
  }
  return cudaGetLastError();
}

cudaError_t activation_grad(ActGrad act, ConstTensor dy, ConstTensor v, Tensor dx, int64_t n,
                            cudaStream_t stream) {
  if (n > 0) {
    dispatch(dx.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, activation_grad_kernel<T>, act, as<T>(dy), as<T>(v),
                    as<T>(dx), n);
    });
  }
  return cudaGetLastError();
}

cudaError_t softmax_output_grad(ConstTensor y, ConstTensor label, Tensor grad,
                                const SoftmaxOutputGrad& g, cudaStream_t stream) {
  const int64_t n = g.rows * g.classes;
  if (n > 0) {
    dispatch(grad.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_synced_kernel(grid_for(n), stream, softmax_output_grad_kernel<T>, as<T>(y),
                           as<T>(label), as<T>(grad), g);
    });
  }
  return cudaGetLastError();
}

cudaError_t softmax_output_grad_dense(ConstTensor y, ConstTensor label, Tensor grad, int64_t n,
                                      double scale, cudaStream_t stream) {
  if (n > 0) {
    dispatch(grad.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, softmax_output_grad_dense_kernel<T>, as<T>(y),
                    as<T>(label), as<T>(grad), n, static_cast<Acc<T>>(scale));
    });
  }
  return cudaGetLastError();
}

}  // namespace nanomx::ops::cuda
