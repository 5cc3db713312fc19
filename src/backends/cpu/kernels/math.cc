// CPU kernels of the math operators (definitions in ops/math.cc). Every result is in the input
// dtype: float16 computes in float and rounds once; float32 in float; integers exactly where
// the function is exact on integers (abs, sign, rounding, relu, comparisons, power, mod,
// maximum, minimum) and otherwise in double, converted back as numpy's astype does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"
#include "ops/unary_math.h"

namespace nanomx::ops::cpu {
namespace {

template <typename T>
inline T from_compute(compute_t<T> v) {
  if constexpr (std::is_same_v<T, half>) {
    return half(v);
  } else {
    return v;
  }
}

// ---- unary ----------------------------------------------------------------------------------

// The unary math operators (ops/unary_math.h).
enum class U {
#define NANOMX_UNARY_ENUM(name, Enum, integers, value, grad, derivative) k##Enum,
  NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_ENUM)
#undef NANOMX_UNARY_ENUM
};

// The functions exact on integers: computed in the integer type itself (unary_int).
constexpr bool integer_exact(U u) {
  switch (u) {
#define NANOMX_UNARY_EXACT(name, Enum, integers, value, grad, derivative) \
  case U::k##Enum:                                                        \
    return unary_math::integers == unary_math::kExact;
    NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_EXACT)
#undef NANOMX_UNARY_EXACT
  }
  return false;
}

template <U u, typename T>
inline T unary_int(T x) {
  if constexpr (u == U::kAbs) {
    if constexpr (std::is_signed_v<T>) {
      // INT_MIN stays INT_MIN (numpy's wrap).
      return x < 0 ? static_cast<T>(static_cast<std::make_unsigned_t<T>>(0) -
                                    static_cast<std::make_unsigned_t<T>>(x))
                   : x;
    } else {
      return x;
    }
  } else if constexpr (u == U::kSign) {
    return static_cast<T>((x > 0) - (x < 0));
  } else if constexpr (u == U::kRelu) {
    return x > 0 ? x : T(0);
  } else if constexpr (u == U::kLogicalNot) {
    return x == 0 ? T(1) : T(0);
  } else {
    return x;  // rounding an integer
  }
}

// V is float or double.
template <U u, typename V>
inline V unary_float(V x) {
  using unary_math::kPi;
#define MATH(f) std::f
#define NANOMX_UNARY_VALUE(name, Enum, integers, value, grad, derivative) \
  if constexpr (u == U::k##Enum) return value;
  NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_VALUE)
#undef NANOMX_UNARY_VALUE
#undef MATH
}

template <U u, typename T>
inline T unary_one(T x) {
  if constexpr (kIsFloat<T>) {
    return from_compute<T>(unary_float<u>(to_compute(x)));
  } else if constexpr (integer_exact(u)) {
    return unary_int<u>(x);
  } else {
    return from_double<T>(unary_float<u>(static_cast<double>(x)));
  }
}

// float32 exp without a libm call per element, so that the loop vectorizes (the scalar expf
// runs at a fifth of numpy's SIMD exp). Cephes' expf: x = n ln2 + r with |r| <= ln2 / 2,
// e^r by a degree-6 polynomial, times 2^n built in the exponent bits: within 1.01 ulp of the
// exact result over the whole range (tests/python/test_ndarray_math.py measures it). Only for
// x in [-87, 88], where 2^n and the result are normal floats; returns false when some element
// lies outside (or is NaN), for the caller to redo those with std::exp.
[[gnu::always_inline]] inline bool exp_f32_body(const float* x, float* o, int64_t n) {
  // Branch-free so that GCC vectorizes it: the range test is an int and `&` (not `&&`), and an
  // element out of range (or NaN) is replaced by 0 through its bits (a float select would
  // not vectorize under the default -ftrapping-math); the caller redoes such blocks.
  int in_range = 1;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const int ok = static_cast<int>(v >= -87.0f) & static_cast<int>(v <= 88.0f);
    in_range &= ok;
    uint32_t vbits;
    std::memcpy(&vbits, &v, sizeof(vbits));
    vbits &= 0u - static_cast<uint32_t>(ok);
    float c;
    std::memcpy(&c, &vbits, sizeof(c));
    // Round to nearest through the 1.5 * 2^23 trick: no floorf call, so the loop vectorizes.
    const float k = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const float r = (c - k * 0.693359375f) - k * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    o[i] = p * scale;
  }
  return in_range != 0;
}

