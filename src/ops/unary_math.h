// Every elementwise unary math operator, once (docs/runtime.md, "Adding an operator"). The
// operator definitions (ops/math.cc), their gradient tables and rules (ops/backward_ops.cc,
// ops/gradient_rules.cc), the CPU kernels (backends/cpu/kernels/math.cc) and the CUDA kernels
// (backends/cuda/kernels/launch.h, elemwise.cu, backward.cu and their .cc files) are generated
// from this table: a row here is the whole operator on every device.
//
// NANOMX_UNARY_MATH_OPS(X) calls X(name, Enum, integers, value, grad, derivative) per operator:
//   name        the operator (mx.nd.<name>, mx.sym.<name>)
//   Enum        its enumerator k<Enum> in the kernels' operation enums
//   integers    kExact: computed in the integer type itself (the kernels' integer code says
//               how); kViaDouble: through double, then converted back as numpy's astype
//   value       f(x) for x of the compute type V (float or double; float16 computes in float);
//               MATH(fn) is the backend's fn (std::fn on the CPU, the device's fn on CUDA)
//   grad        kFromInput / kFromOutput: _backward_<name>(dy, v) = dy * derivative, where v is
//               the forward input x / output y; kZero: zero wherever defined, nothing flows;
//               kSpecial: a rule written in ops/gradient_rules.cc; kNone: no gradient
//   derivative  d(v) in double, with MATH(fn) as above (0 where grad has none)
// The constants: kPi, kLn2, kLn10 (double; V(kPi) in the compute type).
//
// This is a list of macros, not of code: it is read by the host compiler and by nvcc.
#pragma once

