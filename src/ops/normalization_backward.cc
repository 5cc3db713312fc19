// The backward operators of the normalization family and their gradient rules (forward
// definitions in normalization.cc). _backward_BatchNorm, _backward_LayerNorm,
// _backward_InstanceNorm and _backward_GroupNorm all take (out_grad, data, gamma, mean, var/std)
// and give (data_grad, gamma_grad, beta_grad); _backward_L2Normalization takes
// (out_grad, output, norm) and gives data_grad. Each parses its forward operator's attributes
// and infers every shape from its own inputs through the forward inference. CPU kernels:
// backends/cpu/kernels/normalization.cc and batch_norm.cc.
#include <string>
#include <vector>

#include "ops/backward_ops.h"
#include "ops/gradient.h"
#include "ops/normalization.h"
#include "ops/registry.h"

namespace nanomx::ops {

void register_normalization_backward_ops(Registry& r);  // called by normalization.cc

namespace {

// _backward_BatchNorm's inputs, for its dtype messages.
constexpr const char* kBatchNormBackwardInputs[] = {"out_grad", "data", "gamma", "mean", "var"};

// The second saved statistic: LayerNorm and GroupNorm save the standard deviation ("std"),
// BatchNorm its inverse and InstanceNorm the variance (both "var").
const char* saved_name(const Op& fwd) {
  return fwd.name == "LayerNorm" || fwd.name == "GroupNorm" ? "std" : "var";
}

// (out_grad, data, gamma, mean, var) -> (data_grad, gamma_grad, beta_grad): the forward
// inference on data and gamma gives the shapes the incoming gradient and the saved statistics
// must have; a disagreement names the backward operator, the argument and both shapes.
void stats_backward_shape(const Op& fwd, const ParsedParams& p, std::span<PartialShape> in,
                          std::span<PartialShape> out) {
  const std::string bwd = "_backward_" + fwd.name;
  {
    PartialShape* slots[] = {&in[0], &in[1], &out[0]};
    const std::string names[] = {"out_grad", "data", "data_grad"};
    merge_all(bwd, slots, names);
  }
  std::vector<PartialShape> fin(fwd.inputs.size());
  fin[0] = in[1];
  fin[1] = in[2];
  std::vector<PartialShape> fout(3);
  fwd.infer_shape(p, fin, fout);
  in[1] = fin[0];
  in[0] = fin[0];
  in[2] = fin[1];
  for (int k = 1; k <= 2; ++k) {
    PartialShape& saved = in[static_cast<size_t>(2 + k)];
    PartialShape merged = saved;
    NANOMX_CHECK(merge_shape(merged, fout[static_cast<size_t>(k)]))
        << bwd << ": '" << (k == 1 ? "mean" : saved_name(fwd)) << "' has shape " << saved
        << ", but " << fwd.name << " of 'data' " << in[1] << " gives "
        << fout[static_cast<size_t>(k)];
    saved = merged;
  }
  out[0] = in[1];
  out[1] = in[2];
  out[2] = in[2];
}

// BatchNorm's gradient: out_grad, data and data_grad of the data's dtype; gamma, the saved
// statistics and the parameter gradients of the parameters' dtype (float32 for float16 data).
void batch_norm_backward_type(const ParsedParams&, std::span<PartialDType> in,
                              std::span<PartialDType> out) {
  PartialDType data = in[1] ? in[1] : in[0] ? in[0] : out[0];
  if (!data) return;
  NANOMX_CHECK(*data == DType::kFloat16 || *data == DType::kFloat32 || *data == DType::kFloat64)
      << "_backward_BatchNorm: 'data' has dtype " << dtype_name(*data)
      << "; gradients are computed for float16, float32 and float64";
  const DType param = batch_norm_param_dtype(*data);
  for (size_t i = 0; i < in.size(); ++i) {
    const DType want = i <= 1 ? *data : param;
    NANOMX_CHECK(!in[i] || *in[i] == want)
        << "_backward_BatchNorm: '" << kBatchNormBackwardInputs[i] << "' has dtype "
        << dtype_name(*in[i]) << ", expected " << dtype_name(want) << " (for " << dtype_name(*data)
        << " data)";
    in[i] = want;
  }
  out[0] = data;
  out[1] = param;
  out[2] = param;
}

std::vector<std::string> param_grad_names(const ParsedParams&) {
  return {"data_grad", "gamma_grad", "beta_grad"};
}

Op stats_backward(const Op& fwd) {
  return with_attrs_of(
      fwd, {.name = "_backward_" + fwd.name,
            .inputs = {"out_grad", "data", "gamma", "mean", saved_name(fwd)},
            .infer_shape =
                [&fwd](const ParsedParams& p, std::span<PartialShape> in,
                       std::span<PartialShape> out) { stats_backward_shape(fwd, p, in, out); },
            .num_outputs = [](const ParsedParams&) { return 3; },
            .output_names = param_grad_names,
            .backward = {.differentiable = false}});
}

// (out_grad, output, norm) -> data_grad: out_grad, output and data_grad share one shape, the
// norm has the one the forward inference gives.
void l2_backward_shape(const Op& fwd, const ParsedParams& p, std::span<PartialShape> in,
                       std::span<PartialShape> out) {
  const std::string bwd = "_backward_L2Normalization";
  {
    PartialShape* slots[] = {&in[0], &in[1], &out[0]};
    const std::string names[] = {"out_grad", "output", "data_grad"};
    merge_all(bwd, slots, names);
  }
  std::vector<PartialShape> fin = {in[1]};
  std::vector<PartialShape> fout(2);
  fwd.infer_shape(p, fin, fout);
  PartialShape merged = in[2];
  NANOMX_CHECK(merge_shape(merged, fout[1]))
      << bwd << ": 'norm' has shape " << in[2] << ", but L2Normalization of 'data' " << in[1]
      << " gives " << fout[1];
  in[2] = merged;
}

using Grads = std::vector<GradValue>;

// (dy, data, gamma, mean, var/std) into the backward operator; the parameters' gradients are
// its second and third outputs, and no gradient flows through the saved statistics (MXNet
// blocks them even when visible).
Grads stats_rule(GradientBuilder& b, const std::string& backward) {
  Grads g =
      b.add(backward, b.attrs(), {b.out_grad(0), b.input(0), b.input(1), b.output(1), b.output(2)});
  g.resize(static_cast<size_t>(b.num_inputs()));  // moving_mean, moving_var: none
  return g;
}

}  // namespace

void register_normalization_backward_ops(Registry& r) {
  for (const char* name : {"BatchNorm", "LayerNorm", "InstanceNorm", "GroupNorm"}) {
    const Op& fwd = fwd_op(name);
    Op op = stats_backward(fwd);
    if (fwd.name == "BatchNorm") {
      // The training formula (batch statistics) or the inference one (fixed statistics), as
      // MXNet's backward picks by its own train mode.
      op.infer_type = batch_norm_backward_type;
      op.reads_train_mode = true;
      r.add(std::move(op));
    } else {
      add_float(r, std::move(op));
    }
  }
  const Op& l2 = fwd_op("L2Normalization");
  add_float(r,
            with_attrs_of(
                l2, {.name = "_backward_L2Normalization",
                     .inputs = {"out_grad", "output", "norm"},
                     .infer_shape =
                         [&l2](const ParsedParams& p, std::span<PartialShape> in,
                               std::span<PartialShape> out) { l2_backward_shape(l2, p, in, out); },
                     .output_names =
                         [](const ParsedParams&) { return std::vector<std::string>{"data_grad"}; },
                     // MXNet's: the incoming gradient's buffer may become data_grad.
                     .inplace = {{0, 0}},
                     .backward = {.differentiable = false}}));
}

void register_normalization_rules() {
  for (const char* name : {"BatchNorm", "LayerNorm", "InstanceNorm", "GroupNorm"}) {
    const std::string backward = std::string("_backward_") + name;
    register_gradient(name, [backward](GradientBuilder& b) { return stats_rule(b, backward); });
  }
  register_gradient("L2Normalization", [](GradientBuilder& b) {
    return Grads{
        b.add1("_backward_L2Normalization", b.attrs(), {b.out_grad(0), b.output(0), b.output(1)})};
  });
}

}  // namespace nanomx::ops
