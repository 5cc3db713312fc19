// The CUDA kernels, one file so that the build runs nvcc once (docs/cuda.md). Each is a template
// over the element type (float, double, __half) computing in `Acc` (double for double, float
// otherwise: a half is widened to float for the arithmetic, as cuBLAS' and cuDNN's half paths
// do); the launchers pick the instantiation from the tensors' Elem. Reductions and softmax
// accumulate in double whatever the element type, as the CPU kernels.
// Never run on a GPU yet: see docs/cuda.md.
#include <cuda_fp16.h>

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

// ---- element types ----

template <typename T>
struct AccOf {
  using type = float;
};
template <>
struct AccOf<double> {
  using type = double;
};
template <typename T>
using Acc = typename AccOf<T>::type;

__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ double widen(double v) { return v; }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T narrow(Acc<T> v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half narrow<__half>(float v) {
  return __float2half(v);
}

// The math functions for float and double by overload (device code has both).
__device__ __forceinline__ float m_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double m_sqrt(double v) { return sqrt(v); }
__device__ __forceinline__ float m_exp(float v) { return expf(v); }
__device__ __forceinline__ double m_exp(double v) { return exp(v); }
__device__ __forceinline__ float m_log(float v) { return logf(v); }
__device__ __forceinline__ double m_log(double v) { return log(v); }
__device__ __forceinline__ float m_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double m_tanh(double v) { return tanh(v); }
__device__ __forceinline__ float m_log1p(float v) { return log1pf(v); }
__device__ __forceinline__ double m_log1p(double v) { return log1p(v); }
__device__ __forceinline__ float m_expm1(float v) { return expm1f(v); }
__device__ __forceinline__ double m_expm1(double v) { return expm1(v); }
__device__ __forceinline__ float m_fabs(float v) { return fabsf(v); }
__device__ __forceinline__ double m_fabs(double v) { return fabs(v); }

// Calls f(T{}) with T the C++ type of `e`.
template <typename F>
void dispatch(Elem e, F&& f) {
  switch (e) {
    case Elem::kFloat32:
      f(float{});
      break;
    case Elem::kFloat64:
      f(double{});
      break;
    case Elem::kFloat16:
      f(__half{});
      break;
  }
}

template <typename T>
const T* as(ConstTensor t) {
  return static_cast<const T*>(t.data);
}
template <typename T>
T* as(Tensor t) {
  return static_cast<T*>(t.data);
}

// ---- elementwise ----

template <typename A>
__device__ __forceinline__ A apply_binary(BinaryOp op, A a, A b) {
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
  return A(0);
}

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* out, int64_t n) {
  NANOMX_CUDA_LOOP(i, n) { out[i] = narrow<T>(apply_binary(op, widen(a[i]), widen(b[i]))); }
}

template <typename T>
__global__ void binary_broadcast_kernel(BinaryOp op, const T* a, const T* b, T* out, int64_t n,
                                        Broadcast bc) {
  NANOMX_CUDA_LOOP(i, n) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = bc.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % bc.shape[d];
      rest /= bc.shape[d];
      ia += c * bc.a_strides[d];
      ib += c * bc.b_strides[d];
    }
    out[i] = narrow<T>(apply_binary(op, widen(a[ia]), widen(b[ib])));
  }
}

template <typename T>
__global__ void scalar_kernel(ScalarOp op, const T* x, Acc<T> s, T* out, int64_t n) {
  NANOMX_CUDA_LOOP(i, n) {
    const Acc<T> v = widen(x[i]);
    Acc<T> r = 0;
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
    out[i] = narrow<T>(r);
  }
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* out, int64_t n) {
  using A = Acc<T>;
  NANOMX_CUDA_LOOP(i, n) {
    const A v = widen(x[i]);
    A r = 0;
    switch (op) {
      case UnaryOp::kNegative:
        r = -v;
        break;
      case UnaryOp::kSquare:
        r = v * v;
        break;
      case UnaryOp::kSqrt:
        r = m_sqrt(v);
        break;
      case UnaryOp::kExp:
        r = m_exp(v);
        break;
      case UnaryOp::kLog:
        r = m_log(v);
        break;
      case UnaryOp::kRelu:  // NaN stays NaN, as the CPU kernel
        r = v > A(0) ? v : (v != v ? v : A(0));
        break;
      case UnaryOp::kSigmoid:
        r = A(1) / (A(1) + m_exp(-v));
        break;
      case UnaryOp::kTanh:
        r = m_tanh(v);
        break;
      case UnaryOp::kSoftRelu:
        r = v > A(20) ? v : m_log1p(m_exp(v));
        break;
      case UnaryOp::kSoftSign:
        r = v / (A(1) + m_fabs(v));
        break;
    }
    out[i] = narrow<T>(r);
  }
}

