// The arithmetic CUDA kernels (docs/cuda.md; index_kernels.cu has those that order, scatter and
// draw; device.cuh what both share). Each is a template over the element type (float, double,
// __half; the integer types where launch.h says) computing in `Acc` (double for double, float
// for float and __half -- a half is widened to float for the arithmetic, as cuBLAS' and cuDNN's
// half paths do -- an integer type in itself); the launchers pick the instantiation from the
// tensors' Elem. Reductions and softmax accumulate in double whatever the element type, as the
// CPU kernels. Never run on a GPU yet: see docs/cuda.md.
#include "ops/cuda/device.cuh"

namespace nanomx::ops::cuda {
namespace {

// ---- elementwise ----

// The binary operators on integers, as the CPU's (ops/cpu/math.cc, ops/cpu/elemwise.cc):
// +, -, * wrap like numpy; x / 0 and x % 0 are 0; power is exact (wrapping) for exponents >= 0
// and, below 0, what MXNet's float power truncates to; mod takes the divisor's sign; hypot
// through double.
template <typename A>
__device__ __forceinline__ A apply_binary_int(BinaryOp op, A a, A b) {
  using W = std::make_unsigned_t<A>;
  switch (op) {
    case BinaryOp::kAdd:
      return static_cast<A>(static_cast<W>(static_cast<W>(a) + static_cast<W>(b)));
    case BinaryOp::kSub:
      return static_cast<A>(static_cast<W>(static_cast<W>(a) - static_cast<W>(b)));
    case BinaryOp::kMul:
      return static_cast<A>(static_cast<W>(static_cast<W>(a) * static_cast<W>(b)));
    case BinaryOp::kDiv:
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<A>) {
        if (b == -1) return static_cast<A>(static_cast<W>(W(0) - static_cast<W>(a)));
      }
      return static_cast<A>(a / b);
    case BinaryOp::kPower: {
      if constexpr (std::is_signed_v<A>) {
        if (b < 0) return a == 1 ? A(1) : a == -1 ? (b % 2 == 0 ? A(1) : A(-1)) : A(0);
      }
      W result = 1, base = static_cast<W>(a);
      for (W e = static_cast<W>(b); e != 0; e >>= 1) {
        if (e & 1) result = static_cast<W>(result * base);
        base = static_cast<W>(base * base);
      }
      return static_cast<A>(result);
    }
    case BinaryOp::kMaximum:
      return a > b ? a : b;
    case BinaryOp::kMinimum:
      return a < b ? a : b;
    case BinaryOp::kMod: {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<A>) {
        if (b == -1) return 0;  // also INT_MIN % -1, which would trap
        const A r = static_cast<A>(a % b);
        return r != 0 && ((r < 0) != (b < 0)) ? static_cast<A>(r + b) : r;
      } else {
        return static_cast<A>(a % b);
      }
    }
    case BinaryOp::kHypot:
      return from_double<A>(hypot(static_cast<double>(a), static_cast<double>(b)));
    default:  // the comparisons and logical operators: apply_binary
      return A(0);
  }
}

template <typename A>
__device__ __forceinline__ A apply_binary_float(BinaryOp op, A a, A b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kPower:
      return m_pow(a, b);
    case BinaryOp::kMaximum:  // a NaN in either operand propagates
      return a != a ? a : (a > b ? a : b);
    case BinaryOp::kMinimum:
      return a != a ? a : (a < b ? a : b);
    case BinaryOp::kMod: {  // numpy's: the result takes the divisor's sign
      if (b == A(0)) return A(0);
      const double x = a, y = b;
      double r = fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      if (r == 0) r = copysign(0.0, y);
      return static_cast<A>(r);
    }
    case BinaryOp::kHypot:
      return m_hypot(a, b);
    default:  // the comparisons and logical operators: apply_binary
      return A(0);
  }
}

