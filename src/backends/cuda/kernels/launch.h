// The CUDA kernels' launchers (the .cu files of this folder, one per operator family), with a
// plain interface so that only the .cu files go through nvcc; the operators' kernels (the .cc
// files) call them with the worker's stream. The float dtypes, and the integer ones where a
// launcher says so (docs/cuda.md).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/unary_math.h"

namespace nanomx::ops::cuda {

// The binary operators, elementwise, broadcast and with a scalar (as the CPU's functors in
// cpu/math.cc: maximum/minimum propagate a NaN, mod takes the divisor's sign, the comparisons
// and logical operators give 1 or 0 in the operands' type).
enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPower,
  kMaximum,
  kMinimum,
  kMod,
  kHypot,
  kEqual,
  kNotEqual,
  kGreater,
  kGreaterEqual,
  kLesser,
  kLesserEqual,
  kLogicalAnd,
  kLogicalOr,
  kLogicalXor
};
// The unary operators, as cpu/math.cc's (rint: ties to the floor, as MXNet's; sign of NaN: 0).
enum class UnaryOp {
  kNegative,
  kSquare,
  kSqrt,
  kSoftRelu,  // Activation's softrelu
// The unary math operators (ops/unary_math.h).
#define NANOMX_UNARY_ENUM(name, Enum, integers, value, grad, derivative) k##Enum,
  NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_ENUM)
#undef NANOMX_UNARY_ENUM
};
// The activation's derivative from its output y (relu, sigmoid, tanh, softrelu) or, for
// softsign, from its input.
enum class ActGrad { kRelu, kSigmoid, kTanh, kSoftRelu, kSoftSign };

constexpr int kMaxDims = 8;
// An output index space and each operand's element strides over it (0 where broadcast).
struct Broadcast {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t a_strides[kMaxDims] = {};
  int64_t b_strides[kMaxDims] = {};
};

// The element types (nanomx's seven dtypes) and a tensor's data with its type: the launchers
// run the kernel's instantiation for the output's type, and every operand has that type
// (gpu_kernel in gpu_kernel.h checks). The arithmetic launchers marked "any dtype" take the integer
// types too, with the CPU's integer semantics; the others take float32, float64 and float16 only.
enum class Elem { kFloat32, kFloat64, kFloat16, kUint8, kInt8, kInt32, kInt64 };
size_t elem_size(Elem e);
struct ConstTensor {
  const void* data = nullptr;
  Elem elem = Elem::kFloat32;
};
struct Tensor {
  void* data = nullptr;
  Elem elem = Elem::kFloat32;
  operator ConstTensor() const { return {data, elem}; }  // NOLINT: a tensor is readable
};

// Launchers return the launch's status (cudaGetLastError), not the kernel's: that surfaces at
// the operation's completion event. Scalars come as double and are used in the kernel's
// computing type (double for float64, the integer type itself, float otherwise).
// binary, binary_broadcast, scalar, unary, fill, cast, reduce, arg_reduce, clip, arange,
// one_hot, linspace, eye and fill_strided take any dtype; the rest the float types only.
cudaError_t binary(BinaryOp op, ConstTensor a, ConstTensor b, Tensor out, int64_t n,
                   cudaStream_t stream);
cudaError_t binary_broadcast(BinaryOp op, ConstTensor a, ConstTensor b, Tensor out, int64_t n,
                             const Broadcast& bc, cudaStream_t stream);
// out = x op s, or s op x when `reversed`; s first rounded to x's type, as the CPU does.
cudaError_t scalar(BinaryOp op, bool reversed, ConstTensor x, double s, Tensor out, int64_t n,
                   cudaStream_t stream);
