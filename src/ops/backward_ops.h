// The tables behind the elementwise backward operators (ops/backward_ops.cc): one row per
// forward operator whose gradient is dy times a pointwise derivative, shared by the definitions,
// the CPU kernels and the gradient rules so that the three cannot drift apart.
#pragma once

#include <span>

namespace nanomx::ops {

// _backward_<op>(dy, v) = dy * d(v, s): v is the forward input x, or the output y where
// `from_output`; s the forward call's `scalar` attribute for the scalar operators.
struct UnaryGrad {
  const char* forward;
  const char* backward;
  bool from_output;
  bool scalar;
  double (*d)(double v, double s);
};
std::span<const UnaryGrad> unary_grads();

// _backward_<op>(dy, lhs, rhs) -> (dy * dl, dy * dr), summed back to each input's shape when
// `broadcast`. Without `needs_inputs` (_backward_sub) the op takes dy alone and the factors are
// constants (d evaluated at 0, 0).
struct BinaryGrad {
  const char* forward;
  const char* backward;
  bool broadcast;
  bool needs_inputs;
  void (*d)(double l, double r, double& dl, double& dr);
};
std::span<const BinaryGrad> binary_grads();

}  // namespace nanomx::ops