// The comparisons and logical operators are the same for every type (1 or 0 in the operands'
// type); the arithmetic differs for integers.
template <typename A>
__device__ __forceinline__ A apply_binary(BinaryOp op, A a, A b) {
  switch (op) {
    case BinaryOp::kEqual:
      return a == b ? A(1) : A(0);
    case BinaryOp::kNotEqual:
      return a != b ? A(1) : A(0);
    case BinaryOp::kGreater:
      return a > b ? A(1) : A(0);
    case BinaryOp::kGreaterEqual:
      return a >= b ? A(1) : A(0);
    case BinaryOp::kLesser:
      return a < b ? A(1) : A(0);
    case BinaryOp::kLesserEqual:
      return a <= b ? A(1) : A(0);
    case BinaryOp::kLogicalAnd:
      return a != A(0) && b != A(0) ? A(1) : A(0);
    case BinaryOp::kLogicalOr:
      return a != A(0) || b != A(0) ? A(1) : A(0);
    case BinaryOp::kLogicalXor:
      return (a != A(0)) != (b != A(0)) ? A(1) : A(0);
    default:
      break;
  }
  if constexpr (std::is_integral_v<A>) {
    return apply_binary_int(op, a, b);
  } else {
    return apply_binary_float(op, a, b);
  }
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
__global__ void scalar_kernel(BinaryOp op, bool reversed, const T* x, Acc<T> s, T* out, int64_t n) {
  NANOMX_CUDA_LOOP(i, n) {
    const Acc<T> v = widen(x[i]);
    out[i] = narrow<T>(reversed ? apply_binary(op, s, v) : apply_binary(op, v, s));
  }
}

template <typename A>
__device__ __forceinline__ A apply_unary_float(UnaryOp op, A v);

// The unary operators on integers, as the CPU's: exact where the function is exact on integers
// (negative and square wrap, |INT_MIN| stays INT_MIN, the roundings are the identity), the
// others through double and converted back as numpy's astype does (sqrt(2) is 1).
template <typename A>
__device__ __forceinline__ A apply_unary_int(UnaryOp op, A v) {
  using W = std::make_unsigned_t<A>;
  switch (op) {
    case UnaryOp::kNegative:
      return static_cast<A>(static_cast<W>(W(0) - static_cast<W>(v)));
    case UnaryOp::kSquare:
      return static_cast<A>(static_cast<W>(static_cast<W>(v) * static_cast<W>(v)));
    case UnaryOp::kAbs:
      if constexpr (std::is_signed_v<A>) {
        return v < 0 ? static_cast<A>(static_cast<W>(W(0) - static_cast<W>(v))) : v;
      } else {
        return v;
      }
    case UnaryOp::kSign:
      if constexpr (std::is_signed_v<A>) {
        return static_cast<A>((v > 0) - (v < 0));
      } else {
        return v > 0 ? A(1) : A(0);
      }
    case UnaryOp::kRelu:
      return v > 0 ? v : A(0);
    case UnaryOp::kLogicalNot:
      return v == 0 ? A(1) : A(0);
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRound:
    case UnaryOp::kRint:
    case UnaryOp::kTrunc:
      return v;
    default:
      return from_double<A>(apply_unary_float(op, static_cast<double>(v)));
  }
}

template <typename A>
__device__ __forceinline__ A apply_unary_float(UnaryOp op, A v) {
  constexpr A kPi = A(3.14159265358979323846);
  switch (op) {
    case UnaryOp::kNegative:
      return -v;
    case UnaryOp::kSquare:
      return v * v;
    case UnaryOp::kSqrt:
      return m_sqrt(v);
    case UnaryOp::kExp:
      return m_exp(v);
    case UnaryOp::kLog:
      return m_log(v);
    case UnaryOp::kRelu:  // NaN stays NaN, as the CPU kernel
      return v > A(0) ? v : (v != v ? v : A(0));
    case UnaryOp::kSigmoid:
      return A(1) / (A(1) + m_exp(-v));
    case UnaryOp::kTanh:
      return m_tanh(v);
    case UnaryOp::kSoftRelu:
      return v > A(20) ? v : m_log1p(m_exp(v));
    case UnaryOp::kSoftSign:
      return v / (A(1) + m_fabs(v));
    case UnaryOp::kExpm1:
      return m_expm1(v);
    case UnaryOp::kLog1p:
      return m_log1p(v);
    case UnaryOp::kLog2:
      return m_log2(v);
    case UnaryOp::kLog10:
      return m_log10(v);
    case UnaryOp::kAbs:
      return m_fabs(v);
    case UnaryOp::kSign:  // MXNet's: NaN gives 0
      return v < A(0) ? A(-1) : (v > A(0) ? A(1) : A(0));
    case UnaryOp::kRsqrt:
      return A(1) / m_sqrt(v);
    case UnaryOp::kCbrt:
      return m_cbrt(v);
    case UnaryOp::kRcbrt:
      return A(1) / m_cbrt(v);
    case UnaryOp::kReciprocal:
      return A(1) / v;
    case UnaryOp::kSin:
      return m_sin(v);
    case UnaryOp::kCos:
      return m_cos(v);
    case UnaryOp::kTan:
      return m_tan(v);
    case UnaryOp::kArcsin:
      return m_asin(v);
    case UnaryOp::kArccos:
      return m_acos(v);
    case UnaryOp::kArctan:
      return m_atan(v);
    case UnaryOp::kSinh:
      return m_sinh(v);
    case UnaryOp::kCosh:
      return m_cosh(v);
    case UnaryOp::kArcsinh:
      return m_asinh(v);
    case UnaryOp::kArccosh:
      return m_acosh(v);
    case UnaryOp::kArctanh:
      return m_atanh(v);
    case UnaryOp::kDegrees:
      return v * (A(180) / kPi);
    case UnaryOp::kRadians:
      return v * (kPi / A(180));
    case UnaryOp::kFloor:
      return m_floor(v);
    case UnaryOp::kCeil:
      return m_ceil(v);
    case UnaryOp::kRound:  // half away from zero
      return m_round(v);
    case UnaryOp::kRint: {  // MXNet's rint: ties go to the floor
      const A lo = m_floor(v), hi = m_ceil(v);
      return (v - lo) <= (hi - v) ? lo : hi;
    }
    case UnaryOp::kTrunc:
      return m_trunc(v);
    case UnaryOp::kErf:
      return m_erf(v);
    case UnaryOp::kGamma:
      return m_tgamma(v);
    case UnaryOp::kGammaln:
      return m_lgamma(v);
    case UnaryOp::kLogicalNot:
      return v == A(0) ? A(1) : A(0);
  }
  return A(0);
}

template <typename A>
__device__ __forceinline__ A apply_unary(UnaryOp op, A v) {
  if constexpr (std::is_integral_v<A>) {
    return apply_unary_int(op, v);
  } else {
    return apply_unary_float(op, v);
  }
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* out, int64_t n) {
  NANOMX_CUDA_LOOP(i, n) { out[i] = narrow<T>(apply_unary(op, widen(x[i]))); }
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
    if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
      out[i] = static_cast<To>(x[i]);  // wraps, as numpy's astype
    } else {
      out[i] = from_double<To>(to_double(x[i]));
    }
  }
}

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
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
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
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
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

