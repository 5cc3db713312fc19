// Gradient rules: how an operator's call is differentiated, written once per operator against
// an abstract builder so that the symbolic executor (which adds graph nodes) and autograd (which
// runs operators at once on arrays) share every rule. A rule sees the forward call (attributes,
// inputs, outputs) and the gradient flowing into each output, adds operator calls, and returns
// one gradient per forward input. docs/symbolic.md describes the rules.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "ops/op.h"

namespace nanomx::ops {

// A value in whatever the builder builds: a forward input or output, an output gradient, or an
// output of a call the rule added. Invalid (id < 0): no gradient (zero, never materialised).
struct GradValue {
  int32_t id = -1;
  bool valid() const { return id >= 0; }
};

class GradientBuilder {
 public:
  virtual ~GradientBuilder() = default;
  // The forward call being differentiated.
  virtual const Op& op() const = 0;
  virtual const ParsedParams& params() const = 0;
  // Its attributes as given (hidden __x__ keys left out): copied onto backward calls that parse
  // the same keys (MXNet's _backward_<Op> nodes carry the forward node's attribute dict).
  virtual const Attrs& attrs() const = 0;
  virtual int num_inputs() const = 0;
  virtual int num_outputs() const = 0;
  virtual GradValue input(int i) = 0;
  virtual GradValue output(int i) = 0;
  // The gradient flowing into forward output i; always valid (zeros where nothing flows).
  virtual GradValue out_grad(int i) = 0;
  // Adds a call of the registered operator `op` on `inputs`; returns all of its outputs. The
  // first call a rule adds is the forward node's "<name>_backward" in a graph.
  virtual std::vector<GradValue> add(std::string_view op, const Attrs& attrs,
                                     std::vector<GradValue> inputs) = 0;
  // One output of such a call, for single-output operators.
  GradValue add1(std::string_view op, const Attrs& attrs, std::vector<GradValue> inputs) {
    return add(op, attrs, std::move(inputs)).at(0);
  }
};

// Returns exactly one entry per forward input: its gradient, or an invalid GradValue where none
// flows (a label, an index, an integer input).
using GradientFn = std::function<std::vector<GradValue>(GradientBuilder& b)>;

// Attaches `rule` to the registered operator `op` (and its aliases); throws for an unknown
// operator or a second rule. Called by the definition files after registration.
void register_gradient(std::string_view op, GradientFn rule);
// The operator's rule, or null (not differentiable).
const GradientFn* find_gradient(const Op& op);

// Runs `op`'s rule at once on arrays (the eager builder autograd and the tests use): `inputs`
// and `outputs` of the forward call, `out_grads` one per output (a none array: zeros).
// Returns one array per input, a none array where no gradient flows. Throws naming the
// operator when it has no rule.
std::vector<NDArray> gradient_eager(const Op& op, const Attrs& attrs,
                                    std::span<const NDArray> inputs,
                                    std::span<const NDArray> outputs,
                                    std::span<const NDArray> out_grads);

}  // namespace nanomx::ops