// clang-format off
#define NANOMX_UNARY_MATH_OPS(X)                                                              \
  X(exp,         Exp,        kViaDouble, MATH(exp)(x),                 kSpecial,    0)         \
  X(expm1,       Expm1,      kViaDouble, MATH(expm1)(x),               kFromInput,  MATH(exp)(v)) \
  X(log,         Log,        kViaDouble, MATH(log)(x),                 kFromInput,  1 / v)     \
  X(log1p,       Log1p,      kViaDouble, MATH(log1p)(x),               kFromInput,  1 / (1 + v)) \
  X(log2,        Log2,       kViaDouble, MATH(log2)(x),                kFromInput,  1 / (v * kLn2)) \
  X(log10,       Log10,      kViaDouble, MATH(log10)(x),               kFromInput,  1 / (v * kLn10)) \
  X(abs,         Abs,        kExact,     MATH(fabs)(x),                kFromInput,             \
    v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0))                                                       \
  /* MXNet's sign: NaN gives 0 (neither < 0 nor > 0). */                                      \
  X(sign,        Sign,       kExact,     x < V(0) ? V(-1) : (x > V(0) ? V(1) : V(0)), kZero, 0) \
  X(rsqrt,       Rsqrt,      kViaDouble, V(1) / MATH(sqrt)(x),         kFromOutput, -0.5 * v * v * v) \
  X(cbrt,        Cbrt,       kViaDouble, MATH(cbrt)(x),                kFromOutput, 1 / (3 * v * v)) \
  X(rcbrt,       Rcbrt,      kViaDouble, V(1) / MATH(cbrt)(x),         kFromInput,             \
    -1 / (3 * v * MATH(cbrt)(v)))                                                             \
  X(reciprocal,  Reciprocal, kViaDouble, V(1) / x,                     kFromInput,  -1 / (v * v)) \
  X(sin,         Sin,        kViaDouble, MATH(sin)(x),                 kFromInput,  MATH(cos)(v)) \
  X(cos,         Cos,        kViaDouble, MATH(cos)(x),                 kFromInput,  -MATH(sin)(v)) \
  X(tan,         Tan,        kViaDouble, MATH(tan)(x),                 kFromInput,             \
    1 / (MATH(cos)(v) * MATH(cos)(v)))                                                        \
  X(arcsin,      Arcsin,     kViaDouble, MATH(asin)(x),                kFromInput,             \
    1 / MATH(sqrt)(1 - v * v))                                                                \
  X(arccos,      Arccos,     kViaDouble, MATH(acos)(x),                kFromInput,             \
    -1 / MATH(sqrt)(1 - v * v))                                                               \
  X(arctan,      Arctan,     kViaDouble, MATH(atan)(x),                kFromInput,  1 / (1 + v * v)) \
  X(sinh,        Sinh,       kViaDouble, MATH(sinh)(x),                kFromInput,  MATH(cosh)(v)) \
  X(cosh,        Cosh,       kViaDouble, MATH(cosh)(x),                kFromInput,  MATH(sinh)(v)) \
  X(tanh,        Tanh,       kViaDouble, MATH(tanh)(x),                kFromOutput, 1 - v * v) \
  X(arcsinh,     Arcsinh,    kViaDouble, MATH(asinh)(x),               kFromInput,             \
    1 / MATH(sqrt)(v * v + 1))                                                                \
  X(arccosh,     Arccosh,    kViaDouble, MATH(acosh)(x),               kFromInput,             \
    1 / MATH(sqrt)(v * v - 1))                                                                \
  X(arctanh,     Arctanh,    kViaDouble, MATH(atanh)(x),               kFromInput,  1 / (1 - v * v)) \
  X(degrees,     Degrees,    kViaDouble, x * (V(180) / V(kPi)),        kFromInput,  180 / kPi) \
  X(radians,     Radians,    kViaDouble, x * (V(kPi) / V(180)),        kFromInput,  kPi / 180) \
  X(sigmoid,     Sigmoid,    kViaDouble, V(1) / (V(1) + MATH(exp)(-x)), kFromOutput, v * (1 - v)) \
  /* MXNet's relu keeps NaN, and its gradient lets a NaN through (relu_grad). */              \
  X(relu,        Relu,       kExact,     x > V(0) || x != x ? x : V(0), kFromOutput,           \
    v != v ? v : (v > 0 ? 1.0 : 0.0))                                                         \
  X(softsign,    SoftSign,   kViaDouble, x / (V(1) + MATH(fabs)(x)),   kFromInput,             \
    1 / ((1 + MATH(fabs)(v)) * (1 + MATH(fabs)(v))))                                          \
  X(floor,       Floor,      kExact,     MATH(floor)(x),               kZero,       0)         \
  X(ceil,        Ceil,       kExact,     MATH(ceil)(x),                kZero,       0)         \
  /* half away from zero */                                                                   \
  X(round,       Round,      kExact,     MATH(round)(x),               kZero,       0)         \
  /* MXNet's rint: ties go to the floor (1.5 -> 1, -1.5 -> -2), not to even. */               \
  X(rint,        Rint,       kExact,                                                          \
    (x - MATH(floor)(x)) <= (MATH(ceil)(x) - x) ? MATH(floor)(x) : MATH(ceil)(x), kZero, 0)  \
  X(fix,         Fix,        kExact,     MATH(trunc)(x),               kZero,       0)         \
  X(trunc,       Trunc,      kExact,     MATH(trunc)(x),               kZero,       0)         \
  X(erf,         Erf,        kViaDouble, MATH(erf)(x),                 kFromInput,             \
    2 / MATH(sqrt)(kPi) * MATH(exp)(-v * v))                                                  \
  X(gamma,       Gamma,      kViaDouble, MATH(tgamma)(x),              kNone,       0)         \
  X(gammaln,     Gammaln,    kViaDouble, MATH(lgamma)(x),              kNone,       0)         \
  X(logical_not, LogicalNot, kExact,     x == V(0) ? V(1) : V(0),      kNone,       0)
// clang-format on

// NANOMX_UNARY_IF_DERIVATIVE(grad, tokens...): the tokens for the rows with a backward
// operator (kFromInput, kFromOutput), nothing for the others.
#define NANOMX_UNARY_IF_DERIVATIVE(grad, ...) NANOMX_UNARY_IF_DERIVATIVE_##grad(__VA_ARGS__)
#define NANOMX_UNARY_IF_DERIVATIVE_kFromInput(...) __VA_ARGS__
#define NANOMX_UNARY_IF_DERIVATIVE_kFromOutput(...) __VA_ARGS__
#define NANOMX_UNARY_IF_DERIVATIVE_kZero(...)
#define NANOMX_UNARY_IF_DERIVATIVE_kSpecial(...)
#define NANOMX_UNARY_IF_DERIVATIVE_kNone(...)

namespace nanomx::ops::unary_math {
enum Integers { kExact, kViaDouble };
enum Grad { kFromInput, kFromOutput, kZero, kSpecial, kNone };
constexpr double kPi = 3.14159265358979323846;
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn10 = 2.30258509299404568402;
}  // namespace nanomx::ops::unary_math