cudaError_t unary(UnaryOp op, ConstTensor x, Tensor out, int64_t n, cudaStream_t stream);
cudaError_t fill(Tensor out, double value, int64_t n, cudaStream_t stream);
// out[i] = x[i] converted to out's type as the CPU's Cast (numpy's astype): floats round to
// nearest, integers wrap, floats truncate toward zero into integers.
cudaError_t cast(ConstTensor x, Tensor out, int64_t n, cudaStream_t stream);
// How reduce combines: the sums in double (kAbsSum: of |x|, kSquareSum: of x^2, the NaN
// forms skipping NaN), kMax / kMin with a NaN anywhere the result (numpy's rule).
enum class Reducer { kSum, kProd, kMax, kMin, kNanSum, kNanProd, kAbsSum, kSquareSum };
// out[o * inner + i] = finish(reduce_j x[(o * len + j) * inner + i]), finish: times `scale`,
// then the square root when `root` (norm 2). On integers, as the CPU: sums and products wrap
// (modulo 2^64, then to out's width), max and min are exact, and `scale` is ignored: an integer
// mean passes its count as int_mean_count (the wrapped sum divided by it, truncating); 0
// otherwise. The integer norms go through double.
cudaError_t reduce(Reducer r, ConstTensor x, Tensor out, int64_t outer, int64_t len, int64_t inner,
                   double scale, bool root, int64_t int_mean_count, cudaStream_t stream);
// argmax (max) / argmin along the middle axis of (outer, len, inner): the first extreme's index
// (a NaN counts as the extreme), in out's type.
cudaError_t arg_reduce(bool max, ConstTensor x, Tensor out, int64_t outer, int64_t len,
                       int64_t inner, cudaStream_t stream);
// Softmax along the middle axis of (outer, len, inner), of x / temperature; log: log_softmax.
cudaError_t softmax(ConstTensor x, Tensor out, int64_t outer, int64_t len, int64_t inner,
                    double temperature, bool log, cudaStream_t stream);
// The gradient of softmax (kind 0), log_softmax (1) or softmin (2) along the middle axis of
// (outer, len, inner), from dy and the forward output y, as the CPU kernel.
cudaError_t softmax_grad(int kind, ConstTensor dy, ConstTensor y, Tensor dx, int64_t outer,
                         int64_t len, int64_t inner, double temperature, cudaStream_t stream);
// out[i] = scale * x[index of i by bc.a_strides]: x broadcast to out's shape (bc.shape).
cudaError_t broadcast_scaled(ConstTensor x, Tensor out, int64_t n, const Broadcast& bc,
                             double scale, cudaStream_t stream);
// The unary and scalar operators' derivatives (ops/backward_ops.cc's table): dx = dy * d(v, s),
// v the forward output or input as the table says, s the forward call's scalar.
enum class UnaryGradOp {
  kSqrt,    // from the output y
  kSquare,  // from the input x
// The unary math operators with a derivative (ops/unary_math.h), from x or y as its row says.
#define NANOMX_UNARY_GRAD_ENUM(name, Enum, integers, value, grad, derivative) \
  NANOMX_UNARY_IF_DERIVATIVE(grad, k##Enum, )
  NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_GRAD_ENUM)
#undef NANOMX_UNARY_GRAD_ENUM
  // from the input x and the forward call's scalar s
  kRDivScalar,
  kPowerScalar,
  kRPowerScalar,
  kMaximumScalar,
  kMinimumScalar,
  kHypotScalar,
  kModScalar,
  kRModScalar
};
cudaError_t unary_grad(UnaryGradOp op, ConstTensor dy, ConstTensor v, Tensor dx, int64_t n,
                       double s, cudaStream_t stream);
// clip: out = min(max(x, lo), hi) (lo and hi rounded to x's type first, as the CPU); its
// gradient dx = dy where lo <= x <= hi, else 0.
cudaError_t clip(ConstTensor x, Tensor out, int64_t n, double lo, double hi, cudaStream_t stream);
cudaError_t clip_grad(ConstTensor dy, ConstTensor x, Tensor dx, int64_t n, double lo, double hi,
                      cudaStream_t stream);
// _arange: out[i] = start + (i / repeat) * step (start and step rounded to out's type first).
cudaError_t arange(Tensor out, int64_t n, double start, double step, int64_t repeat,
                   cudaStream_t stream);
