// The loss and gradient-control layers, as MXNet 1.9.1 defines them: SoftmaxActivation
// (src/operator/nn/softmax_activation.cc), softmax_cross_entropy
// (src/operator/loss_binary_op.cc), MakeLoss (src/operator/make_loss.cc), and make_loss and
// BlockGrad / stop_gradient (src/operator/tensor/elemwise_unary_op_basic.cc). Their backward
// operators and gradient rules are here too; registered from ops/nn_layers.cc. CPU kernels:
// backends/cpu/kernels/nn_layers.cc.
#include <string>
#include <vector>

#include "ops/backward_ops.h"
#include "ops/gradient.h"
#include "ops/nn_layers.h"
#include "ops/op_params.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

void infer_softmax_activation(const ParsedParams& pp, std::span<PartialShape> in,
                              std::span<PartialShape> out) {
  PartialShape* slots[] = {&in[0], &out[0]};
  const std::string names[] = {"data", "output"};
  merge_all("SoftmaxActivation", slots, names);
  if (pp.get<SoftmaxActivationParams>().channel && in[0].rank_known()) {
    NANOMX_CHECK(in[0].ndim() >= 3)
        << "SoftmaxActivation: mode='channel' needs 'data' with at least 3 axes (N, C, ...), "
           "got shape "
        << in[0];
  }
}

// data (batch, classes) and label (batch,) -> the summed loss, of shape (1,).
void infer_softmax_cross_entropy(const std::string& op, std::span<PartialShape> in,
                                 std::span<PartialShape> out) {
  PartialShape& d = in[0];
  PartialShape& l = in[1];
  NANOMX_CHECK(!d.rank_known() || d.ndim() == 2)
      << op << ": 'data' must be 2-D (batch, classes), got shape " << d;
  NANOMX_CHECK(!l.rank_known() || l.ndim() == 1)
      << op << ": 'label' must be 1-D (batch,), got shape " << l;
  if (!d.rank_known()) d = PartialShape::of_rank(2);
  if (!l.rank_known()) l = PartialShape::of_rank(1);
  if (d.dim_known(0) && l.dim_known(0)) {
    NANOMX_CHECK(d[0] == l[0]) << op << ": 'data' " << d << " and 'label' " << l
                               << " disagree on the batch size";
  } else if (d.dim_known(0)) {
    l[0] = d[0];
  } else {
    d[0] = l[0];
  }
  out[0] = Shape{1};
}

MakeLossParams parse_make_loss(const Params& p) {
  MakeLossParams m;
  m.grad_scale = static_cast<float>(p.get_float("grad_scale", 1.0));
  m.valid_thresh = static_cast<float>(p.get_float("valid_thresh", 0.0));
  const std::string norm = p.get_string("normalization", "null");
  if (norm == "null") {
    m.normalization = MakeLossParams::kNull;
  } else if (norm == "batch") {
    m.normalization = MakeLossParams::kBatch;
  } else if (norm == "valid") {
    m.normalization = MakeLossParams::kValid;
  } else {
    NANOMX_THROW() << "MakeLoss: normalization '" << norm << "' is not one of null, batch, valid";
  }
  return m;
}

void register_forward(Registry& r) {
  r.add({.name = "SoftmaxActivation",
         .inputs = {"data"},
         .keys = {"mode"},
         .parse = parser(+[](const Params& p) {
           const std::string mode = p.get_string("mode", "instance");
           NANOMX_CHECK(mode == "instance" || mode == "channel")
               << "SoftmaxActivation: mode '" << mode << "' is not one of instance, channel";
           return SoftmaxActivationParams{mode == "channel"};
         }),
         .infer_shape = infer_softmax_activation,
         .infer_type = one_float_type("SoftmaxActivation"),
         .inplace = {{0, 0}},
         .backward = {.outputs = {0}}});
  r.add({.name = "softmax_cross_entropy",
         .inputs = {"data", "label"},
         .keys = {},
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               infer_softmax_cross_entropy("softmax_cross_entropy", in, out);
             },
         // The label is a float array of class indices of data's dtype (MXNet's ElemwiseType).
         .infer_type = one_float_type("softmax_cross_entropy"),
         .backward = {.inputs = {0, 1}}});
  // The legacy loss layer: identity forward; its gradient ignores the head gradient.
  register_same_shape(r, {.name = "MakeLoss",
                          .inputs = {"data"},
                          .keys = {"grad_scale", "valid_thresh", "normalization"},
                          .parse = parser(parse_make_loss),
                          .infer_type = one_float_type("MakeLoss"),
                          .inplace = {{0, 0}},
                          .backward = {.inputs = {0}}});
  // Its newer unary form: identity forward, gradient ones (any dtype, as MXNet's unary ops).
  register_same_shape(
      r, {.name = "make_loss",
          .inputs = {"data"},
          .output_names = [](const ParsedParams&) { return std::vector<std::string>{"loss"}; },
          .inplace = {{0, 0}},
          .backward = {.inputs = {0}}});
  register_same_shape(r, {.name = "BlockGrad", .inputs = {"data"}, .inplace = {{0, 0}}},
                      {"stop_gradient"});
}

