// The CUDA kernels (float32), one file so that the build runs nvcc once (docs/cuda.md).
// Never run on a GPU yet: see docs/cuda.md.
#include "ops/cuda/launch.h"

namespace nanomx::ops::cuda {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

// Grid-stride loops: any n with a bounded grid.
#define NANOMX_CUDA_LOOP(i, n)                                                           \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

__device__ __forceinline__ float apply_binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
  }
  return 0.f;
}

__global__ void binary_kernel(BinaryOp op, const float* a, const float* b, float* out, int64_t n) {
  NANOMX_CUDA_LOOP(i, n) { out[i] = apply_binary(op, a[i], b[i]); }
}

__global__ void binary_broadcast_kernel(BinaryOp op, const float* a, const float* b, float* out,
                                        int64_t n, Broadcast bc) {
  NANOMX_CUDA_LOOP(i, n) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = bc.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % bc.shape[d];
      rest /= bc.shape[d];
      ia += c * bc.a_strides[d];
      ib += c * bc.b_strides[d];
    }
    out[i] = apply_binary(op, a[ia], b[ib]);
  }
}

__global__ void scalar_kernel(ScalarOp op, const float* x, float s, float* out, int64_t n) {
  NANOMX_CUDA_LOOP(i, n) {
    const float v = x[i];
    float r = 0.f;
    switch (op) {
      case ScalarOp::kAdd:
        r = v + s;
        break;
      case ScalarOp::kSub:
        r = v - s;
        break;
      case ScalarOp::kRSub:
        r = s - v;
        break;
      case ScalarOp::kMul:
        r = v * s;
        break;
      case ScalarOp::kDiv:
        r = v / s;
        break;
      case ScalarOp::kRDiv:
        r = s / v;
        break;
    }
    out[i] = r;
  }
}

__global__ void unary_kernel(UnaryOp op, const float* x, float* out, int64_t n) {
  NANOMX_CUDA_LOOP(i, n) {
    const float v = x[i];
    float r = 0.f;
    switch (op) {
      case UnaryOp::kNegative:
        r = -v;
        break;
      case UnaryOp::kSquare:
        r = v * v;
        break;
      case UnaryOp::kSqrt:
        r = sqrtf(v);
        break;
      case UnaryOp::kExp:
        r = expf(v);
        break;
      case UnaryOp::kLog:
        r = logf(v);
        break;
      case UnaryOp::kRelu:  // NaN stays NaN, as the CPU kernel
        r = v > 0.f ? v : (v != v ? v : 0.f);
        break;
      case UnaryOp::kSigmoid:
        r = 1.f / (1.f + expf(-v));
        break;
      case UnaryOp::kTanh:
        r = tanhf(v);
        break;
      case UnaryOp::kSoftRelu:
        r = v > 20.f ? v : log1pf(expf(v));
        break;
      case UnaryOp::kSoftSign:
        r = v / (1.f + fabsf(v));
        break;
    }
    out[i] = r;
  }
}

__global__ void fill_kernel(float* out, float value, int64_t n) {
  NANOMX_CUDA_LOOP(i, n) { out[i] = value; }
}

// One block per output element; the block's threads sum strided, in double (as the CPU's
// double accumulation), then a shared-memory tree.
__global__ void reduce_sum_kernel(const float* x, float* out, int64_t outer, int64_t len,
                                  int64_t inner, float scale) {
  __shared__ double partial[kThreads];
  for (int64_t e = blockIdx.x; e < outer * inner; e += gridDim.x) {
    const int64_t o = e / inner, in = e % inner;
    const float* base = x + o * len * inner + in;
    double acc = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) acc += base[j * inner];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[e] = static_cast<float>(partial[0] * scale);
    __syncthreads();
  }
}