template <typename T>
__global__ void fill_kernel(T* out, Acc<T> value, int64_t n) {
  const T v = narrow<T>(value);
  NANOMX_CUDA_LOOP(i, n) { out[i] = v; }
}

template <typename From, typename To>
__global__ void cast_kernel(const From* x, To* out, int64_t n) {
  // Widened exactly, then rounded to nearest (float16 through float: two roundings).
  NANOMX_CUDA_LOOP(i, n) {
    out[i] = narrow<To>(static_cast<Acc<To>>(static_cast<double>(widen(x[i]))));
  }
}

// One block per output element; the block's threads sum strided, in double (as the CPU's
// double accumulation), then a shared-memory tree.
template <typename T>
__global__ void reduce_sum_kernel(const T* x, T* out, int64_t outer, int64_t len, int64_t inner,
                                  double scale) {
  __shared__ double partial[kThreads];
  for (int64_t e = blockIdx.x; e < outer * inner; e += gridDim.x) {
    const int64_t o = e / inner, in = e % inner;
    const T* base = x + o * len * inner + in;
    double acc = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) acc += widen(base[j * inner]);
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[e] = narrow<T>(static_cast<Acc<T>>(partial[0] * scale));
    __syncthreads();
  }
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
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
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
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    sum = partial[0];
    __syncthreads();
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
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    sum = partial[0];
    __syncthreads();
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
__global__ void broadcast_scaled_kernel(const T* x, T* out, int64_t n, Broadcast bc, double scale) {
  NANOMX_CUDA_LOOP(i, n) {
    int64_t rest = i, ix = 0;
    for (int d = bc.ndim - 1; d >= 0; --d) {
      ix += (rest % bc.shape[d]) * bc.a_strides[d];
      rest /= bc.shape[d];
    }
    out[i] = narrow<T>(static_cast<Acc<T>>(double(widen(x[ix])) * scale));
  }
}

template <typename T>
__global__ void unary_grad_kernel(UnaryGradOp op, const T* dy, const T* v, T* dx, int64_t n,
                                  double s) {
  NANOMX_CUDA_LOOP(i, n) {
    const double x = widen(v[i]);
    double d = 0;
    switch (op) {
      case UnaryGradOp::kRelu:  // a NaN passes through, as MXNet's relu_grad
        d = x != x ? x : (x > 0 ? 1.0 : 0.0);
        break;
      case UnaryGradOp::kSigmoid:
        d = x * (1 - x);
        break;
      case UnaryGradOp::kTanh:
        d = 1 - x * x;
        break;
      case UnaryGradOp::kSqrt:
        d = 0.5 / x;
        break;
      case UnaryGradOp::kSquare:
        d = 2 * x;
        break;
      case UnaryGradOp::kLog:
        d = 1 / x;
        break;
      case UnaryGradOp::kRDivScalar:
        d = -s / (x * x);
        break;
    }
    dx[i] = narrow<T>(static_cast<Acc<T>>(double(widen(dy[i])) * d));
  }
}

__device__ __forceinline__ void binary_partials(BinaryGradOp op, double l, double r, double& dl,
                                                double& dr) {
  switch (op) {
    case BinaryGradOp::kAdd:
      dl = 1, dr = 1;
      break;
    case BinaryGradOp::kSub:
      dl = 1, dr = -1;
      break;
    case BinaryGradOp::kMul:
      dl = r, dr = l;
      break;
    case BinaryGradOp::kDiv:
      dl = 1 / r, dr = -l / (r * r);
      break;
    case BinaryGradOp::kPower:
      dl = r * pow(l, r - 1), dr = pow(l, r) * log(l);
      break;
    case BinaryGradOp::kMaximum:
      dl = l >= r ? 1 : 0, dr = l >= r ? 0 : 1;
      break;
    case BinaryGradOp::kMinimum:
      dl = l <= r ? 1 : 0, dr = l <= r ? 0 : 1;
      break;
    case BinaryGradOp::kHypot: {
      const double h = hypot(l, r);
      dl = l / h, dr = r / h;
      break;
    }
    case BinaryGradOp::kMod:
      dl = 1, dr = -floor(l / r);
      break;
  }
}