// In double, as the CPU's table (ops/backward_ops.cc).
__device__ __forceinline__ double unary_derivative(UnaryGradOp op, double x, double s) {
  constexpr double kPi = 3.14159265358979323846;
  switch (op) {
    case UnaryGradOp::kRelu:  // a NaN passes through, as MXNet's relu_grad
      return x != x ? x : (x > 0 ? 1.0 : 0.0);
    case UnaryGradOp::kSigmoid:
      return x * (1 - x);
    case UnaryGradOp::kTanh:
      return 1 - x * x;
    case UnaryGradOp::kSqrt:
      return 0.5 / x;
    case UnaryGradOp::kRsqrt:
      return -0.5 * x * x * x;
    case UnaryGradOp::kCbrt:
      return 1 / (3 * x * x);
    case UnaryGradOp::kSquare:
      return 2 * x;
    case UnaryGradOp::kExpm1:
      return exp(x);
    case UnaryGradOp::kLog:
      return 1 / x;
    case UnaryGradOp::kLog1p:
      return 1 / (1 + x);
    case UnaryGradOp::kLog2:
      return 1 / (x * 0.69314718055994530942);
    case UnaryGradOp::kLog10:
      return 1 / (x * 2.30258509299404568402);
    case UnaryGradOp::kAbs:
      return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
    case UnaryGradOp::kReciprocal:
      return -1 / (x * x);
    case UnaryGradOp::kSin:
      return cos(x);
    case UnaryGradOp::kCos:
      return -sin(x);
    case UnaryGradOp::kTan:
      return 1 / (cos(x) * cos(x));
    case UnaryGradOp::kArcsin:
      return 1 / sqrt(1 - x * x);
    case UnaryGradOp::kArccos:
      return -1 / sqrt(1 - x * x);
    case UnaryGradOp::kArctan:
      return 1 / (1 + x * x);
    case UnaryGradOp::kSinh:
      return cosh(x);
    case UnaryGradOp::kCosh:
      return sinh(x);
    case UnaryGradOp::kArcsinh:
      return 1 / sqrt(x * x + 1);
    case UnaryGradOp::kArccosh:
      return 1 / sqrt(x * x - 1);
    case UnaryGradOp::kArctanh:
      return 1 / (1 - x * x);
    case UnaryGradOp::kDegrees:
      return 180 / kPi;
    case UnaryGradOp::kRadians:
      return kPi / 180;
    case UnaryGradOp::kErf:
      return 2 / sqrt(kPi) * exp(-x * x);
    case UnaryGradOp::kRcbrt:
      return -1 / (3 * x * cbrt(x));
    case UnaryGradOp::kRDivScalar:
      return -s / (x * x);
    case UnaryGradOp::kPowerScalar:
      return s * pow(x, s - 1);
    case UnaryGradOp::kRPowerScalar:
      return pow(s, x) * log(s);
    case UnaryGradOp::kMaximumScalar:
      return x >= s ? 1.0 : 0.0;
    case UnaryGradOp::kMinimumScalar:
      return x <= s ? 1.0 : 0.0;
    case UnaryGradOp::kHypotScalar:
      return x / hypot(x, s);
    case UnaryGradOp::kModScalar:
      return 1.0;
    case UnaryGradOp::kRModScalar:
      return -floor(s / x);
  }
  return 0.0;
}

