// The parsed attributes of the layer operators defined in ops/nn_layers.cc (Dropout, LeakyReLU,
// Embedding) and ops/loss_layers.cc (SoftmaxActivation, softmax_cross_entropy, MakeLoss), and
// the shape rules their kernels share with shape inference. The semantics are MXNet 1.9.1's
// (src/operator/nn/dropout-inl.h, src/operator/leaky_relu-inl.h, src/operator/tensor/
// indexing_op.h, src/operator/nn/softmax_activation-inl.h, src/operator/loss_binary_op-inl.h,
// src/operator/make_loss-inl.h); docs/mxnet-compat.md lists where nanomx departs.
#pragma once

#include <cstdint>
#include <vector>

#include "nanomx/dtype.h"
#include "nanomx/shape.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"

namespace nanomx::ops {

// MXNet keeps these attributes as C++ float: the values are rounded to float when parsed so
// that slopes, scales and thresholds are bit for bit MXNet's.

// Dropout: p is the fraction dropped; `always` (mode='always') drops outside training too;
// `axes` share one mask value along those axes (variational dropout).
struct DropoutParams {
  float p = 0.5f;
  bool always = false;
  std::vector<int64_t> axes;
};

enum class LeakyAct { kLeaky, kPrelu, kRrelu, kElu, kSelu, kGelu };
struct LeakyReLUParams {
  LeakyAct act = LeakyAct::kLeaky;
  float slope = 0.25f;
  float lower_bound = 0.125f;
  float upper_bound = 0.334f;
};
// SELU's constants as MXNet's src/operator/mshadow_op.h declares them: floats, whatever the
// dtype computed in.
inline constexpr float kSeluAlpha = 1.6732632423543772848170429916717f;
inline constexpr float kSeluLambda = 1.0507009873554804934193349852946f;

// prelu's gamma expanded to data's rank (MXNet's LeakyReLUOp::expand_shape): gamma's axes are
// matched right to left against data's axes 1 and 0 only, each equal to data's or 1; every
// other axis is 1. Throws naming both shapes when gamma does not fit.
Shape prelu_gamma_shape(const Shape& gamma, const Shape& data);

struct EmbeddingParams {
  int64_t input_dim = 0;
  int64_t output_dim = 0;
  DType dtype = DType::kFloat32;
};

// SoftmaxActivation: mode='instance' (false) or 'channel' (true).
struct SoftmaxActivationParams {
  bool channel = false;
};
// Where SoftmaxActivation's softmax runs, for a non-empty input: 'channel' along axis 1 of
// (N, C, rest); 'instance' along the last axis of the array flattened to 2-D as MXNet's
// TBlob::FlatTo2D does (all leading axes collapsed), which for the usual (N, C) input is the
// softmax of each instance.
inline AxisSplit softmax_activation_split(bool channel, const Shape& shape) {
  if (channel) return split_at_axis(shape, 1);
  const int64_t len = shape.ndim() == 0 ? 1 : shape[shape.ndim() - 1];
  return {.outer = len == 0 ? 0 : shape.size() / len, .len = len, .inner = 1};
}

struct MakeLossParams {
  float grad_scale = 1.0f;
  float valid_thresh = 0.0f;
  enum Normalization { kNull, kBatch, kValid } normalization = kNull;
};

// Registered by register_nn_layer_ops / register_nn_layer_rules (ops/nn_layers.cc): the loss
// layers' definitions and gradient rules, in ops/loss_layers.cc.
void register_loss_layer_ops(Registry& r);
void register_loss_layer_rules();

// Every input and output of one floating-point dtype (float16, float32, float64), refused at
// inference naming the operator: the forward layers' dtype rule (MXNet's real-type kernels).
InferTypeFn one_float_type(const char* op);

}  // namespace nanomx::ops
