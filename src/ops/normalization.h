// The parsed attributes of the normalization operators (ops/normalization.cc): BatchNorm,
// LayerNorm, InstanceNorm, GroupNorm and L2Normalization, and the layouts their kernels walk on
// every device. The semantics are MXNet 1.9.1's (docs/mxnet-compat.md#neural-network-operators).
#pragma once

#include <cstdint>

#include "nanomx/dtype.h"
#include "nanomx/shape.h"
#include "ops/shape_inference.h"

namespace nanomx::ops {

// MXNet declares eps a double here and momentum a float; the defaults are float literals
// (1e-3f), kept bit for bit.
struct BatchNormParams {
  double eps = static_cast<double>(1e-3f);
  float momentum = 0.9f;
  bool fix_gamma = true;
  bool use_global_stats = false;
  bool output_mean_var = false;
  int64_t axis = 1;
};

// LayerNorm, InstanceNorm and GroupNorm keep eps as a float, as MXNet does.
struct LayerNormParams {
  int64_t axis = -1;
  float eps = 1e-5f;
  bool output_mean_var = false;
};

struct InstanceNormParams {
  float eps = 1e-3f;
};

struct GroupNormParams {
  int64_t num_groups = 1;
  float eps = 1e-5f;
  bool output_mean_var = false;
};

enum class L2Mode { kInstance, kChannel, kSpatial };
struct L2NormalizationParams {
  float eps = 1e-10f;
  L2Mode mode = L2Mode::kInstance;
};

// The dtype of BatchNorm's gamma, beta, moving statistics and mean/var outputs: float32 for
// float16 data, the data's own dtype otherwise (MXNet's BatchNormType, from cuDNN).
inline DType batch_norm_param_dtype(DType data) {
  return data == DType::kFloat16 ? DType::kFloat32 : data;
}

// BatchNorm's data seen around its channel axis: `len` channels, each normalised over
// outer x inner elements. `axis` is checked by inference before any kernel runs.
inline AxisSplit batch_norm_split(const BatchNormParams& p, const Shape& data) {
  const int ndim = data.ndim();
  return split_at_axis(data, static_cast<int>(p.axis < 0 ? p.axis + ndim : p.axis));
}

// LayerNorm's data around its axis: outer x inner lanes of `len` elements, `inner` apart.
inline AxisSplit layer_norm_split(const LayerNormParams& p, const Shape& data) {
  const int ndim = data.ndim();
  return split_at_axis(data, static_cast<int>(p.axis < 0 ? p.axis + ndim : p.axis));
}

// The lanes L2Normalization takes the norm of: `outer` x `inner` lanes of `len` elements,
// `inner` apart. instance: each sample (N, rest); channel: across channels at each position
// (N, C, spatial); spatial: each channel's positions (N x C, spatial).
inline AxisSplit l2_normalization_split(L2Mode mode, const Shape& data) {
  const int64_t n = data[0];
  const int64_t rest = n == 0 ? 0 : data.size() / n;
  if (mode == L2Mode::kInstance) return {.outer = n, .len = rest, .inner = 1};
  const int64_t c = data[1];
  const int64_t spatial = c == 0 ? 0 : rest / c;
  if (mode == L2Mode::kChannel) return {.outer = n, .len = c, .inner = spatial};
  return {.outer = n * c, .len = spatial, .inner = 1};
}

}  // namespace nanomx::ops
