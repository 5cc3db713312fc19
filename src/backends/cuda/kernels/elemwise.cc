// The CUDA kernels of the elementwise operators: the binary, scalar and unary arithmetic and
// math (integer dtypes too), the copies and casts, clip.
#include <string>
#include <utility>

#include "backends/cuda/kernels/gpu_kernel.h"
#include "ops/op_params.h"

namespace nanomx::ops::cuda_kernels {

// The element strides of `part` over `full` (aligned on the right): 0 on the axes `part`
// broadcasts along.
void broadcast_strides_into(const Shape& part, const Shape& full, int64_t* strides) {
  const auto own = part.strides();
  for (int d = 0; d < full.ndim(); ++d) {
    const int i = d - (full.ndim() - part.ndim());
    strides[d] = i < 0 || (part[i] == 1 && full[d] != 1) ? 0 : own[static_cast<size_t>(i)];
  }
}

// _copyto, _copy, Cast between equal dtypes: a device copy (either side may be host memory:
// unified addressing).
void copy(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  NANOMX_CHECK(in[0].dtype() == out[0].dtype())
      << p.op() << ": the CUDA kernel copies without converting (" << dtype_name(in[0].dtype())
      << " to " << dtype_name(out[0].dtype()) << " is not supported yet)";
  if (out[0].nbytes() == 0 || in[0].data() == out[0].data()) return;
  NANOMX_CUDA_CALL(
      cudaMemcpyAsync(out[0].data(), in[0].data(), out[0].nbytes(), cudaMemcpyDefault, s));
}

namespace {

template <cu::BinaryOp Op>
void binary(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  const Shape& os = out[0].shape();
  if (in[0].shape() == os && in[1].shape() == os) {
    check_launch(p, cu::binary(Op, f(in[0]), f(in[1]), fw(out[0]), out[0].size(), s));
    return;
  }
  NANOMX_CHECK(os.ndim() <= cu::kMaxDims)
      << p.op() << ": broadcasting over " << os.ndim() << " axes; the CUDA kernel handles up to "
      << cu::kMaxDims;
  cu::Broadcast bc;
  bc.ndim = os.ndim();
  broadcast_strides_into(in[0].shape(), os, bc.a_strides);
  broadcast_strides_into(in[1].shape(), os, bc.b_strides);
  for (int d = 0; d < os.ndim(); ++d) bc.shape[d] = os[d];
  check_launch(p, cu::binary_broadcast(Op, f(in[0]), f(in[1]), fw(out[0]), out[0].size(), bc, s));
}

// add_n (the gradient graphs' sums): left to right, as the CPU kernel.
void add_n(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
           cudaStream_t s) {
  const int64_t n = out[0].size();
  if (in.size() == 1) {
    if (in[0].data() != out[0].data() && n > 0) {
      NANOMX_CUDA_CALL(cudaMemcpyAsync(out[0].data(), in[0].data(), out[0].nbytes(),
                                       cudaMemcpyDeviceToDevice, s));
    }
    return;
  }
  check_launch(p, cu::binary(cu::BinaryOp::kAdd, f(in[0]), f(in[1]), fw(out[0]), n, s));
  for (size_t k = 2; k < in.size(); ++k) {
    check_launch(p, cu::binary(cu::BinaryOp::kAdd, f(out[0]), f(in[k]), fw(out[0]), n, s));
  }
}

// x op s, or s op x (kReversed: _rminus_scalar, _rdiv_scalar, ...).
template <cu::BinaryOp Op, bool kReversed>
void scalar(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  check_launch(p, cu::scalar(Op, kReversed, f(in[0]), p.get<ScalarParams>().scalar, fw(out[0]),
                             out[0].size(), s));
}

template <cu::UnaryOp Op>
void unary(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
           cudaStream_t s) {
  check_launch(p, cu::unary(Op, f(in[0]), fw(out[0]), out[0].size(), s));
}

// Cast between the float dtypes (a copy when they are equal).
void cast(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  if (in[0].dtype() == out[0].dtype()) {
    copy(p, in, out, s);
    return;
  }
  check_launch(p, cu::cast(f(in[0]), fw(out[0]), out[0].size(), s));
}

// _copyto: a copy between devices (either side may be host memory), converting where the
// dtypes differ (the output's decides, as the CPU's): an input elsewhere is first copied to a
// scratch on the output's GPU, where the cast kernel reads it.
void copy_to(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
             cudaStream_t s) {
  if (in[0].dtype() == out[0].dtype()) {
    copy(p, in, out, s);
    return;
  }
  if (out[0].size() == 0) return;
  if (in[0].ctx() == out[0].ctx()) {
    check_launch(p, cu::cast(f(in[0]), fw(out[0]), out[0].size(), s));
    return;
  }
  DeviceScratch staged(in[0].nbytes(), s);
  NANOMX_CUDA_CALL(
      cudaMemcpyAsync(staged.get(), in[0].data(), in[0].nbytes(), cudaMemcpyDefault, s));
  check_launch(p, cu::cast({staged.get(), elem_of(in[0].dtype())}, fw(out[0]), out[0].size(), s));
}

void clip(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const auto& c = p.get<ClipParams>();
  check_launch(p, cu::clip(f(in[0]), fw(out[0]), out[0].size(), c.lo, c.hi, s));
}

// A binary operator's four names: broadcast_<op>, _<op> (elementwise), _<op>_scalar and, where
// it exists, _r<op>_scalar.
template <cu::BinaryOp Op>
void register_binary_family(const std::function<void(std::string_view, Kernel)>& add,
                            const std::string& name, bool reversed) {
  constexpr Operands kSame = Operands::kSame;  // integer kernels too
  add("broadcast_" + name, gpu_kernel<binary<Op>, kSame>);
  add("_" + name, gpu_kernel<binary<Op>, kSame>);
  add("_" + name + "_scalar", gpu_kernel<scalar<Op, false>, kSame>);
  if (reversed) add("_r" + name + "_scalar", gpu_kernel<scalar<Op, true>, kSame>);
}

}  // namespace

void add_elemwise_kernels(const AddKernel& add) {
  using B = cu::BinaryOp;
  using U = cu::UnaryOp;
  // Arithmetic with integer kernels too: every operand of the output's dtype, any dtype.
  constexpr Operands kSame = Operands::kSame;
  for (const char* prefix : {"broadcast_", "elemwise_"}) {
    const std::string p = prefix;
    add(p + "add", gpu_kernel<binary<B::kAdd>, kSame>);
    add(p + "sub", gpu_kernel<binary<B::kSub>, kSame>);
    add(p + "mul", gpu_kernel<binary<B::kMul>, kSame>);
    add(p + "div", gpu_kernel<binary<B::kDiv>, kSame>);
  }
  add("_grad_add", gpu_kernel<binary<B::kAdd>, kSame>);
  add("add_n", gpu_kernel<add_n, kSame>);
  add("_identity_with_attr_like_rhs", gpu_kernel<copy, kSame>);
  add("_plus_scalar", gpu_kernel<scalar<B::kAdd, false>, kSame>);
  add("_minus_scalar", gpu_kernel<scalar<B::kSub, false>, kSame>);
  add("_rminus_scalar", gpu_kernel<scalar<B::kSub, true>, kSame>);
  add("_mul_scalar", gpu_kernel<scalar<B::kMul, false>, kSame>);
  add("_div_scalar", gpu_kernel<scalar<B::kDiv, false>, kSame>);
  add("_rdiv_scalar", gpu_kernel<scalar<B::kDiv, true>, kSame>);
  register_binary_family<B::kPower>(add, "power", true);
  register_binary_family<B::kMaximum>(add, "maximum", false);
  register_binary_family<B::kMinimum>(add, "minimum", false);
  register_binary_family<B::kMod>(add, "mod", true);
  register_binary_family<B::kHypot>(add, "hypot", false);
  register_binary_family<B::kEqual>(add, "equal", false);
  register_binary_family<B::kNotEqual>(add, "not_equal", false);
  register_binary_family<B::kGreater>(add, "greater", false);
  register_binary_family<B::kGreaterEqual>(add, "greater_equal", false);
  register_binary_family<B::kLesser>(add, "lesser", false);
  register_binary_family<B::kLesserEqual>(add, "lesser_equal", false);
  register_binary_family<B::kLogicalAnd>(add, "logical_and", false);
  register_binary_family<B::kLogicalOr>(add, "logical_or", false);
  register_binary_family<B::kLogicalXor>(add, "logical_xor", false);
  const std::pair<const char*, Kernel> unaries[] = {
      {"negative", gpu_kernel<unary<U::kNegative>, kSame>},
      {"square", gpu_kernel<unary<U::kSquare>, kSame>},
      {"sqrt", gpu_kernel<unary<U::kSqrt>, kSame>},
  // The unary math operators (ops/unary_math.h).
#define NANOMX_UNARY_KERNEL(name, Enum, integers, value, grad, derivative) \
  {#name, gpu_kernel<unary<U::k##Enum>, kSame>},
      NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_KERNEL)
#undef NANOMX_UNARY_KERNEL
  };
  for (const auto& [name, kernel] : unaries) add(name, kernel);
  add("_copyto", gpu_kernel<copy_to, Operands::kCopy>);
  add("Cast", gpu_kernel<cast, Operands::kAnyType>);
  add("_copy", gpu_kernel<copy, kSame>);
  add("clip", gpu_kernel<clip, kSame>);
  // Operators whose kernel is a copy (a new shape over the same elements, or the identity).
  for (const char* name : {"Reshape", "Flatten", "expand_dims", "squeeze", "_backward_copy",
                           "_backward_reshape", "LinearRegressionOutput"}) {
    add(name, gpu_kernel<copy, kSame>);
  }
  add("_backward_cast", gpu_kernel<cast, Operands::kAnyType>);
}

}  // namespace nanomx::ops::cuda_kernels
