// The tables behind the elementwise backward operators (ops/backward_ops.cc): one row per
// forward operator whose gradient is dy times a pointwise derivative, shared by the definitions,
// the CPU kernels and the gradient rules so that the three cannot drift apart.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ops/op.h"
#include "ops/registry.h"

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

// Helpers for defining backward operators (each family's file defines its own
// _backward_<Op> next to <Op>).

// Merges every slot in `slots` into one shape; a disagreement names the operator, both
// arguments and their shapes.
void merge_all(const std::string& op, std::span<PartialShape* const> slots,
               std::span<const std::string> names);
// Output j takes input like[j]'s shape (both ways); the rest of the inputs are free.
void outputs_like(const std::string& op, const std::vector<std::string>& in_names,
                  std::span<PartialShape> in, std::span<PartialShape> out,
                  const std::vector<int>& like);
// The incoming gradient must have the shape the forward operator gives for `fwd_in` (filled in
// when unknown). Names the backward operator, the forward one and every shape involved.
void check_out_grad(const Op& fwd, const ParsedParams& p, std::vector<PartialShape> fwd_in,
                    PartialShape& dy, const std::string& bwd);
// Every input and output of one floating-point dtype (float16, float32, float64).
InferTypeFn float_types(const std::string& op);
// Registers a backward op whose values all share one floating-point dtype.
void add_float(Registry& r, Op op);
// The registered forward operator `name` (throws when it is not registered yet).
const Op& fwd_op(const char* name);
// A backward op that takes its forward op's attribute keys and parser.
Op with_attrs_of(const Op& fwd, Op op);

}  // namespace nanomx::ops