// An array of indices (or conditions) of any numeric type; floats truncate toward zero, NaN and
// infinities read as INT64_MIN (out of every range), as the CPU's index_of.
enum class IndexType { kF32, kF64, kF16, kI32, kI64, kU8, kI8 };
struct Indices {
  const void* data = nullptr;
  IndexType type = IndexType::kF32;
};
// take along an axis of x viewed as (outer, n, inner): out[(o * m + j) * inner + i] =
// x[(o * n + k_j) * inner + i], k_j = idx[j] clipped (mode 0), wrapped (1) or, raising (2), the
// index as given (negative from the end); in mode 2 the smallest position of an index out of
// range is written to *bad (which holds a value above every position before), its rows left
// unwritten.
cudaError_t take(const void* x, Indices idx, void* out, size_t elem_bytes, int64_t outer, int64_t n,
                 int64_t inner, int64_t m, int mode, int64_t* bad, cudaStream_t stream);
// pick: out[o * inner + i] = x[(o * len + k) * inner + i], k = idx[o * inner + i] clipped or
// (wrap) wrapped.
cudaError_t pick(const void* x, Indices idx, void* out, size_t elem_bytes, int64_t outer,
                 int64_t len, int64_t inner, bool wrap, cudaStream_t stream);
// one_hot: out[i * depth + j] = on if j == idx[i] else off.
cudaError_t one_hot(Indices idx, Tensor out, int64_t n, int64_t depth, double on, double off,
                    cudaStream_t stream);
// where: out[i] = cond[i / row] != 0 ? x[i] : y[i] (row > 1: one condition per row of x).
cudaError_t where(Indices cond, const void* x, const void* y, void* out, size_t elem_bytes,
                  int64_t n, int64_t row, cudaStream_t stream);
// _linspace: out[i] = start + step * i, in double; _eye: out (rows x cols) = 1 on the k-th
// diagonal, 0 elsewhere.
cudaError_t linspace(Tensor out, int64_t n, double start, double step, cudaStream_t stream);
cudaError_t eye(Tensor out, int64_t rows, int64_t cols, int64_t k, cudaStream_t stream);
// A walk over an index space of `shape`: element at index (i_0, ..., i_{ndim-1}) is read at
// src_base + sum(i_d * src_strides[d]) and written at dst_base + sum(i_d * dst_strides[d]),
// in elements (strides may be 0 or negative). The layout operators are all such walks.
struct Strided {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t src_strides[kMaxDims] = {};
  int64_t dst_strides[kMaxDims] = {};
  int64_t src_base = 0, dst_base = 0;
};
// Copies the n = prod(shape) elements of `elem_bytes` (2, 4 or 8) bytes each, any dtype.
cudaError_t copy_strided(const void* src, void* dst, size_t elem_bytes, int64_t n, const Strided& s,
                         cudaStream_t stream);
// Writes `value` (rounded to dst's type) at the n positions the walk's dst side visits.
cudaError_t fill_strided(Tensor dst, double value, int64_t n, const Strided& s,
                         cudaStream_t stream);
// The binary operators' partial derivatives (ops/backward_ops.cc's table).
enum class BinaryGradOp { kAdd, kSub, kMul, kDiv, kPower, kMaximum, kMinimum, kHypot, kMod };
// dl[i] = dy[i] * d(l op r)/dl and dr[i] = dy[i] * d/dr at l[bc.a_strides index], r[bc.b_strides
// index], over the n elements of the output shape bc.shape (l and r may be null for kAdd/kSub).
cudaError_t binary_grad(BinaryGradOp op, ConstTensor dy, ConstTensor l, ConstTensor r, Tensor dl,
                        Tensor dr, int64_t n, const Broadcast& bc, cudaStream_t stream);
// out[i * n + j] += bias[j] for i < m
cudaError_t add_bias(Tensor out, ConstTensor bias, int64_t m, int64_t n, cudaStream_t stream);
// dx = dy * f'(v)
cudaError_t activation_grad(ActGrad act, ConstTensor dy, ConstTensor v, Tensor dx, int64_t n,
                            cudaStream_t stream);
