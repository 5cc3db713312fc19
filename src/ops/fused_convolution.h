// _sg_mkldnn_conv: a Convolution with the BatchNorm, residual add and ReLU after it folded in,
// the node the executor's inference fusion (symbol/fuse.h) makes, named as MXNet 1.x's MKL-DNN
// subgraph backend names it (src/operator/subgraph/mkldnn/mkldnn_conv.cc in MXNet 1.9.1).
#pragma once

#include <string>

#include "ops/convolution.h"

namespace nanomx::ops {

// Inputs: data, weight, [bias], [gamma, beta, moving_mean, moving_var], [sum]: the
// convolution's, then BatchNorm's when with_bn, then the residual when with_sum.
struct FusedConvParams {
  ConvolutionParams conv;
  bool with_bn = false;
  double bn_eps = 1e-3;
  bool bn_fix_gamma = true;
  bool with_sum = false;
  bool with_relu = false;
};

inline constexpr const char* kFusedConvOp = "_sg_mkldnn_conv";

// Index of the first BatchNorm input and of the residual.
inline int fused_bn_input(const FusedConvParams& p) { return p.conv.no_bias ? 2 : 3; }
inline int fused_sum_input(const FusedConvParams& p) {
  return fused_bn_input(p) + (p.with_bn ? 4 : 0);
}

}  // namespace nanomx::ops