template <typename T>
__global__ void unary_grad_kernel(UnaryGradOp op, const T* dy, const T* v, T* dx, int64_t n,
                                  double s) {
  NANOMX_CUDA_LOOP(i, n) {
    const double d = unary_derivative(op, widen(v[i]), s);
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

template <typename T>
__global__ void clip_kernel(const T* x, T* out, int64_t n, Acc<T> lo, Acc<T> hi) {
  NANOMX_CUDA_LOOP(i, n) {
    const Acc<T> v = widen(x[i]);
    out[i] = narrow<T>(v > hi ? hi : (v < lo ? lo : v));
  }
}

template <typename T>
__global__ void clip_grad_kernel(const T* dy, const T* x, T* dx, int64_t n, double lo, double hi) {
  NANOMX_CUDA_LOOP(i, n) {
    const double v = widen(x[i]);
    dx[i] = v < lo || v > hi ? narrow<T>(Acc<T>(0)) : dy[i];
  }
}

template <typename T>
__global__ void arange_kernel(T* out, int64_t n, Acc<T> start, Acc<T> step, int64_t repeat) {
  NANOMX_CUDA_LOOP(i, n) { out[i] = narrow<T>(start + static_cast<Acc<T>>(i / repeat) * step); }
}

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

cudaError_t clip(ConstTensor x, Tensor out, int64_t n, double lo, double hi, cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, clip_kernel<T>, as<T>(x), as<T>(out), n, rounded<T>(lo),
                    rounded<T>(hi));
    });
  }
  return cudaGetLastError();
}