template <typename T>
__global__ void binary_grad_kernel(BinaryGradOp op, const T* dy, const T* l, const T* r, T* dl,
                                   T* dr, int64_t n, Broadcast bc) {
  NANOMX_CUDA_LOOP(i, n) {
    int64_t rest = i, il = 0, ir = 0;
    for (int d = bc.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % bc.shape[d];
      rest /= bc.shape[d];
      il += c * bc.a_strides[d];
      ir += c * bc.b_strides[d];
    }
    double pl = 0, pr = 0;
    binary_partials(op, l ? double(widen(l[il])) : 0.0, r ? double(widen(r[ir])) : 0.0, pl, pr);
    const double g = widen(dy[i]);
    // dl may share dy's buffer: dy[i] is read before either is written.
    dr[i] = narrow<T>(static_cast<Acc<T>>(g * pr));
    dl[i] = narrow<T>(static_cast<Acc<T>>(g * pl));
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
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
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

// SplitMix64 at position i of the stream starting at key: a double in [0, 1) from its top 53 bits.
__device__ __forceinline__ double uniform01(uint64_t key, uint64_t i) {
  uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

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
      random_kernel<T>
          <<<grid_for((n + 1) / 2), kThreads, 0, stream>>>(uniform, as<T>(out), n, key, a, b);
    });
  }
  return cudaGetLastError();
}

size_t elem_size(Elem e) { return e == Elem::kFloat64 ? 8 : e == Elem::kFloat32 ? 4 : 2; }

cudaError_t binary(BinaryOp op, ConstTensor a, ConstTensor b, Tensor out, int64_t n,
                   cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      binary_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(op, as<T>(a), as<T>(b), as<T>(out), n);
    });
  }
  return cudaGetLastError();
}

cudaError_t binary_broadcast(BinaryOp op, ConstTensor a, ConstTensor b, Tensor out, int64_t n,
                             const Broadcast& bc, cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      binary_broadcast_kernel<T>
          <<<grid_for(n), kThreads, 0, stream>>>(op, as<T>(a), as<T>(b), as<T>(out), n, bc);
    });
  }
  return cudaGetLastError();
}

cudaError_t scalar(ScalarOp op, ConstTensor x, double s, Tensor out, int64_t n,
                   cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      scalar_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(op, as<T>(x), static_cast<Acc<T>>(s),
                                                             as<T>(out), n);
    });
  }
  return cudaGetLastError();
}

cudaError_t unary(UnaryOp op, ConstTensor x, Tensor out, int64_t n, cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      unary_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(op, as<T>(x), as<T>(out), n);
    });
  }
  return cudaGetLastError();
}

cudaError_t fill(Tensor out, double value, int64_t n, cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      fill_kernel<T>
          <<<grid_for(n), kThreads, 0, stream>>>(as<T>(out), static_cast<Acc<T>>(value), n);
    });
  }
  return cudaGetLastError();
}

cudaError_t cast(ConstTensor x, Tensor out, int64_t n, cudaStream_t stream) {
  if (n > 0) {
    dispatch(x.elem, [&](auto from) {
      using From = decltype(from);
      dispatch(out.elem, [&](auto to) {
        using To = decltype(to);
        cast_kernel<From, To><<<grid_for(n), kThreads, 0, stream>>>(as<From>(x), as<To>(out), n);
      });
    });
  }
  return cudaGetLastError();
}

cudaError_t reduce_sum(ConstTensor x, Tensor out, int64_t outer, int64_t len, int64_t inner,
                       double scale, cudaStream_t stream) {
  const int64_t outputs = outer * inner;
  if (outputs > 0) {
    const unsigned blocks = static_cast<unsigned>(outputs < 65535 * 8 ? outputs : 65535 * 8);
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      reduce_sum_kernel<T>
          <<<blocks, kThreads, 0, stream>>>(as<T>(x), as<T>(out), outer, len, inner, scale);
    });
  }
  return cudaGetLastError();
}

