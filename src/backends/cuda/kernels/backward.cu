// The CUDA kernels of the elementwise operators' gradients (launch.h says what each computes):
// dy times the unary derivative, the binary partials; in double, as the CPU's tables.
#include "backends/cuda/kernels/device.cuh"

namespace nanomx::ops::cuda {
namespace {

// In double, as the CPU's table (ops/backward_ops.cc).
__device__ __forceinline__ double unary_derivative(UnaryGradOp op, double x, double s) {
  using unary_math::kLn10, unary_math::kLn2, unary_math::kPi;
  const double v = x;  // the input x or the output y, as the row says
  switch (op) {
    case UnaryGradOp::kSqrt:
      return 0.5 / v;
    case UnaryGradOp::kSquare:
      return 2 * v;
#define MATH(f) m_##f
#define NANOMX_UNARY_DERIVATIVE_CASE(name, Enum, integers, value, grad, derivative) \
  NANOMX_UNARY_IF_DERIVATIVE(grad, case UnaryGradOp::k##Enum : return derivative;)
      NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_DERIVATIVE_CASE)
#undef NANOMX_UNARY_DERIVATIVE_CASE
#undef MATH
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

}  // namespace

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

}  // namespace nanomx::ops::cuda