// One block per (outer, inner) row: max, then the sum of exponentials, then the outputs.
__global__ void softmax_kernel(const float* x, float* out, int64_t outer, int64_t len,
                               int64_t inner, float temperature, bool log) {
  __shared__ double partial[kThreads];
  for (int64_t e = blockIdx.x; e < outer * inner; e += gridDim.x) {
    const int64_t o = e / inner, in = e % inner;
    const float* xr = x + o * len * inner + in;
    float* yr = out + o * len * inner + in;
    double mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      mx = fmax(mx, static_cast<double>(xr[j * inner]) / temperature);
    }
    partial[threadIdx.x] = mx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s)
        partial[threadIdx.x] = fmax(partial[threadIdx.x], partial[threadIdx.x + s]);
      __syncthreads();
    }
    mx = partial[0];
    __syncthreads();
    double sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      sum += exp(static_cast<double>(xr[j * inner]) / temperature - mx);
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    sum = partial[0];
    __syncthreads();
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const double z = static_cast<double>(xr[j * inner]) / temperature - mx;
      yr[j * inner] = static_cast<float>(log ? z - ::log(sum) : exp(z) / sum);
    }
  }
}

__global__ void add_bias_kernel(float* out, const float* bias, int64_t m, int64_t n) {
  NANOMX_CUDA_LOOP(i, m * n) { out[i] += bias[i % n]; }
}

__global__ void activation_grad_kernel(ActGrad act, const float* dy, const float* v, float* dx,
                                       int64_t n) {
  NANOMX_CUDA_LOOP(i, n) {
    const float y = v[i];
    float d = 0.f;
    switch (act) {
      case ActGrad::kRelu:
        d = y != y ? y : (y > 0.f ? 1.f : 0.f);
        break;
      case ActGrad::kSigmoid:
        d = y * (1.f - y);
        break;
      case ActGrad::kTanh:
        d = 1.f - y * y;
        break;
      case ActGrad::kSoftRelu:
        d = -expm1f(-y);
        break;
      case ActGrad::kSoftSign: {
        const float a = 1.f + fabsf(y);
        d = 1.f / (a * a);
        break;
      }
    }
    dx[i] = dy[i] * d;
  }
}

__device__ __forceinline__ float clip_grad(float g, float c) {
  if (c < 0.f) return g;  // clip_gradient < 0: no clipping; NaN passes, as the CPU kernel
  return g > c ? c : (g < -c ? -c : g);
}

__global__ void sgd_kernel(const float* w, const float* g, float* mom, float* out, int64_t n,
                           float lr, float wd, float rescale, float clip, float momentum) {
  NANOMX_CUDA_LOOP(i, n) {
    const float wi = w[i];
    const float gi = clip_grad(rescale * g[i], clip);
    if (mom == nullptr) {
      out[i] = (1.f - lr * wd) * wi - lr * gi;
    } else {
      const float mi = momentum * mom[i] - lr * wd * wi - lr * gi;
      mom[i] = mi;
      out[i] = wi + mi;
    }
  }
}

// Valid normalization needs the count of non-ignored labels: each block counts them itself
// (rows is a batch, small next to the gradient), so one launch does it all with no scratch.
__global__ void softmax_output_grad_kernel(const float* y, const float* label, float* grad,
                                           SoftmaxOutputGrad g) {
  __shared__ float scale;
  if (g.divide_by_valid) {
    __shared__ int64_t counts[kThreads];
    int64_t count = 0;
    for (int64_t r = threadIdx.x; r < g.rows; r += blockDim.x) {
      count += static_cast<int>(label[r]) != static_cast<int>(g.ignore_label);
    }
    counts[threadIdx.x] = count;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) counts[threadIdx.x] += counts[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) scale = g.grad_scale / static_cast<float>(counts[0] > 0 ? counts[0] : 1);
  } else if (threadIdx.x == 0) {
    scale = g.grad_scale / g.batch;
    if (g.divide_by_inner) scale /= static_cast<float>(g.inner);
  }
  __syncthreads();
  const float off = g.smooth_alpha > 0 && g.classes > 1
                        ? g.smooth_alpha / static_cast<float>(g.classes - 1)
                        : 0.f;
  NANOMX_CUDA_LOOP(e, g.rows * g.classes) {
    const int64_t r = e / g.classes, j = e % g.classes;
    const int64_t i = (r / g.inner) * g.classes * g.inner + r % g.inner + j * g.inner;
    const int lab = static_cast<int>(label[r]);
    float v = 0.f;
    if (!(g.use_ignore && lab == static_cast<int>(g.ignore_label))) {
      const float yi = y[i];
      v = (yi - (j == lab ? 1.f - g.smooth_alpha : off)) * scale;
      if (g.out_grad) v *= yi;  // MXNet's quirk (see the CPU kernel)
    }
    grad[i] = v;
  }
}

