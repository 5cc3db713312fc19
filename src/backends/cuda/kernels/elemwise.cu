// The CUDA kernels of the elementwise operators (launch.h says what each computes): the binary,
// scalar and unary arithmetic and math, fill, cast, clip. Every dtype: integers with the CPU's
// semantics.
#include "backends/cuda/kernels/device.cuh"

namespace nanomx::ops::cuda {
namespace {

// The binary operators on integers, as the CPU's (backends/cpu/kernels/math.cc, elemwise.cc):
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
    case UnaryOp::kFix:
    case UnaryOp::kTrunc:
      return v;
    default:
      return from_double<A>(apply_unary_float(op, static_cast<double>(v)));
  }
}

template <typename A>
__device__ __forceinline__ A apply_unary_float(UnaryOp op, A x) {
  using V = A;
  using unary_math::kPi;
  switch (op) {
    case UnaryOp::kNegative:
      return -x;
    case UnaryOp::kSquare:
      return x * x;
    case UnaryOp::kSqrt:
      return m_sqrt(x);
    case UnaryOp::kSoftRelu:
      return x > A(20) ? x : m_log1p(m_exp(x));
#define MATH(f) m_##f
#define NANOMX_UNARY_CASE(name, Enum, integers, value, grad, derivative) \
  case UnaryOp::k##Enum:                                                 \
    return value;
      NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_CASE)
#undef NANOMX_UNARY_CASE
#undef MATH
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

}  // namespace nanomx::ops::cuda