cudaError_t clip_grad(ConstTensor dy, ConstTensor x, Tensor dx, int64_t n, double lo, double hi,
                      cudaStream_t stream) {
  if (n > 0) {
    dispatch(dx.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, clip_grad_kernel<T>, as<T>(dy), as<T>(x), as<T>(dx), n, lo,
                    hi);
    });
  }
  return cudaGetLastError();
}

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

size_t elem_size(Elem e) {
  switch (e) {
    case Elem::kFloat64:
    case Elem::kInt64:
      return 8;
    case Elem::kFloat32:
    case Elem::kInt32:
      return 4;
    case Elem::kFloat16:
      return 2;
    case Elem::kUint8:
    case Elem::kInt8:
      return 1;
  }
  return 0;
}

cudaError_t binary(BinaryOp op, ConstTensor a, ConstTensor b, Tensor out, int64_t n,
                   cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, binary_kernel<T>, op, as<T>(a), as<T>(b), as<T>(out), n);
    });
  }
  return cudaGetLastError();
}

cudaError_t binary_broadcast(BinaryOp op, ConstTensor a, ConstTensor b, Tensor out, int64_t n,
                             const Broadcast& bc, cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, binary_broadcast_kernel<T>, op, as<T>(a), as<T>(b),
                    as<T>(out), n, bc);
    });
  }
  return cudaGetLastError();
}

cudaError_t scalar(BinaryOp op, bool reversed, ConstTensor x, double s, Tensor out, int64_t n,
                   cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      // The scalar in the array's type first, as the CPU kernel (a float16's 0.1 is 0.0999...).
      const Acc<T> sv = rounded<T>(s);
      launch_kernel(grid_for(n), stream, scalar_kernel<T>, op, reversed, as<T>(x), sv, as<T>(out),
                    n);
    });
  }
  return cudaGetLastError();
}

cudaError_t unary(UnaryOp op, ConstTensor x, Tensor out, int64_t n, cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, unary_kernel<T>, op, as<T>(x), as<T>(out), n);
    });
  }
  return cudaGetLastError();
}

cudaError_t fill(Tensor out, double value, int64_t n, cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(out.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, fill_kernel<T>, as<T>(out), rounded<T>(value), n);
    });
  }
  return cudaGetLastError();
}

cudaError_t cast(ConstTensor x, Tensor out, int64_t n, cudaStream_t stream) {
  if (n > 0) {
    dispatch_any(x.elem, [&](auto from) {
      using From = decltype(from);
      dispatch_any(out.elem, [&](auto to) {
        using To = decltype(to);
        launch_kernel(grid_for(n), stream, cast_kernel<From, To>, as<From>(x), as<To>(out), n);
      });
    });
  }
  return cudaGetLastError();
}

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

cudaError_t unary_grad(UnaryGradOp op, ConstTensor dy, ConstTensor v, Tensor dx, int64_t n,
                       double s, cudaStream_t stream) {
  if (n > 0) {
    dispatch(dx.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, unary_grad_kernel<T>, op, as<T>(dy), as<T>(v), as<T>(dx),
                    n, s);
    });
  }
  return cudaGetLastError();
}

cudaError_t binary_grad(BinaryGradOp op, ConstTensor dy, ConstTensor l, ConstTensor r, Tensor dl,
                        Tensor dr, int64_t n, const Broadcast& bc, cudaStream_t stream) {
  if (n > 0) {
    dispatch(dy.elem, [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(grid_for(n), stream, binary_grad_kernel<T>, op, as<T>(dy), as<T>(l), as<T>(r),
                    as<T>(dl), as<T>(dr), n, bc);
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
