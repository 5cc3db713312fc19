// _sg_mkldnn_conv's definition (ops/fused_convolution.h): Convolution's attributes and inference,
// plus the folded layers' inputs. Only the executor's inference fusion makes it; it has no
// gradient (a graph that wants one is never fused).
#include "ops/fused_convolution.h"

#include <string>
#include <vector>

#include "ops/registry.h"

namespace nanomx::ops {
namespace {

const Op& convolution_op() { return get_op("Convolution"); }

ParsedParams conv_params(const FusedConvParams& p) {
  ParsedParams cp(&convolution_op().name);
  cp.emplace(p.conv);
  return cp;
}

std::vector<std::string> fused_inputs(const ParsedParams& pp) {
  const auto& p = pp.get<FusedConvParams>();
  std::vector<std::string> names = {"data", "weight"};
  if (!p.conv.no_bias) names.emplace_back("bias");
  if (p.with_bn) names.insert(names.end(), {"gamma", "beta", "moving_mean", "moving_var"});
  if (p.with_sum) names.emplace_back("sum");
  return names;
}

void infer_fused(const ParsedParams& pp, std::span<PartialShape> in, std::span<PartialShape> out) {
  const auto& p = pp.get<FusedConvParams>();
  const size_t n_conv = static_cast<size_t>(fused_bn_input(p));
  convolution_op().infer_shape(conv_params(p), in.first(n_conv), out);
  const std::string name = kFusedConvOp;
  if (p.with_bn) {
    const PartialShape channels = Shape{p.conv.num_filter};
    for (size_t i = n_conv; i < n_conv + 4; ++i) {
      PartialShape merged = in[i];
      NANOMX_CHECK(merge_shape(merged, channels))
          << name << ": BatchNorm input " << i - n_conv << " has shape " << in[i] << ", expected "
          << channels;
      in[i] = merged;
    }
  }
  if (p.with_sum) {
    const auto s = static_cast<size_t>(fused_sum_input(p));
    PartialShape merged = out[0];
    NANOMX_CHECK(merge_shape(merged, in[s]))
        << name << ": the residual has shape " << in[s] << ", the convolution gives " << out[0];
    in[s] = merged;
    out[0] = merged;
  }
}

}  // namespace

void register_fused_convolution_ops(Registry& r) {
  const Op& conv = convolution_op();
  std::vector<std::string> keys = conv.keys;
  keys.insert(keys.end(),
              {"with_bn", "bn_eps", "bn_fix_gamma", "with_sum", "with_relu", "fused_nodes"});
  r.add({.name = kFusedConvOp,
         .inputs = {"data", "weight", "bias", "gamma", "beta", "moving_mean", "moving_var", "sum"},
         .keys = std::move(keys),
         .parse =
             [&conv](const Params& attrs, ParsedParams& out) {
               ParsedParams c(&conv.name);
               conv.parse(attrs, c);
               FusedConvParams p;
               p.conv = c.get<ConvolutionParams>();
               p.with_bn = attrs.get_bool("with_bn", false);
               p.bn_eps = attrs.get_float("bn_eps", static_cast<double>(1e-3f));
               p.bn_fix_gamma = attrs.get_bool("bn_fix_gamma", true);
               p.with_sum = attrs.get_bool("with_sum", false);
               p.with_relu = attrs.get_bool("with_relu", false);
               out.emplace(p);
             },
         .infer_shape = infer_fused,
         .input_names = fused_inputs,
         .backward = {.differentiable = false}});
}

}  // namespace nanomx::ops
