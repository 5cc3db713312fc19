// Every operator's gradient rule (ops/gradient.h), in one place so that the rules read as the
// table of derivatives they are. docs/symbolic.md#gradients lists them and the backward operators
// (ops/backward_ops.cc) they add. Labels, indices and piecewise-constant functions get no
// gradient (an invalid value); operators without a rule here are not differentiable.
#include <string>
#include <vector>

#include "ops/backward_ops.h"
#include "ops/gradient.h"
#include "ops/nn.h"
#include "ops/op_params.h"
#include "ops/registry.h"
#include "ops/unary_math.h"

namespace nanomx::ops {
namespace {

using Grads = std::vector<GradValue>;

// The output gradient passed on unchanged to each of `n` inputs (no backward call: MXNet's
// elemwise_add and ElementWiseSum add none either).
GradientFn pass_through(int n) {
  return [n](GradientBuilder& b) { return Grads(static_cast<size_t>(n), b.out_grad(0)); };
}

// One backward call on (dy, x) with the forward call's attributes: reshapes and reductions,
// whose backward needs the input only for its shape.
GradientFn with_input_shape(const char* backward, bool copy_attrs) {
  return [backward, copy_attrs](GradientBuilder& b) {
    const Attrs none;
    return Grads{b.add1(backward, copy_attrs ? b.attrs() : none, {b.out_grad(0), b.input(0)})};
  };
}

// transpose's gradient is the transpose by the inverse permutation (an empty `axes`, the
// reversal, is its own inverse).
Grads transpose_rule(GradientBuilder& b) {
  const std::vector<int64_t>& axes = b.params().get<AxesParams>().values;
  Attrs attrs;
  if (!axes.empty()) {
    const auto n = static_cast<int64_t>(axes.size());
    std::vector<int64_t> inverse(axes.size(), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t a = axes[static_cast<size_t>(i)] < 0 ? axes[static_cast<size_t>(i)] + n
                                                         : axes[static_cast<size_t>(i)];
      NANOMX_CHECK(a >= 0 && a < n) << "transpose: axis " << axes[static_cast<size_t>(i)]
                                    << " is out of range for " << n << " axes";
      inverse[static_cast<size_t>(a)] = i;
    }
    std::string text = "(";
    for (size_t i = 0; i < inverse.size(); ++i) {
      text += (i ? ", " : "") + std::to_string(inverse[i]);
    }
    attrs.emplace_back("axes", text + ")");
  }
  return {b.add1("transpose", attrs, {b.out_grad(0)})};
}

void register_nn_rules() {
  // (dY, X, W) -> dX, dW and, with a bias, db.
  register_gradient("FullyConnected", [](GradientBuilder& b) {
    return b.add("_backward_FullyConnected", b.attrs(), {b.out_grad(0), b.input(0), b.input(1)});
  });
  // relu differentiates from the output alone; the others also take the input (MXNet's lists).
  register_gradient("Activation", [](GradientBuilder& b) {
    std::vector<GradValue> in = {b.out_grad(0), b.output(0)};
    if (b.params().get<ActivationParams>().act != ActType::kRelu) in.push_back(b.input(0));
    return Grads{b.add1("_backward_Activation", b.attrs(), std::move(in))};
  });
  // The loss layers ignore the incoming gradient; the label gets none.
  register_gradient("SoftmaxOutput", [](GradientBuilder& b) {
    return Grads{b.add1("_backward_SoftmaxOutput", b.attrs(), {b.output(0), b.input(1)}),
                 GradValue{}};
  });
  register_gradient("LinearRegressionOutput", [](GradientBuilder& b) {
    return Grads{b.add1("_backward_linear_reg_out", b.attrs(), {b.input(1), b.output(0)}),
                 GradValue{}};
  });
  for (const char* name : {"dot", "batch_dot"}) {
    const std::string backward = std::string("_backward_") + name;
    register_gradient(name, [backward](GradientBuilder& b) {
      return b.add(backward, b.attrs(), {b.out_grad(0), b.input(0), b.input(1)});
    });
  }
  for (const char* name : {"softmax", "log_softmax", "softmin"}) {
    const std::string backward = std::string("_backward_") + name;
    register_gradient(name, [backward](GradientBuilder& b) {
      // With an output dtype the input is passed too: the gradient takes its dtype.
      if (b.params().get<SoftmaxParams>().dtype) {
        return Grads{b.add1(backward, b.attrs(), {b.out_grad(0), b.input(0), b.output(0)})};
      }
      return Grads{b.add1(backward, b.attrs(), {b.out_grad(0), b.output(0)})};
    });
  }
}

void register_shape_rules() {
  register_gradient("Reshape", with_input_shape("_backward_reshape", true));
  for (const char* name : {"Flatten", "expand_dims", "squeeze"}) {
    register_gradient(name, with_input_shape("_backward_reshape", false));
  }
  register_gradient("sum", with_input_shape("_backward_sum", true));
  register_gradient("mean", with_input_shape("_backward_mean", true));
  register_gradient("broadcast_to", with_input_shape("_broadcast_backward", true));
  register_gradient("Cast", with_input_shape("_backward_cast", true));
  register_gradient("transpose", transpose_rule);
  // Concat: the output gradient cut back into the inputs' slabs.
  register_gradient("Concat", [](GradientBuilder& b) {
    const int n = b.num_inputs();
    Attrs attrs = {{"dim", std::to_string(b.params().get<AxisParams>().axis)},
                   {"num_args", std::to_string(n + 1)}};
    std::vector<GradValue> in = {b.out_grad(0)};
    for (int i = 0; i < n; ++i) in.push_back(b.input(i));
    return b.add("_backward_Concat", attrs, std::move(in));
  });
  // Their own inverses.
  for (const char* name : {"SwapAxis", "reverse"}) {
    register_gradient(name, [name](GradientBuilder& b) {
      return Grads{b.add1(name, b.attrs(), {b.out_grad(0)})};
    });
  }
  // stack's gradient splits dy along the new axis; SliceChannel's concatenates the outputs'
  // gradients (each given its axis back when squeezed).
  register_gradient("stack", [](GradientBuilder& b) {
    const Attrs attrs = {{"num_outputs", std::to_string(b.num_inputs())},
                         {"axis", std::to_string(b.params().get<AxisParams>().axis)},
                         {"squeeze_axis", "1"}};
    return b.add("SliceChannel", attrs, {b.out_grad(0)});
  });
  register_gradient("SliceChannel", [](GradientBuilder& b) {
    const SplitParams& s = b.params().get<SplitParams>();
    const std::string axis = std::to_string(s.axis);
    std::vector<GradValue> parts;
    for (int j = 0; j < b.num_outputs(); ++j) {
      parts.push_back(s.squeeze_axis ? b.add1("expand_dims", {{"axis", axis}}, {b.out_grad(j)})
                                     : b.out_grad(j));
    }
    const Attrs attrs = {{"dim", axis}, {"num_args", std::to_string(parts.size())}};
    return Grads{b.add1("Concat", attrs, std::move(parts))};
  });
  // dy placed into zeros of the input's shape.
  register_gradient("slice", [](GradientBuilder& b) {
    const GradValue zeros = b.add1("zeros_like", {}, {b.input(0)});
    return Grads{b.add1("_slice_assign", b.attrs(), {zeros, b.out_grad(0)})};
  });
  // pick: the output gradient back at the picked positions; the index gets none.
  register_gradient("pick", [](GradientBuilder& b) {
    return Grads{b.add1("_backward_pick", b.attrs(), {b.out_grad(0), b.input(0), b.input(1)}),
                 GradValue{}};
  });
  // where(c, x, y): dy to x where c holds, to y elsewhere; the condition gets none.
  register_gradient("where", [](GradientBuilder& b) {
    const GradValue dy = b.out_grad(0), c = b.input(0);
    const GradValue zeros = b.add1("zeros_like", {}, {dy});
    return Grads{GradValue{}, b.add1("where", {}, {c, dy, zeros}),
                 b.add1("where", {}, {c, zeros, dy})};
  });
}

void register_elemwise_rules() {
  // d(x + s) = g: no backward call, the output gradient is the input's.
  register_gradient("_plus_scalar", pass_through(1));
  register_gradient("_minus_scalar", pass_through(1));
  // d(s - x) = -g.
  register_gradient("_rminus_scalar", [](GradientBuilder& b) {
    return Grads{b.add1("negative", {}, {b.out_grad(0)})};
  });
  // d(x * s) = g * s and d(x / s) = g / s: the same operator with the forward call's attributes.
  for (const char* name : {"_mul_scalar", "_div_scalar"}) {
    register_gradient(name, [name](GradientBuilder& b) {
      return Grads{b.add1(name, b.attrs(), {b.out_grad(0)})};
    });
  }
  register_gradient("clip", [](GradientBuilder& b) {
    return Grads{b.add1("_backward_clip", b.attrs(), {b.out_grad(0), b.input(0)})};
  });
  register_gradient("negative", [](GradientBuilder& b) {
    return Grads{b.add1("negative", {}, {b.out_grad(0)})};
  });
  // d(e^x) = g * e^x, from the output (MXNet multiplies the same way).
  register_gradient("exp", [](GradientBuilder& b) {
    return Grads{b.add1("elemwise_mul", {}, {b.out_grad(0), b.output(0)})};
  });
  // Zero wherever defined (ops/unary_math.h's kZero rows): nothing flows.
#define NANOMX_UNARY_ZERO_GRADIENT(name, Enum, integers, value, grad, derivative)  \
  if (unary_math::grad == unary_math::kZero) {                                     \
    register_gradient(#name, [](GradientBuilder&) { return Grads{GradValue{}}; }); \
  }
  NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_ZERO_GRADIENT)
#undef NANOMX_UNARY_ZERO_GRADIENT
  // dy times a pointwise derivative of the input or the output (backward_ops.h's table).
  for (const UnaryGrad& u : unary_grads()) {
    register_gradient(u.forward, [&u](GradientBuilder& b) {
      const GradValue v = u.from_output ? b.output(0) : b.input(0);
      return Grads{b.add1(u.backward, b.attrs(), {b.out_grad(0), v})};
    });
  }
  register_gradient("elemwise_add", pass_through(2));
  register_gradient("_grad_add", pass_through(2));
  register_gradient("add_n", [](GradientBuilder& b) {
    return Grads(static_cast<size_t>(b.num_inputs()), b.out_grad(0));
  });
  for (const BinaryGrad& g : binary_grads()) {
    register_gradient(g.forward, [&g](GradientBuilder& b) {
      if (!g.needs_inputs) return b.add(g.backward, {}, {b.out_grad(0)});
      return b.add(g.backward, {}, {b.out_grad(0), b.input(0), b.input(1)});
    });
  }
  register_gradient("_copy", [](GradientBuilder& b) {
    return Grads{b.add1("_backward_copy", {}, {b.out_grad(0)})};
  });
  // The head gradient flows to lhs; rhs only lends its shape.
  register_gradient("_identity_with_attr_like_rhs", [](GradientBuilder& b) {
    return Grads{b.out_grad(0), GradValue{}};
  });
}

}  // namespace

void register_gradient_rules() {
  register_elemwise_rules();
  register_shape_rules();
  register_nn_rules();
  register_convolution_rules();
  register_pooling_rules();
  register_normalization_rules();
  register_nn_layer_rules();
}

}  // namespace nanomx::ops
