// The parsed attributes of the neural-network layer operators (ops/nn.cc), read by their
// kernels on every device.
#pragma once

#include <cstdint>
#include <string>

#include "ops/shape_inference.h"

namespace nanomx::ops {

struct FullyConnectedParams {
  int64_t num_hidden = 0;
  bool no_bias = false;
  bool flatten = true;
};

enum class ActType { kRelu, kSigmoid, kTanh, kSoftRelu, kSoftSign };
struct ActivationParams {
  ActType act = ActType::kRelu;
};

// SoftmaxOutput's attributes; forward uses only multi_output / preserve_shape, the gradient
// (softmax minus one-hot) the rest.
struct SoftmaxOutputParams {
  double grad_scale = 1;
  double ignore_label = -1;
  bool multi_output = false;
  bool use_ignore = false;
  bool preserve_shape = false;
  std::string normalization = "null";  // null | batch | valid
  bool out_grad = false;
  double smooth_alpha = 0;
};

// SoftmaxOutput's rows on a non-empty input: a softmax over `len` classes, `inner` apart, for
// each of outer x inner rows: (n, k, rest) split at axis 1 with multi_output, the last axis with
// preserve_shape, else MXNet's flattening to (shape[0], rest). Forward and gradient, every device.
AxisSplit softmax_output_split(const SoftmaxOutputParams& p, const Shape& shape);

struct RegressionOutputParams {
  double grad_scale = 1;
};

}  // namespace nanomx::ops
