// The CUDA kernels of the elementwise operators' gradients: the unary ones' (dy times the
// derivative) and the binary ones' (the partials, summed down where an input was broadcast).
#include <utility>
#include <vector>

#include "backends/cuda/kernels/gpu_kernel.h"
#include "ops/op_params.h"

namespace nanomx::ops::cuda_kernels {
namespace {

// _backward_clip (dy, x): dy where x was inside [lo, hi].
void clip_backward(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                   cudaStream_t s) {
  const auto& c = p.get<ClipParams>();
  check_launch(p, cu::clip_grad(f(in[0]), f(in[1]), fw(out[0]), out[0].size(), c.lo, c.hi, s));
}

// _backward_<unary>(dy, v) = dy * d(v[, scalar]).
template <cu::UnaryGradOp Op>
void unary_backward(const ParsedParams& p, std::span<const NDArray> in,
                    std::span<const NDArray> out, cudaStream_t s) {
  // The scalar operators' gradients (the table's last rows) read the forward call's scalar.
  const double scalar = Op >= cu::UnaryGradOp::kRDivScalar ? p.get<ScalarParams>().scalar : 0.0;
  check_launch(p, cu::unary_grad(Op, f(in[0]), f(in[1]), fw(out[0]), out[0].size(), scalar, s));
}

// The binary operators' gradients (dy[, lhs, rhs]) -> (d_lhs, d_rhs): the partials at full
// size, then, where an input was broadcast, summed down to its shape (sum_axes).
template <cu::BinaryGradOp Op>
void binary_backward(const ParsedParams& p, std::span<const NDArray> in,
                     std::span<const NDArray> out, cudaStream_t s) {
  const NDArray& dy = in[0];
  const Shape& full = dy.shape();
  const bool inputs = in.size() == 3;
  const Shape& sl = inputs ? in[1].shape() : full;
  const Shape& sr = inputs ? in[2].shape() : full;
  NANOMX_CHECK(full.ndim() <= cu::kMaxDims)
      << p.op() << ": " << full.ndim() << " axes; the CUDA kernel handles up to " << cu::kMaxDims;
  cu::Broadcast bc;
  bc.ndim = full.ndim();
  for (int d = 0; d < full.ndim(); ++d) bc.shape[d] = full[d];
  broadcast_strides_into(sl, full, bc.a_strides);
  broadcast_strides_into(sr, full, bc.b_strides);
  const cu::ConstTensor l = inputs ? f(in[1]) : cu::ConstTensor{nullptr, f(dy).elem};
  const cu::ConstTensor r = inputs ? f(in[2]) : cu::ConstTensor{nullptr, f(dy).elem};
  const int64_t n = dy.size();
  if (sl == full && sr == full) {
    check_launch(p, cu::binary_grad(Op, f(dy), l, r, fw(out[0]), fw(out[1]), n, bc, s));
    return;
  }
  if (n == 0) {
    check_launch(p, cu::fill(fw(out[0]), 0.0, out[0].size(), s));
    check_launch(p, cu::fill(fw(out[1]), 0.0, out[1].size(), s));
    return;
  }
  const size_t bytes = static_cast<size_t>(n) * cu::elem_size(f(dy).elem);
  void* temp = nullptr;
  NANOMX_CUDA_CALL(cudaMallocAsync(&temp, 2 * bytes, s));
  cu::Tensor pl = fw(out[0]), pr = fw(out[1]);
  pl.data = temp;
  pr.data = static_cast<char*>(temp) + bytes;
  try {
    check_launch(p, cu::binary_grad(Op, f(dy), l, r, pl, pr, n, bc, s));
    const std::vector<int64_t> dims(full.begin(), full.end());
    sum_axes(p, pl, dims, broadcast_axes(sl, full), out[0], 1.0, s);
    sum_axes(p, pr, dims, broadcast_axes(sr, full), out[1], 1.0, s);
  } catch (...) {
    (void)cudaFreeAsync(temp, s);
    throw;
  }
  NANOMX_CUDA_CALL(cudaFreeAsync(temp, s));
}

}  // namespace

void add_backward_kernels(const AddKernel& add) {
  add("_backward_clip", gpu_kernel<clip_backward>);
  using UG = cu::UnaryGradOp;
  const std::pair<const char*, Kernel> unary_gradients[] = {
      {"_backward_sqrt", gpu_kernel<unary_backward<UG::kSqrt>>},
      {"_backward_square", gpu_kernel<unary_backward<UG::kSquare>>},
  // The unary math operators with a derivative (ops/unary_math.h).
#define NANOMX_UNARY_GRAD_KERNEL(name, Enum, integers, value, grad, derivative) \
  NANOMX_UNARY_IF_DERIVATIVE(grad, {"_backward_" #name, gpu_kernel<unary_backward<UG::k##Enum>>}, )
      NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_GRAD_KERNEL)
#undef NANOMX_UNARY_GRAD_KERNEL
          {"_backward_rdiv_scalar", gpu_kernel<unary_backward<UG::kRDivScalar>>},
      {"_backward_power_scalar", gpu_kernel<unary_backward<UG::kPowerScalar>>},
      {"_backward_rpower_scalar", gpu_kernel<unary_backward<UG::kRPowerScalar>>},
      {"_backward_maximum_scalar", gpu_kernel<unary_backward<UG::kMaximumScalar>>},
      {"_backward_minimum_scalar", gpu_kernel<unary_backward<UG::kMinimumScalar>>},
      {"_backward_hypot_scalar", gpu_kernel<unary_backward<UG::kHypotScalar>>},
      {"_backward_mod_scalar", gpu_kernel<unary_backward<UG::kModScalar>>},
      {"_backward_rmod_scalar", gpu_kernel<unary_backward<UG::kRModScalar>>},
  };
  for (const auto& [name, kernel] : unary_gradients) add(name, kernel);
  using G = cu::BinaryGradOp;
  add("_backward_sub", gpu_kernel<binary_backward<G::kSub>>);
  add("_backward_mul", gpu_kernel<binary_backward<G::kMul>>);
  add("_backward_div", gpu_kernel<binary_backward<G::kDiv>>);
  add("_backward_power", gpu_kernel<binary_backward<G::kPower>>);
  add("_backward_maximum", gpu_kernel<binary_backward<G::kMaximum>>);
  add("_backward_minimum", gpu_kernel<binary_backward<G::kMinimum>>);
  add("_backward_hypot", gpu_kernel<binary_backward<G::kHypot>>);
  add("_backward_mod", gpu_kernel<binary_backward<G::kMod>>);
  add("_backward_broadcast_add", gpu_kernel<binary_backward<G::kAdd>>);
  add("_backward_broadcast_sub", gpu_kernel<binary_backward<G::kSub>>);
  add("_backward_broadcast_mul", gpu_kernel<binary_backward<G::kMul>>);
  add("_backward_broadcast_div", gpu_kernel<binary_backward<G::kDiv>>);
  add("_backward_broadcast_power", gpu_kernel<binary_backward<G::kPower>>);
  add("_backward_broadcast_maximum", gpu_kernel<binary_backward<G::kMaximum>>);
  add("_backward_broadcast_minimum", gpu_kernel<binary_backward<G::kMinimum>>);
  add("_backward_broadcast_hypot", gpu_kernel<binary_backward<G::kHypot>>);
  add("_backward_broadcast_mod", gpu_kernel<binary_backward<G::kMod>>);
}

}  // namespace nanomx::ops::cuda_kernels
