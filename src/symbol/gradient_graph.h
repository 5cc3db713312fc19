// The gradient graph (MXNet's nnvm Gradient pass): from a forward graph and the entries to
// differentiate, the backward nodes built by each operator's gradient rule (ops/gradient.h),
// head-gradient variables, gradient aggregation and optional recompute ("mirror") nodes.
// docs/symbolic.md ("Executor") describes the graph and its node names.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "symbol/symbol.h"

namespace nanomx::symbol {

struct GradientGraph {
  // One per requested entry: its gradient. A null node where no gradient flows is never
  // returned: such an entry gets a zeros_like node.
  std::vector<NodeEntry> grads;
  // One per forward output: the head-gradient variable `_head_grad_<i>`. The executor needs an
  // array for it only when the variable is reachable from `grads` (a loss output's rule never
  // reads its output gradient).
  std::vector<std::shared_ptr<Node>> head_grads;
};

// Decides, per forward operator node, whether the backward pass reads a recomputed copy
// (`<name>_mirror`) of it instead of the node itself. Null: no mirroring.
using MirrorFn = std::function<bool(const Node& node)>;

// Builds the gradient of `forward`'s outputs with respect to each of `xs` (entries of variables
// of the forward graph). New nodes reference the forward graph's nodes; the forward graph is
// not changed. Throws "Operator X is non-differentiable ..." when a gradient must flow through
// an operator without a rule.
GradientGraph build_gradient_graph(const Symbol& forward, const std::vector<NodeEntry>& xs,
                                   const MirrorFn& mirror = {});

// MXNet's mirror choice: not a variable, not Dropout, and either the node's
// `__force_mirroring__` attribute is true, or `env_mirror` (MXNET_BACKWARD_DO_MIRROR, or the
// executor's option) is on and the operator is none of Convolution, FullyConnected, Concat,
// SoftmaxOutput.
bool default_mirror(const Node& node, bool env_mirror);

}  // namespace nanomx::symbol