void register_backward(Registry& r) {
  // (dy, y) -> y * (dy - sum(dy * y)) along the softmax's axis.
  add_float(r, with_attrs_of(fwd_op("SoftmaxActivation"),
                             {.name = "_backward_SoftmaxActivation",
                              .inputs = {"out_grad", "output"},
                              .infer_shape =
                                  [](const ParsedParams&, std::span<PartialShape> in,
                                     std::span<PartialShape> out) {
                                    PartialShape* slots[] = {&in[0], &in[1], &out[0]};
                                    const std::string names[] = {"out_grad", "output", "data_grad"};
                                    merge_all("_backward_SoftmaxActivation", slots, names);
                                  },
                              .inplace = {{0, 0}},
                              .backward = {.differentiable = false}}));

  // (dy of shape (1,), data, label) -> (dy * (softmax(data) - one_hot(label)), zeros).
  add_float(r,
            {.name = "_backward_softmax_cross_entropy",
             .inputs = {"out_grad", "data", "label"},
             .keys = {},
             .infer_shape =
                 [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
                   const std::string name = "_backward_softmax_cross_entropy";
                   std::vector<PartialShape> loss(1);
                   infer_softmax_cross_entropy(name, in.subspan(1, 2), loss);
                   PartialShape* dy[] = {&in[0], &loss[0]};
                   const std::string dy_names[] = {"out_grad", "the loss"};
                   merge_all(name, dy, dy_names);
                   outputs_like(name, {"out_grad", "data", "label"}, in, out, {1, 2});
                 },
             .num_outputs = [](const ParsedParams&) { return 2; },
             .output_names =
                 [](const ParsedParams&) {
                   return std::vector<std::string>{"data_grad", "label_grad"};
                 },
             .backward = {.differentiable = false}});

  // (data) -> grad_scale, normalised: the head gradient is not read (MXNet's MakeLoss).
  add_float(r, with_attrs_of(fwd_op("MakeLoss"),
                             {.name = "_backward_MakeLoss",
                              .inputs = {"data"},
                              .infer_shape =
                                  [](const ParsedParams&, std::span<PartialShape> in,
                                     std::span<PartialShape> out) {
                                    outputs_like("_backward_MakeLoss", {"data"}, in, out, {0});
                                  },
                              .backward = {.differentiable = false}}));
}

using Grads = std::vector<GradValue>;

}  // namespace

void register_loss_layer_ops(Registry& r) {
  register_forward(r);
  register_backward(r);
}

void register_loss_layer_rules() {
  register_gradient("SoftmaxActivation", [](GradientBuilder& b) {
    return Grads{b.add1("_backward_SoftmaxActivation", b.attrs(), {b.out_grad(0), b.output(0)})};
  });
  // The label gets none (MXNet refuses to compute one).
  register_gradient("softmax_cross_entropy", [](GradientBuilder& b) {
    const Grads g =
        b.add("_backward_softmax_cross_entropy", {}, {b.out_grad(0), b.input(0), b.input(1)});
    return Grads{g.at(0), GradValue{}};
  });
  register_gradient("MakeLoss", [](GradientBuilder& b) {
    return Grads{b.add1("_backward_MakeLoss", b.attrs(), {b.input(0)})};
  });
  // ones, whatever flows in (MXNet's make_loss gradient is ones_like(data)).
  register_gradient(
      "make_loss", [](GradientBuilder& b) { return Grads{b.add1("ones_like", {}, {b.input(0)})}; });
  // Nothing flows back (MXNet's zero gradient).
  register_gradient("BlockGrad", [](GradientBuilder&) { return Grads{GradValue{}}; });
}

}  // namespace nanomx::ops