cudaError_t softmax(ConstTensor x, Tensor out, int64_t outer, int64_t len, int64_t inner,
                    double temperature, bool log, cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows > 0 && len > 0) {
    const unsigned blocks = static_cast<unsigned>(rows < 65535 * 8 ? rows : 65535 * 8);
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      softmax_kernel<T><<<blocks, kThreads, 0, stream>>>(as<T>(x), as<T>(out), outer, len, inner,
                                                         temperature, log);
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
      softmax_grad_kernel<T><<<blocks, kThreads, 0, stream>>>(kind, as<T>(dy), as<T>(y), as<T>(dx),
                                                              outer, len, inner, temperature);
    });
  }
  return cudaGetLastError();
}

cudaError_t broadcast_scaled(ConstTensor x, Tensor out, int64_t n, const Broadcast& bc,
                             double scale, cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      broadcast_scaled_kernel<T>
          <<<grid_for(n), kThreads, 0, stream>>>(as<T>(x), as<T>(out), n, bc, scale);
    });
  }
  return cudaGetLastError();
}

cudaError_t unary_grad(UnaryGradOp op, ConstTensor dy, ConstTensor v, Tensor dx, int64_t n,
                       double s, cudaStream_t stream) {
  if (n > 0) {
    dispatch(dx.elem, [&](auto tag) {
      using T = decltype(tag);
      unary_grad_kernel<T>
          <<<grid_for(n), kThreads, 0, stream>>>(op, as<T>(dy), as<T>(v), as<T>(dx), n, s);
    });
  }
  return cudaGetLastError();
}

cudaError_t binary_grad(BinaryGradOp op, ConstTensor dy, ConstTensor l, ConstTensor r, Tensor dl,
                        Tensor dr, int64_t n, const Broadcast& bc, cudaStream_t stream) {
  if (n > 0) {
    dispatch(dy.elem, [&](auto tag) {
      using T = decltype(tag);
      binary_grad_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(op, as<T>(dy), as<T>(l), as<T>(r),
                                                                  as<T>(dl), as<T>(dr), n, bc);
    });
  }
  return cudaGetLastError();
}

cudaError_t add_bias(Tensor out, ConstTensor bias, int64_t m, int64_t n, cudaStream_t stream) {
  if (m * n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      add_bias_kernel<T><<<grid_for(m * n), kThreads, 0, stream>>>(as<T>(out), as<T>(bias), m, n);
    });
  }
  return cudaGetLastError();
}

cudaError_t activation_grad(ActGrad act, ConstTensor dy, ConstTensor v, Tensor dx, int64_t n,
                            cudaStream_t stream) {
  if (n > 0) {
    dispatch(dx.elem, [&](auto tag) {
      using T = decltype(tag);
      activation_grad_kernel<T>
          <<<grid_for(n), kThreads, 0, stream>>>(act, as<T>(dy), as<T>(v), as<T>(dx), n);
    });
  }
  return cudaGetLastError();
}

cudaError_t sgd(ConstTensor w, ConstTensor g, Tensor mom, Tensor out, int64_t n, double lr,
                double wd, double rescale, double clip, double momentum, cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      using A = Acc<T>;
      sgd_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
          as<T>(w), as<T>(g), as<T>(mom), as<T>(out), n, static_cast<A>(lr), static_cast<A>(wd),
          static_cast<A>(rescale), static_cast<A>(clip), static_cast<A>(momentum));
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
      adam_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
          as<T>(w), as<T>(g), as<T>(mean), as<T>(var), as<T>(out), n, A(lr), A(wd), A(rescale),
          A(clip), A(beta1), A(beta2), A(epsilon));
    });
  }
  return cudaGetLastError();
}

cudaError_t mp_sgd(ConstTensor g, float* mom, float* w32, Tensor out, int64_t n, float lr, float wd,
                   float rescale, float clip, float momentum, cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      mp_sgd_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(as<T>(g), mom, w32, as<T>(out), n, lr,
                                                             wd, rescale, clip, momentum);
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
      softmax_output_grad_kernel<T>
          <<<grid_for(n), kThreads, 0, stream>>>(as<T>(y), as<T>(label), as<T>(grad), g);
    });
  }
  return cudaGetLastError();
}

cudaError_t softmax_output_grad_dense(ConstTensor y, ConstTensor label, Tensor grad, int64_t n,
                                      double scale, cudaStream_t stream) {
  if (n > 0) {
    dispatch(grad.elem, [&](auto tag) {
      using T = decltype(tag);
      softmax_output_grad_dense_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
          as<T>(y), as<T>(label), as<T>(grad), n, static_cast<Acc<T>>(scale));
    });
  }
  return cudaGetLastError();
}

}  // namespace nanomx::ops::cuda