// float32 log, vectorizable for the same reason: Cephes' logf. x = m 2^e with m in
// [sqrt(1/2), sqrt(2)), log(m) by a degree-9 polynomial in m - 1, plus e ln2 in two parts.
// Only for positive normal finite x (the exponent and mantissa taken from the bits); returns
// false when some element is anything else (0, negative, subnormal, inf, NaN).
[[gnu::always_inline]] inline bool log_f32_body(const float* x, float* o, int64_t n) {
  constexpr uint32_t kMinNormal = 0x00800000u, kInf = 0x7f800000u;
  constexpr uint32_t kSqrtHalf = 0x3f3504f3u;  // sqrt(0.5) in [0.5, 1)
  int in_range = 1;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    // Unsigned compares on the bits: no float select (see exp_f32_body).
    const int ok = static_cast<int>(bits >= kMinNormal) & static_cast<int>(bits < kInf);
    in_range &= ok;
    const uint32_t keep = 0u - static_cast<uint32_t>(ok);
    bits = (bits & keep) | (0x3f800000u & ~keep);  // 1.0 stands in; the caller redoes the block
    int e = static_cast<int>(bits >> 23) - 126;
    const uint32_t mbits = (bits & 0x007fffffu) | 0x3f000000u;  // m in [0.5, 1)
    float m;
    std::memcpy(&m, &mbits, sizeof(m));
    const int below = static_cast<int>(mbits < kSqrtHalf);
    e -= below;
    m = m + m * static_cast<float>(below) - 1.0f;  // 2m - 1 below sqrt(1/2), else m - 1
    const float z = m * m;
    float p = 7.0376836292e-2f;
    p = p * m - 1.1514610310e-1f;
    p = p * m + 1.1676998740e-1f;
    p = p * m - 1.2420140846e-1f;
    p = p * m + 1.4249322787e-1f;
    p = p * m - 1.6668057665e-1f;
    p = p * m + 2.0000714765e-1f;
    p = p * m - 2.4999993993e-1f;
    p = p * m + 3.3333331174e-1f;
    const float fe = static_cast<float>(e);
    float y = m * z * p;
    y += fe * -2.12194440e-4f;
    y += -0.5f * z;
    o[i] = (m + y) + fe * 0.693359375f;
  }
  return in_range != 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("avx2,fma")]] bool exp_f32_avx2(const float* x, float* o, int64_t n) {
  return exp_f32_body(x, o, n);
}
[[gnu::target("avx2,fma")]] bool log_f32_avx2(const float* x, float* o, int64_t n) {
  return log_f32_body(x, o, n);
}
bool cpu_has_avx2_fma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
  }();
  return has;
}
bool exp_f32(const float* x, float* o, int64_t n) {
  return cpu_has_avx2_fma() ? exp_f32_avx2(x, o, n) : exp_f32_body(x, o, n);
}
bool log_f32(const float* x, float* o, int64_t n) {
  return cpu_has_avx2_fma() ? log_f32_avx2(x, o, n) : log_f32_body(x, o, n);
}
#else
bool exp_f32(const float* x, float* o, int64_t n) { return exp_f32_body(x, o, n); }
bool log_f32(const float* x, float* o, int64_t n) { return log_f32_body(x, o, n); }
#endif

template <U u>
void unary_kernel(const ParsedParams&, std::span<const NDArray> in, std::span<const NDArray> out) {
  dispatch_dtype(out[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].data_as<T>();
    T* o = out[0].data_as<T>();
    const int64_t n = out[0].size();
    if constexpr ((u == U::kExp || u == U::kLog) && std::is_same_v<T, float>) {
      // In blocks, so that a block with an element out of range is redone while in cache (and
      // an input that is also the output is still there to redo it from).
      constexpr int64_t kBlock = 1024;
      float saved[kBlock];
      for (int64_t start = 0; start < n; start += kBlock) {
        const int64_t len = std::min(kBlock, n - start);
        const float* xb = x + start;
        if (xb == o + start) {
          std::memcpy(saved, xb, static_cast<size_t>(len) * sizeof(float));
          xb = saved;
        }
        const bool done = u == U::kExp ? exp_f32(xb, o + start, len) : log_f32(xb, o + start, len);
        if (!done) {
          for (int64_t i = 0; i < len; ++i) o[start + i] = unary_float<u>(xb[i]);
        }
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) o[i] = unary_one<u>(x[i]);
  });
}

// ---- binary ---------------------------------------------------------------------------------

// Each works on the compute type C (float for float16, the type itself otherwise).
struct Power {
  template <typename C>
  static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      // Exact, wrapping like numpy for b >= 0. A negative exponent gives what MXNet's
      // float power truncates to: 1 for a == 1, +-1 for a == -1, 0 otherwise.
      if constexpr (std::is_signed_v<C>) {
        if (b < 0) {
          if (a == 1) return 1;
          if (a == -1) return (b % 2 == 0) ? C(1) : C(-1);
          return 0;
        }
      }
      using W = std::make_unsigned_t<C>;
      W result = 1, base = static_cast<W>(a);
      for (auto e = static_cast<std::make_unsigned_t<C>>(b); e != 0; e >>= 1) {
        if (e & 1) result = static_cast<W>(result * base);
        base = static_cast<W>(base * base);
      }
      return static_cast<C>(result);
    } else {
      return std::pow(a, b);
    }
  }
};
// MXNet's maximum / minimum: NaN in either operand propagates.
struct Maximum {
  template <typename C>
  static C f(C a, C b) {
    if constexpr (!std::is_integral_v<C>) {
      if (std::isnan(a)) return a;
    }
    return a > b ? a : b;
  }
};
struct Minimum {
  template <typename C>
  static C f(C a, C b) {
    if constexpr (!std::is_integral_v<C>) {
      if (std::isnan(a)) return a;
    }
    return a < b ? a : b;
  }
};
// Python's sign rule (the result has the divisor's sign); x % 0 is 0 for every dtype.
struct Mod {
  template <typename C>
  static C f(C a, C b) {
    if (b == 0) return 0;
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return 0;  // also INT_MIN % -1, which would trap
        const C r = static_cast<C>(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<C>(r + b) : r;
      } else {
        return static_cast<C>(a % b);
      }
    } else {
      const double x = a, y = b;
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      if (r == 0) r = std::copysign(0.0, y);  // numpy's zero takes the divisor's sign
      return static_cast<C>(r);
    }
  }
};
struct Hypot {
  template <typename C>
  static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      return from_double<C>(std::hypot(static_cast<double>(a), static_cast<double>(b)));
    } else {
      return std::hypot(a, b);
    }
  }
};
#define NANOMX_COMPARE(Name, expr) \
  struct Name {                    \
    template <typename C>          \
    static C f(C a, C b) {         \
      return (expr) ? C(1) : C(0); \
    }                              \
  };