__global__ void softmax_output_grad_dense_kernel(const float* y, const float* label, float* grad,
                                                 int64_t n, float scale) {
  NANOMX_CUDA_LOOP(i, n) { grad[i] = (y[i] - label[i]) * scale; }
}

}  // namespace

cudaError_t softmax_output_grad(const float* y, const float* label, float* grad,
                                const SoftmaxOutputGrad& g, cudaStream_t stream) {
  const int64_t n = g.rows * g.classes;
  if (n > 0) softmax_output_grad_kernel<<<grid_for(n), kThreads, 0, stream>>>(y, label, grad, g);
  return cudaGetLastError();
}

cudaError_t softmax_output_grad_dense(const float* y, const float* label, float* grad, int64_t n,
                                      float scale, cudaStream_t stream) {
  if (n > 0) {
    softmax_output_grad_dense_kernel<<<grid_for(n), kThreads, 0, stream>>>(y, label, grad, n,
                                                                           scale);
  }
  return cudaGetLastError();
}

cudaError_t binary(BinaryOp op, const float* a, const float* b, float* out, int64_t n,
                   cudaStream_t stream) {
  if (n > 0) binary_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, a, b, out, n);
  return cudaGetLastError();
}

cudaError_t binary_broadcast(BinaryOp op, const float* a, const float* b, float* out, int64_t n,
                             const Broadcast& bc, cudaStream_t stream) {
  if (n > 0) binary_broadcast_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, a, b, out, n, bc);
  return cudaGetLastError();
}

cudaError_t scalar(ScalarOp op, const float* x, float s, float* out, int64_t n,
                   cudaStream_t stream) {
  if (n > 0) scalar_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, x, s, out, n);
  return cudaGetLastError();
}

cudaError_t unary(UnaryOp op, const float* x, float* out, int64_t n, cudaStream_t stream) {
  if (n > 0) unary_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, x, out, n);
  return cudaGetLastError();
}

cudaError_t fill(float* out, float value, int64_t n, cudaStream_t stream) {
  if (n > 0) fill_kernel<<<grid_for(n), kThreads, 0, stream>>>(out, value, n);
  return cudaGetLastError();
}

cudaError_t reduce_sum(const float* x, float* out, int64_t outer, int64_t len, int64_t inner,
                       float scale, cudaStream_t stream) {
  const int64_t outputs = outer * inner;
  if (outputs > 0) {
    const unsigned blocks = static_cast<unsigned>(outputs < 65535 * 8 ? outputs : 65535 * 8);
    reduce_sum_kernel<<<blocks, kThreads, 0, stream>>>(x, out, outer, len, inner, scale);
  }
  return cudaGetLastError();
}

cudaError_t softmax(const float* x, float* out, int64_t outer, int64_t len, int64_t inner,
                    float temperature, bool log, cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows > 0 && len > 0) {
    const unsigned blocks = static_cast<unsigned>(rows < 65535 * 8 ? rows : 65535 * 8);
    softmax_kernel<<<blocks, kThreads, 0, stream>>>(x, out, outer, len, inner, temperature, log);
  }
  return cudaGetLastError();
}

cudaError_t add_bias(float* out, const float* bias, int64_t m, int64_t n, cudaStream_t stream) {
  if (m * n > 0) add_bias_kernel<<<grid_for(m * n), kThreads, 0, stream>>>(out, bias, m, n);
  return cudaGetLastError();
}

cudaError_t activation_grad(ActGrad act, const float* dy, const float* v, float* dx, int64_t n,
                            cudaStream_t stream) {
  if (n > 0) activation_grad_kernel<<<grid_for(n), kThreads, 0, stream>>>(act, dy, v, dx, n);
  return cudaGetLastError();
}

cudaError_t sgd(const float* w, const float* g, float* mom, float* out, int64_t n, float lr,
                float wd, float rescale, float clip, float momentum, cudaStream_t stream) {
  if (n > 0) {
    sgd_kernel<<<grid_for(n), kThreads, 0, stream>>>(w, g, mom, out, n, lr, wd, rescale, clip,
                                                     momentum);
  }
  return cudaGetLastError();
}

}  // namespace nanomx::ops::cuda
