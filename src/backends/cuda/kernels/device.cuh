// What the CUDA kernel files (the .cu files of this folder) share: the launch helpers, the element
// types and their conversions (the CPU's rules), reading index arrays of any dtype, and the
// counter-based random numbers. Device code: included by .cu files only (compiled by nvcc, or
// as C++ for the host-emulated device).
//
// Each kernel is a template over the element type (float, double, __half; the integer types
// where launch.h says) computing in `Acc` (double for double, float for float and __half -- a
// half is widened to float for the arithmetic, as cuBLAS' and cuDNN's half paths do -- an integer
// type in itself); the launchers pick the instantiation from the tensors' Elem. Reductions and
// softmax accumulate in double whatever the element type, as the CPU kernels.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "backends/cuda/kernels/launch.h"

#ifdef NANOMX_CUDA_EMULATED
// Compiled as C++ for the host-emulated device (docs/cuda.md; -DNANOMX_CUDA=EMULATED).
#include "kernel_emulation.h"
#endif

namespace nanomx::ops::cuda {

constexpr int kThreads = 256;

inline unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

// Launches kernel<<<grid, kThreads, 0, stream>>>(args...). The host-emulated device runs a
// launch_kernel's threads one after another; a kernel that calls __syncthreads() must come
// through launch_synced_kernel, whose threads it runs concurrently (it aborts, naming the
// mistake, otherwise).
template <typename... P, typename... A>
void launch_kernel(unsigned grid, cudaStream_t stream, void (*kernel)(P...), A... args) {
#ifdef NANOMX_CUDA_EMULATED
  hostgpu::launch(hostgpu::Threads::kOneAfterAnother, grid, kThreads, stream, kernel, args...);
#else
  kernel<<<grid, kThreads, 0, stream>>>(args...);
#endif
}
template <typename... P, typename... A>
void launch_synced_kernel(unsigned grid, cudaStream_t stream, void (*kernel)(P...), A... args) {
#ifdef NANOMX_CUDA_EMULATED
  hostgpu::launch(hostgpu::Threads::kConcurrent, grid, kThreads, stream, kernel, args...);
#else
  kernel<<<grid, kThreads, 0, stream>>>(args...);
#endif
}

// Grid-stride loops: any n with a bounded grid.
#define NANOMX_CUDA_LOOP(i, n)                                                           \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// ---- element types ----

// Integers compute in their own type (the CPU's rule: exactly where the function is exact on
// integers, through double otherwise; apply_binary / apply_unary say which).
template <typename T>
struct AccOf {
  using type = std::conditional_t<std::is_integral_v<T>, T, float>;
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
__device__ __forceinline__ std::enable_if_t<std::is_integral_v<T>, T> widen(T v) {
  return v;
}

template <typename T>
__device__ __forceinline__ T narrow(Acc<T> v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half narrow<__half>(float v) {
  return __float2half(v);
}

template <typename T>
__device__ __forceinline__ double to_double(T v) {
  return static_cast<double>(widen(v));
}

// A double converted to T as the CPU's from_double (nanomx/dtype.h, numpy's astype on x86):
// floats round to nearest; integers truncate toward zero and wrap modulo 2^bits, a value outside
// int64 (or NaN) becoming INT64_MIN first. Host and device: scalars are converted on the host.
template <typename T>
__host__ __device__ __forceinline__ T from_double(double v) {
  if constexpr (std::is_integral_v<T>) {
    const int64_t wide = v >= -9223372036854775808.0 && v < 9223372036854775808.0
                             ? static_cast<int64_t>(v)
                             : INT64_MIN;
    return static_cast<T>(static_cast<uint64_t>(wide));
  } else if constexpr (std::is_same_v<T, __half>) {
    return __float2half(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// The math functions for float and double by overload (device code has both).
#define NANOMX_CUDA_MATH(name, f32, f64)                                \
  __device__ __forceinline__ float m_##name(float v) { return f32(v); } \
  __device__ __forceinline__ double m_##name(double v) { return f64(v); }
NANOMX_CUDA_MATH(sqrt, sqrtf, sqrt)
NANOMX_CUDA_MATH(exp, expf, exp)
NANOMX_CUDA_MATH(log, logf, log)
NANOMX_CUDA_MATH(tanh, tanhf, tanh)
NANOMX_CUDA_MATH(log1p, log1pf, log1p)
NANOMX_CUDA_MATH(expm1, expm1f, expm1)
NANOMX_CUDA_MATH(fabs, fabsf, fabs)
NANOMX_CUDA_MATH(log2, log2f, log2)
NANOMX_CUDA_MATH(log10, log10f, log10)
NANOMX_CUDA_MATH(cbrt, cbrtf, cbrt)
NANOMX_CUDA_MATH(sin, sinf, sin)
NANOMX_CUDA_MATH(cos, cosf, cos)
NANOMX_CUDA_MATH(tan, tanf, tan)
NANOMX_CUDA_MATH(asin, asinf, asin)
NANOMX_CUDA_MATH(acos, acosf, acos)
NANOMX_CUDA_MATH(atan, atanf, atan)
NANOMX_CUDA_MATH(sinh, sinhf, sinh)
NANOMX_CUDA_MATH(cosh, coshf, cosh)
NANOMX_CUDA_MATH(asinh, asinhf, asinh)
NANOMX_CUDA_MATH(acosh, acoshf, acosh)
NANOMX_CUDA_MATH(atanh, atanhf, atanh)
NANOMX_CUDA_MATH(floor, floorf, floor)
NANOMX_CUDA_MATH(ceil, ceilf, ceil)
NANOMX_CUDA_MATH(round, roundf, round)
NANOMX_CUDA_MATH(trunc, truncf, trunc)
NANOMX_CUDA_MATH(erf, erff, erf)
NANOMX_CUDA_MATH(tgamma, tgammaf, tgamma)
NANOMX_CUDA_MATH(lgamma, lgammaf, lgamma)
#undef NANOMX_CUDA_MATH
__device__ __forceinline__ float m_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double m_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ float m_hypot(float a, float b) { return hypotf(a, b); }
__device__ __forceinline__ double m_hypot(double a, double b) { return hypot(a, b); }

// Calls f(T{}) with T the C++ type of `e`, for the kernels written for the float types only
// (gpu_kernel, gpu_kernel.h, refuses the others before launching, naming the operator and dtype; an
// integer here is a missing check there, so it stops the process rather than write wrong elements).
template <typename F>
void dispatch(Elem e, F&& f) {
  switch (e) {
    case Elem::kFloat32:
      f(float{});
      return;
    case Elem::kFloat64:
      f(double{});
      return;
    case Elem::kFloat16:
      f(__half{});
      return;
    default:
      break;
  }
  fprintf(stderr, "nanomx: a float-only CUDA kernel was given an integer tensor (elem %d)\n",
          static_cast<int>(e));
  abort();
}

// As dispatch, and the integer types too: the kernels that take every dtype.
template <typename F>
void dispatch_any(Elem e, F&& f) {
  switch (e) {
    case Elem::kUint8:
      f(uint8_t{});
      return;
    case Elem::kInt8:
      f(int8_t{});
      return;
    case Elem::kInt32:
      f(int32_t{});
      return;
    case Elem::kInt64:
      f(int64_t{});
      return;
    default:
      dispatch(e, f);
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

// SplitMix64's output at position i of the stream starting at key.
__device__ __forceinline__ uint64_t random_bits(uint64_t key, uint64_t i) {
  uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// A double in [0, 1) from the top 53 bits of random_bits(key, i).
__device__ __forceinline__ double uniform01(uint64_t key, uint64_t i) {
  return static_cast<double>(random_bits(key, i) >> 11) * 0x1.0p-53;
}

// The index and comparison arithmetic the kernels report errors with: the smallest (largest)
// value any thread offers, through compare-and-swap (every GPU has the 64-bit CAS).
__device__ __forceinline__ void atomic_min_i64(int64_t* address, int64_t value) {
  auto* a = reinterpret_cast<unsigned long long*>(address);
  unsigned long long seen = atomicCAS(a, 0ull, 0ull), assumed;
  do {
    assumed = seen;
    if (static_cast<int64_t>(assumed) <= value) return;
    seen = atomicCAS(a, assumed, static_cast<unsigned long long>(value));
  } while (seen != assumed);
}
__device__ __forceinline__ void atomic_max_i64(int64_t* address, int64_t value) {
  auto* a = reinterpret_cast<unsigned long long*>(address);
  unsigned long long seen = atomicCAS(a, 0ull, 0ull), assumed;
  do {
    assumed = seen;
    if (static_cast<int64_t>(assumed) >= value) return;
    seen = atomicCAS(a, assumed, static_cast<unsigned long long>(value));
  } while (seen != assumed);
}

// A host-side rounding of v to T's precision, as the CPU rounds scalars to the array's type.
template <typename T>
Acc<T> rounded(double v) {
  if constexpr (std::is_integral_v<T>) return from_double<T>(v);
  Acc<T> a = static_cast<Acc<T>>(v);
  if constexpr (std::is_same_v<T, __half>) a = __half2float(__float2half(a));
  return a;
}

__device__ __forceinline__ double index_as_double(Indices idx, int64_t i) {
  switch (idx.type) {
    case IndexType::kF32:
      return static_cast<const float*>(idx.data)[i];
    case IndexType::kF64:
      return static_cast<const double*>(idx.data)[i];
    case IndexType::kF16:
      return __half2float(static_cast<const __half*>(idx.data)[i]);
    case IndexType::kI32:
      return static_cast<const int32_t*>(idx.data)[i];
    case IndexType::kI64:
      return static_cast<double>(static_cast<const int64_t*>(idx.data)[i]);
    case IndexType::kU8:
      return static_cast<const uint8_t*>(idx.data)[i];
    case IndexType::kI8:
      return static_cast<const int8_t*>(idx.data)[i];
  }
  return 0;
}

// The CPU's index_of: floats truncate toward zero; NaN and infinities are out of every range.
__device__ __forceinline__ int64_t index_at(Indices idx, int64_t i) {
  if (idx.type == IndexType::kI64) return static_cast<const int64_t*>(idx.data)[i];
  const double d = index_as_double(idx, i);
  return isfinite(d) ? static_cast<int64_t>(d) : INT64_MIN;
}

// Calls f(E{}) with E an unsigned integer of elem_bytes bytes: kernels that move elements.
template <typename F>
void by_size(size_t elem_bytes, F&& f) {
  switch (elem_bytes) {
    case 1:
      f(uint8_t{});
      break;
    case 2:
      f(uint16_t{});
      break;
    case 4:
      f(uint32_t{});
      break;
    default:
      f(uint64_t{});
      break;
  }
}

}  // namespace nanomx::ops::cuda