NANOMX_COMPARE(Equal, a == b)
NANOMX_COMPARE(NotEqual, a != b)
NANOMX_COMPARE(Greater, a > b)
NANOMX_COMPARE(GreaterEqual, a >= b)
NANOMX_COMPARE(Lesser, a < b)
NANOMX_COMPARE(LesserEqual, a <= b)
NANOMX_COMPARE(LogicalAnd, a != 0 && b != 0)
NANOMX_COMPARE(LogicalOr, a != 0 || b != 0)
NANOMX_COMPARE(LogicalXor, (a != 0) != (b != 0))
#undef NANOMX_COMPARE

template <typename F>
void binary_kernel(const ParsedParams&, std::span<const NDArray> in,
                   std::span<const NDArray> outs) {
  dispatch_dtype(outs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    broadcast_binary<T>(in[0], in[1], outs[0], [](T a, T b) { return apply<F>(a, b); });
  });
}

// x ** s for the exponents scripts use most (2, 1, 0.5, -1), without a pow call per element
// (vectorized, 50x faster for a ** 2): x * x, x, sqrt(x) and 1 / x are correctly rounded, where
// libm's pow is off by an ulp in about 0.1 % of cases. False for any other exponent.
template <typename T>
bool power_fast(const T* x, T* o, int64_t n, double s) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (s == 2) {
      for (int64_t i = 0; i < n; ++i) o[i] = x[i] * x[i];
    } else if (s == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = x[i];
    } else if (s == 0.5) {
      for (int64_t i = 0; i < n; ++i) o[i] = std::sqrt(x[i]);
    } else if (s == -1) {
      for (int64_t i = 0; i < n; ++i) o[i] = T(1) / x[i];
    } else {
      return false;
    }
    return true;
  } else {
    return false;
  }
}

// The scalar is cast to the array's dtype first (as MXNet). `reversed`: s op x.
template <typename F, bool reversed>
void scalar_kernel(const ParsedParams& p, std::span<const NDArray> in,
                   std::span<const NDArray> outs) {
  const double scalar = p.get<ScalarParams>().scalar;
  const NDArray& out = outs[0];
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T s = from_double<T>(scalar);
    const T* x = in[0].data_as<T>();
    T* o = out.data_as<T>();
    const int64_t n = out.size();
    if constexpr (std::is_same_v<F, Power> && !reversed) {
      if (power_fast(x, o, n, to_double(s))) return;
    }
    scalar_map<F, reversed>(x, o, n, s);
  });
}

template <typename F>
void register_binary(const std::string& op, bool reversed) {
  constexpr DeviceType kCPU = DeviceType::kCPU;
  register_kernel("broadcast_" + op, kCPU, binary_kernel<F>);
  register_kernel("_" + op, kCPU, binary_kernel<F>);
  register_kernel("_" + op + "_scalar", kCPU, scalar_kernel<F, false>);
  if (reversed) register_kernel("_r" + op + "_scalar", kCPU, scalar_kernel<F, true>);
}

}  // namespace

void register_math_kernels() {
  constexpr DeviceType kCPU = DeviceType::kCPU;
#define NANOMX_UNARY_REGISTER(name, Enum, integers, value, grad, derivative) \
  register_kernel(#name, kCPU, unary_kernel<U::k##Enum>);
  NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_REGISTER)
#undef NANOMX_UNARY_REGISTER

  register_binary<Power>("power", true);
  register_binary<Maximum>("maximum", false);
  register_binary<Minimum>("minimum", false);
  register_binary<Mod>("mod", true);
  register_binary<Hypot>("hypot", false);
  register_binary<Equal>("equal", false);
  register_binary<NotEqual>("not_equal", false);
  register_binary<Greater>("greater", false);
  register_binary<GreaterEqual>("greater_equal", false);
  register_binary<Lesser>("lesser", false);
  register_binary<LesserEqual>("lesser_equal", false);
  register_binary<LogicalAnd>("logical_and", false);
  register_binary<LogicalOr>("logical_or", false);
  register_binary<LogicalXor>("logical_xor", false);
}

}  // namespace nanomx::ops::cpu
