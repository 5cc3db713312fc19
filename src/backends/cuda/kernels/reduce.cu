// The CUDA kernels of the reductions (launch.h says what each computes): sum, prod, max, min,
// their NaN forms and the norms, in double whatever the element type (as the CPU kernels);
// argmax/argmin; the mean's gradient (a scaled broadcast).
#include "backends/cuda/kernels/device.cuh"

namespace nanomx::ops::cuda {
namespace {

__device__ __forceinline__ double reduce_identity(Reducer r) {
  switch (r) {
    case Reducer::kProd:
    case Reducer::kNanProd:
      return 1;
    case Reducer::kMax:
      return -INFINITY;
    case Reducer::kMin:
      return INFINITY;
    default:
      return 0;
  }
}

// acc combined with v (an element, or another thread's partial result).
__device__ __forceinline__ double reduce_combine(Reducer r, double acc, double v) {
  switch (r) {
    case Reducer::kSum:
    case Reducer::kAbsSum:
    case Reducer::kSquareSum:
      return acc + v;
    case Reducer::kNanSum:
      return v != v ? acc : acc + v;
    case Reducer::kProd:
      return acc * v;
    case Reducer::kNanProd:
      return v != v ? acc : acc * v;
    case Reducer::kMax:
      return acc != acc || v != v ? (acc != acc ? acc : v) : (v > acc ? v : acc);
    case Reducer::kMin:
      return acc != acc || v != v ? (acc != acc ? acc : v) : (v < acc ? v : acc);
  }
  return acc;
}

// An element as the reduction first sees it (|x| and x^2 for the norms).
__device__ __forceinline__ double reduce_element(Reducer r, double v) {
  return r == Reducer::kAbsSum ? fabs(v) : r == Reducer::kSquareSum ? v * v : v;
}

// One block per output element; the block's threads reduce strided, in double (as the CPU's
// double accumulation), then a shared-memory tree.
template <typename T>
__global__ void reduce_kernel(Reducer r, const T* x, T* out, int64_t outer, int64_t len,
                              int64_t inner, double scale, bool root) {
  __shared__ double partial[kThreads];
  for (int64_t e = blockIdx.x; e < outer * inner; e += gridDim.x) {
    const int64_t o = e / inner, in = e % inner;
    const T* base = x + o * len * inner + in;
    double acc = reduce_identity(r);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      acc = reduce_combine(r, acc, reduce_element(r, widen(base[j * inner])));
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) {
        // Partial results are combined as they are (the norms' are already sums).
        const Reducer c = r == Reducer::kAbsSum || r == Reducer::kSquareSum ? Reducer::kSum : r;
        partial[threadIdx.x] = reduce_combine(c, partial[threadIdx.x], partial[threadIdx.x + s]);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      const double v = partial[0] * scale;
      out[e] = from_double<T>(root ? sqrt(v) : v);
    }
    __syncthreads();
  }
}

// The integer reductions other than the norms, as the CPU's: sums and products (and their NaN
// forms, the same on integers) modulo 2^64, max and min exact, on the elements sign-extended to
// 64 bits (kept as uint64: the wrapping arithmetic is unsigned); then wrapped to T's width. A
// mean (divisor > 0) divides that sum by the count, truncating.
__device__ __forceinline__ uint64_t integer_identity(Reducer r) {
  switch (r) {
    case Reducer::kProd:
    case Reducer::kNanProd:
      return 1;
    case Reducer::kMax:
      return static_cast<uint64_t>(INT64_MIN);
    case Reducer::kMin:
      return static_cast<uint64_t>(INT64_MAX);
    default:
      return 0;
  }
}
__device__ __forceinline__ uint64_t integer_combine(Reducer r, uint64_t a, uint64_t b) {
  switch (r) {
    case Reducer::kProd:
    case Reducer::kNanProd:
      return a * b;
    case Reducer::kMax:
      return static_cast<int64_t>(b) > static_cast<int64_t>(a) ? b : a;
    case Reducer::kMin:
      return static_cast<int64_t>(b) < static_cast<int64_t>(a) ? b : a;
    default:
      return a + b;
  }
}
template <typename T>
__global__ void reduce_integer_kernel(Reducer r, const T* x, T* out, int64_t outer, int64_t len,
                                      int64_t inner, int64_t divisor) {
  __shared__ uint64_t partial[kThreads];
  for (int64_t e = blockIdx.x; e < outer * inner; e += gridDim.x) {
    const T* base = x + (e / inner) * len * inner + e % inner;
    uint64_t acc = integer_identity(r);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      acc = integer_combine(r, acc, static_cast<uint64_t>(static_cast<int64_t>(base[j * inner])));
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) {
        partial[threadIdx.x] = integer_combine(r, partial[threadIdx.x], partial[threadIdx.x + s]);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      const T total = static_cast<T>(partial[0]);
      out[e] = divisor > 0 ? static_cast<T>(static_cast<int64_t>(total) / divisor) : total;
    }
    __syncthreads();
  }
}

// One thread per (outer, inner) output: the first extreme along the row.
template <typename T>
__global__ void arg_reduce_kernel(bool max, const T* x, T* out, int64_t outer, int64_t len,
                                  int64_t inner) {
  NANOMX_CUDA_LOOP(e, outer * inner) {
    const T* row = x + (e / inner) * len * inner + e % inner;
    Acc<T> best = widen(row[0]);  // integers compared exactly, as the CPU's
    int64_t at = 0;
    for (int64_t k = 1; k < len; ++k) {
      const Acc<T> v = widen(row[k * inner]);
      bool nan_first = false;  // the first NaN wins and stays
      if constexpr (!std::is_integral_v<T>) nan_first = v != v && best == best;
      if ((max ? v > best : v < best) || nan_first) {
        best = v;
        at = k;
      }
    }
    out[e] = from_double<T>(static_cast<double>(at));
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

}  // namespace

cudaError_t reduce(Reducer r, ConstTensor x, Tensor out, int64_t outer, int64_t len, int64_t inner,
                   double scale, bool root, int64_t int_mean_count, cudaStream_t stream) {
  const int64_t outputs = outer * inner;
  if (outputs > 0) {
    const unsigned blocks = static_cast<unsigned>(outputs < 65535 * 8 ? outputs : 65535 * 8);
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T>) {
        if (r != Reducer::kAbsSum && r != Reducer::kSquareSum) {  // the norms: in double
          launch_synced_kernel(blocks, stream, reduce_integer_kernel<T>, r, as<T>(x), as<T>(out),
                               outer, len, inner, int_mean_count);
          return;
        }
      }
      launch_synced_kernel(blocks, stream, reduce_kernel<T>, r, as<T>(x), as<T>(out), outer, len,
                           inner, scale, root);
    });
  }
  return cudaGetLastError();
}

cudaError_t arg_reduce(bool max, ConstTensor x, Tensor out, int64_t outer, int64_t len,
                       int64_t inner, cudaStream_t stream) {
  const int64_t outputs = outer * inner;
  if (outputs > 0 && len > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(outputs), stream, arg_reduce_kernel<T>, max, as<T>(x), as<T>(out),
                    outer, len, inner);
    });
  }
  return cudaGetLastError();
}

cudaError_t broadcast_scaled(ConstTensor x, Tensor out, int64_t n, const Broadcast& bc,
                             double scale, cudaStream_t stream) {
  if (n > 0) {
    dispatch(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, broadcast_scaled_kernel<T>, as<T>(x), as<T>(out), n, bc,
                    scale);
    });
  }
  return cudaGetLastError();
}

}  // namespace nanomx::ops::cuda