// sgd_update (mom's data null) / sgd_mom_update, as the CPU kernels.
cudaError_t sgd(ConstTensor w, ConstTensor g, Tensor mom, Tensor out, int64_t n, double lr,
                double wd, double rescale, double clip, double momentum, cudaStream_t stream);

// adam_update: g' = clip(rescale*g + wd*w); mean = b1*mean + (1-b1)*g';
// var = b2*var + (1-b2)*g'^2; out = w - lr*mean/(sqrt(var) + eps), as the CPU kernel.
cudaError_t adam(ConstTensor w, ConstTensor g, Tensor mean, Tensor var, Tensor out, int64_t n,
                 double lr, double wd, double rescale, double clip, double beta1, double beta2,
                 double epsilon, cudaStream_t stream);
// mp_sgd_update (mom null) / mp_sgd_mom_update: sgd on the float32 master copy w32 (and float32
// momentum), then out = w32 in out's type.
cudaError_t mp_sgd(ConstTensor g, float* mom, float* w32, Tensor out, int64_t n, float lr, float wd,
                   float rescale, float clip, float momentum, cudaStream_t stream);

// _random_uniform (uniform) on [a, b) or _random_normal with mean a and standard deviation b:
// element i from SplitMix64's output at position i of the stream that starts at `key` (a
// counter-based generator: any element computed alone, so any grid gives the same numbers),
// normals by Box-Muller on the pairs (2j, 2j + 1).
cudaError_t random_fill(bool uniform, Tensor out, int64_t n, uint64_t key, double a, double b,
                        cudaStream_t stream);

// SoftmaxOutput's backward for index labels (one per row): rows x classes, classes `inner`
// apart (row r starts at (r / inner) * classes * inner + r % inner); grad = (y - target) * scale
// where target is 1 - smooth_alpha at the label and smooth_alpha / (classes - 1) elsewhere,
// rows whose label is `ignore_label` (use_ignore) get 0, out_grad multiplies by y. scale is
// grad_scale divided by: 1 (null), `batch` (batch), the count of non-ignored labels (valid,
// counted on the device; at least 1); multi_output without valid also divides by inner.
struct SoftmaxOutputGrad {
  int64_t rows = 0, classes = 0, inner = 1;
  float grad_scale = 1, ignore_label = -1, smooth_alpha = 0;
  bool use_ignore = false, out_grad = false, divide_by_valid = false, divide_by_inner = false;
  float batch = 1;  // the divisor of normalization "batch" (1 otherwise)
};
cudaError_t softmax_output_grad(ConstTensor y, ConstTensor label, Tensor grad,
                                const SoftmaxOutputGrad& g, cudaStream_t stream);
// grad[i] = (y[i] - label[i]) * scale: probability labels of the output's shape.
cudaError_t softmax_output_grad_dense(ConstTensor y, ConstTensor label, Tensor grad, int64_t n,
                                      double scale, cudaStream_t stream);

// ---- index_kernels.cu: sorting, gather/scatter by index tuples, padding, sampling ----

// sort / argsort / topk over `lanes` = outer * inner lanes of `len` elements `inner` apart (lane
// (o, i) holds x[(o * len + j) * inner + i]), in the CPU's order (backends/cpu/kernels/index.cc):
// by value, ascending or not, NaN last ascending and first descending, equal values in index order
// -- a total order, so the result is the CPU's exactly. A segmented merge sort of (value, index)
// pairs in `scratch` (sort_scratch_bytes); then the first k of each lane written to whichever
// outputs have data: `values` (x's dtype) and `indices` (any dtype) laid out as (outer, k,
// inner), `mask` (x's dtype, x's shape) set to 1 at the positions of the first k (the caller
// zeroes it first).
size_t sort_scratch_bytes(Elem e, int64_t n);
cudaError_t sort(ConstTensor x, int64_t outer, int64_t len, int64_t inner, int64_t k, bool ascend,
                 void* scratch, Tensor values, Tensor indices, Tensor mask, cudaStream_t stream);
// _shuffle: out's rows (axis 0, `row` elements of elem_bytes each) a permutation of x's, drawn
// from the counter-based stream at `key` (random sort keys); scratch: shuffle_scratch_bytes.
size_t shuffle_scratch_bytes(int64_t rows);
cudaError_t shuffle_rows(const void* x, void* out, int64_t rows, int64_t row, size_t elem_bytes,
                         uint64_t key, void* scratch, cudaStream_t stream);

// gather_nd / scatter_nd: `count` index tuples of `m` axes (idx[a * count + j] is tuple j's
// index on axis a) into data of dims `dims` (the first m index, the rest form a slab of `slab`
// elements). nd_offsets writes each tuple's slab offset (negative indices wrap once), -1 for a
// tuple out of range (the copies skip it), and the smallest such j to *bad (which holds a value
// above every j before: the caller sets it).
struct NdIndex {
  int64_t m = 0, count = 0;
  int64_t dims[kMaxDims] = {};
};
cudaError_t nd_offsets(Indices idx, const NdIndex& nd, int64_t* offsets, int64_t* bad,
                       cudaStream_t stream);
// out[j * slab + t] = x[offsets[j] * slab + t] (nothing where offsets[j] < 0)
cudaError_t gather_slabs(const void* x, const int64_t* offsets, void* out, size_t elem_bytes,
                         int64_t count, int64_t slab, cudaStream_t stream);
// out[offsets[j] * slab + t] = v[j * slab + t]; where tuples repeat, the last one's values win
// (as the CPU's loop): `winner` is scratch of out_slabs int64.
cudaError_t scatter_slabs(const void* v, const int64_t* offsets, void* out, size_t elem_bytes,
                          int64_t count, int64_t slab, int64_t* winner, int64_t out_slabs,
                          cudaStream_t stream);
// The smallest i < n whose index idx[i] lies outside [0, limit), to *bad (which holds a value
// above every i before).
cudaError_t find_bad_index(Indices idx, int64_t n, int64_t limit, int64_t* bad,
                           cudaStream_t stream);
// fill_element_0index: out[i * cols + idx[i]] = val[i] for each of the `rows` rows (indices
// already checked).
cudaError_t fill_element(const void* val, Indices idx, void* out, size_t elem_bytes, int64_t rows,
                         int64_t cols, cudaStream_t stream);

// Pad: out (shape out_shape) from x (shape in_shape), `before[d]` elements of padding before
// axis d; outside the data, `value` (constant, rounded to out's type) or the edge element, or
// the reflection about the end elements. Any dtype.
struct PadLayout {
  int ndim = 0;
  int64_t in_shape[kMaxDims] = {};
  int64_t out_shape[kMaxDims] = {};
  int64_t before[kMaxDims] = {};
  int mode = 0;  // 0 constant, 1 edge, 2 reflect
};
cudaError_t pad(ConstTensor x, Tensor out, int64_t n, const PadLayout& layout, double value,
                cudaStream_t stream);

// The random samplers: element i of out (n elements, float dtypes) from the counter-based
// stream at `key`, each element its own substream (any grid gives the same numbers); parameters
// a, b are the scalars `a0`, `b0` or, where `a.data` is set, a[i / per] and b[i / per] (any
// numeric dtype; b null: b0). Uniform [a, b), normal (mean a, sd b), gamma (shape a, scale b:
// Marsaglia-Tsang), exponential (rate a), poisson (mean a: multiplication below 10, Hoermann's
// PTRS above), randint [a, b).
enum class Sampler { kUniform, kNormal, kGamma, kExponential, kPoisson, kRandint };
cudaError_t sample(Sampler kind, Tensor out, int64_t n, int64_t per, Indices a, Indices b,
                   double a0, double b0, uint64_t key, cudaStream_t stream);
// _sample_multinomial: `per` draws from each of `rows` rows of k probabilities (any numeric
// dtype) by inverting the CDF, the class into out (any dtype) and, where logp.data is set, the
// log of its probability into logp (float dtypes).
cudaError_t multinomial(Indices prob, int64_t rows, int64_t k, int64_t per, Tensor out, Tensor logp,
                        uint64_t key, cudaStream_t stream);

}  // namespace nanomx::ops::cuda
