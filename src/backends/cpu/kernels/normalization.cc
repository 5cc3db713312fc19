// CPU kernels of LayerNorm, InstanceNorm, GroupNorm and L2Normalization and their backward
// operators (definitions in ops/normalization.cc; BatchNorm's kernels are in batch_norm.cc).
// LayerNorm over the last axis in float32 runs on oneDNN's layer normalization; everything else
// is plain loops that accumulate in double, in parallel over independent blocks.
//
// Each operator normalises lanes: LayerNorm the `len` elements along its axis (`inner` apart),
// InstanceNorm each (sample, channel)'s positions, GroupNorm each (sample, group)'s channels and
// positions, with xhat = (x - mean) / sqrt(var + eps) and y = xhat * gamma + beta. Their
// gradient, with g = dy * gamma / sqrt(var + eps) along a lane:
//   dx = g - mean(g) - xhat * mean(g * xhat),  dgamma = sum(dy * xhat),  dbeta = sum(dy),
// the sums over every lane each parameter scales (MXNet 1.9.1's layer_norm-inl.h and
// group_norm-inl.h state the same; instance_norm-inl.h expands it).
#include "ops/normalization.h"

#include <cmath>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/onednn/onednn.h"

namespace nanomx::ops::cpu {

void register_batch_norm_kernels();  // batch_norm.cc

namespace {

constexpr int64_t kParallelWork = int64_t{1} << 15;

// Calls fn(T{}) for the floating-point dtypes inference admits.
template <typename Fn>
void dispatch_float(const std::string& op, DType dtype, Fn&& fn) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      fn(tag);
    } else {
      NANOMX_THROW() << op << ": the CPU kernel takes float16, float32 and float64, got "
                     << dtype_name(dtype);
    }
  });
}

// Blocks of `len` x `inner` elements: lane i of block o is elements base + k * inner + i,
// k < len. f(o, base, scratch) runs once per block with `rows` x `inner` doubles of scratch of
// its own; blocks run on the OpenMP team when the work is large.
template <typename F>
void for_each_block(const AxisSplit& s, int rows, F&& f) {
  onednn::set_thread_team();
  const int64_t work = s.outer * s.len * s.inner;
#pragma omp parallel if (work >= kParallelWork && s.outer > 1)
  {
    std::vector<double> scratch(static_cast<size_t>(rows * s.inner));
#pragma omp for
    for (int64_t o = 0; o < s.outer; ++o) f(o, o * s.len * s.inner, scratch.data());
  }
}

// ---- lane statistics and the normalised output --------------------------------------------

// The mean of each lane of a block into `mean`, and its biased variance into `var`.
template <typename T>
void lane_moments(const T* x, int64_t len, int64_t inner, double* mean, double* var) {
  for (int64_t i = 0; i < inner; ++i) mean[i] = var[i] = 0;
  for (int64_t k = 0; k < len; ++k) {
    for (int64_t i = 0; i < inner; ++i) mean[i] += to_double(x[k * inner + i]);
  }
  const double n = static_cast<double>(len);
  for (int64_t i = 0; i < inner; ++i) mean[i] = len > 0 ? mean[i] / n : 0.0;
  for (int64_t k = 0; k < len; ++k) {
    for (int64_t i = 0; i < inner; ++i) {
      const double d = to_double(x[k * inner + i]) - mean[i];
      var[i] += d * d;
    }
  }
  for (int64_t i = 0; i < inner; ++i) var[i] = len > 0 ? var[i] / n : 0.0;
}

// How a lane's gamma and beta are chosen: per position along the lane (LayerNorm), or one per
// lane, block o's lanes taking parameter o % count (InstanceNorm's channels, GroupNorm's
// groups: a block is one lane there).
enum class ParamBy { kPosition, kBlock };

// Forward over blocks: out[0] = normalised data, out[1] = mean, out[2] = sqrt(var + eps) or,
// with `save_var`, var (InstanceNorm). The statistics of block o, lane i are at o * inner + i.
template <typename T>
void normalize_lanes(const AxisSplit& s, ParamBy by, int64_t num_params, double eps, bool save_var,
                     std::span<const NDArray> in, std::span<const NDArray> out) {
  const T* x = in[0].data_as<T>();
  const T* gamma = in[1].data_as<T>();
  const T* beta = in[2].data_as<T>();
  T* y = out[0].data_as<T>();
  T* mean_out = out[1].data_as<T>();
  T* second_out = out[2].data_as<T>();
  const int64_t len = s.len, inner = s.inner;
  for_each_block(s, 2, [&](int64_t o, int64_t base, double* scratch) {
    double* mean = scratch;
    double* var = scratch + inner;
    lane_moments(x + base, len, inner, mean, var);
    for (int64_t i = 0; i < inner; ++i) {
      const double sd = std::sqrt(var[i] + eps);
      mean_out[o * inner + i] = from_double<T>(mean[i]);
      second_out[o * inner + i] = from_double<T>(save_var ? var[i] : sd);
      var[i] = 1.0 / sd;  // from here: the inverse standard deviation
    }
    const int64_t block_param = o % num_params;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t j = by == ParamBy::kPosition ? k : block_param;
      const double g = to_double(gamma[j]), b = to_double(beta[j]);
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t e = base + k * inner + i;
        y[e] = from_double<T>((to_double(x[e]) - mean[i]) * var[i] * g + b);
      }
    }
  });
}

// Backward over blocks, in: out_grad, data, gamma, mean, std or var (`saved_var`); out:
// data_grad, gamma_grad, beta_grad. dx per block in parallel; dgamma and dbeta per parameter
// afterwards (each sums over blocks, so it is a second pass rather than a shared accumulator).
template <typename T>
void normalize_lanes_backward(const AxisSplit& s, ParamBy by, int64_t num_params, double eps,
                              bool saved_var, std::span<const NDArray> in,
                              std::span<const NDArray> out) {
  const T* dy = in[0].data_as<T>();
  const T* x = in[1].data_as<T>();
  const T* gamma = in[2].data_as<T>();
  const T* mean_in = in[3].data_as<T>();
  const T* second_in = in[4].data_as<T>();
  T* dx = out[0].data_as<T>();
  const int64_t len = s.len, inner = s.inner;
  auto inv_std_of = [&](int64_t at) {
    const double v = to_double(second_in[at]);
    return saved_var ? 1.0 / std::sqrt(v + eps) : 1.0 / v;
  };
  auto param_of = [&](int64_t o, int64_t k) {
    return to_double(gamma[by == ParamBy::kPosition ? k : o % num_params]);
  };
  for_each_block(s, 4, [&](int64_t o, int64_t base, double* scratch) {
    double* mean = scratch;
    double* r = scratch + inner;
    double* mean_g = scratch + 2 * inner;
    double* mean_gx = scratch + 3 * inner;
    for (int64_t i = 0; i < inner; ++i) {
      mean[i] = to_double(mean_in[o * inner + i]);
      r[i] = inv_std_of(o * inner + i);
      mean_g[i] = mean_gx[i] = 0;
    }
    // mean(g) and mean(g * xhat) per lane, then dx.
    for (int64_t k = 0; k < len; ++k) {
      const double gk = param_of(o, k);
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t e = base + k * inner + i;
        const double g = to_double(dy[e]) * gk * r[i];
        mean_g[i] += g;
        mean_gx[i] += g * (to_double(x[e]) - mean[i]) * r[i];
      }
    }
    const double n = static_cast<double>(len);
    for (int64_t i = 0; i < inner; ++i) {
      mean_g[i] /= n;
      mean_gx[i] /= n;
    }
    for (int64_t k = 0; k < len; ++k) {
      const double gk = param_of(o, k);
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t e = base + k * inner + i;
        const double xhat = (to_double(x[e]) - mean[i]) * r[i];
        dx[e] = from_double<T>(to_double(dy[e]) * gk * r[i] - mean_g[i] - xhat * mean_gx[i]);
      }
    }
  });
  // dgamma[j] = sum(dy * xhat), dbeta[j] = sum(dy) over the elements parameter j scales: one
  // position of every lane (LayerNorm), or every lane of blocks j, j + num_params, ...
  T* dgamma = out[1].data_as<T>();
  T* dbeta = out[2].data_as<T>();
  auto add = [&](int64_t e, int64_t at, double& sum_dy, double& sum_dyx) {
    const double d = to_double(dy[e]);
    sum_dy += d;
    sum_dyx += d * (to_double(x[e]) - to_double(mean_in[at])) * inv_std_of(at);
  };
  onednn::set_thread_team();
#pragma omp parallel for if (s.outer * len * inner >= kParallelWork && num_params > 1)
  for (int64_t j = 0; j < num_params; ++j) {
    double sum_dy = 0, sum_dyx = 0;
    if (by == ParamBy::kPosition) {
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          add(o * len * inner + j * inner + i, o * inner + i, sum_dy, sum_dyx);
        }
      }
    } else {
      for (int64_t o = j; o < s.outer; o += num_params) {
        for (int64_t k = 0; k < len * inner; ++k) add(o * len * inner + k, o, sum_dy, sum_dyx);
      }
    }
    dgamma[j] = from_double<T>(sum_dyx);
    dbeta[j] = from_double<T>(sum_dy);
  }
}

// ---- LayerNorm ----------------------------------------------------------------------------

// oneDNN's layer normalization normalises the last axis; float32 data that is not empty.
bool layer_norm_onednn(const AxisSplit& s, const NDArray& data) {
  return onednn::supports(data.dtype()) && s.inner == 1 && data.size() > 0;
}

int64_t float_bits(float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

const onednn::Primitive& layer_norm_primitive(const AxisSplit& s, float eps) {
  const onednn::dims d = {s.outer, s.len};
  const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  const std::string key = onednn::key_of("LayerNorm", {d}, {float_bits(eps)}, DType::kFloat32);
  return onednn::cached(key, "layer_normalization_forward", [&] {
    const auto md = onednn::plain_desc(d, DType::kFloat32);
    const auto sd = onednn::plain_desc(onednn::dims{s.outer}, DType::kFloat32);
    using fwd = dnnl::layer_normalization_forward;
    const fwd::primitive_desc pd({dnnl::prop_kind::forward_training, md, sd, eps, flags},
                                 onednn::user_scratchpad(), onednn::engine());
    return onednn::Primitive{fwd(pd), pd};
  });
}

// oneDNN gives the variance; LayerNorm's third output is sqrt(variance + eps).
void layer_norm_forward_onednn(const AxisSplit& s, float eps, std::span<const NDArray> in,
                               std::span<const NDArray> out) {
  const onednn::Primitive& prim = layer_norm_primitive(s, eps);
  const auto md = onednn::plain_desc(onednn::dims{s.outer, s.len}, DType::kFloat32);
  const auto sd = onednn::plain_desc(onednn::dims{s.outer}, DType::kFloat32);
  const auto cd = onednn::plain_desc(onednn::dims{s.len}, DType::kFloat32);
  onednn::execute(prim, {{DNNL_ARG_SRC, onednn::wrap(md, in[0])},
                         {DNNL_ARG_DST, onednn::wrap(md, out[0])},
                         {DNNL_ARG_SCALE, onednn::wrap(cd, in[1])},
                         {DNNL_ARG_SHIFT, onednn::wrap(cd, in[2])},
                         {DNNL_ARG_MEAN, onednn::wrap(sd, out[1])},
                         {DNNL_ARG_VARIANCE, onednn::wrap(sd, out[2])}});
  float* sd_out = out[2].data_as<float>();
  for (int64_t r = 0; r < s.outer; ++r) {
    sd_out[r] = static_cast<float>(std::sqrt(double{sd_out[r]} + double{eps}));
  }
}

void layer_norm(const ParsedParams& pp, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& p = pp.get<LayerNormParams>();
  const AxisSplit s = layer_norm_split(p, in[0].shape());
  if (layer_norm_onednn(s, in[0])) return layer_norm_forward_onednn(s, p.eps, in, out);
  dispatch_float(pp.op(), in[0].dtype(), [&](auto tag) {
    normalize_lanes<decltype(tag)>(s, ParamBy::kPosition, s.len, p.eps, false, in, out);
  });
}

void layer_norm_backward(const ParsedParams& pp, std::span<const NDArray> in,
                         std::span<const NDArray> out) {
  const auto& p = pp.get<LayerNormParams>();
  const AxisSplit s = layer_norm_split(p, in[1].shape());
  // The backward stays on the plain loop for every dtype: gamma's and beta's gradients sum over
  // every row, and oneDNN's float sums missed MXNet's test_layer_norm tolerance (1e-4) at
  // (4096, 512), where the loop's double sums pass.
  dispatch_float(pp.op(), in[1].dtype(), [&](auto tag) {
    normalize_lanes_backward<decltype(tag)>(s, ParamBy::kPosition, s.len, p.eps, false, in, out);
  });
}

// ---- InstanceNorm and GroupNorm: one lane per (sample, channel) / (sample, group) ---------

// (N, C, spatial...) as N x `parts` contiguous lanes.
AxisSplit lanes_of(const Shape& data, int64_t parts) {
  const int64_t n = data[0];
  const int64_t lanes = n * parts;
  return {.outer = lanes, .len = lanes == 0 ? 0 : data.size() / lanes, .inner = 1};
}

void instance_norm(const ParsedParams& pp, std::span<const NDArray> in,
                   std::span<const NDArray> out) {
  const float eps = pp.get<InstanceNormParams>().eps;
  const int64_t c = in[0].shape()[1];
  dispatch_float(pp.op(), in[0].dtype(), [&](auto tag) {
    normalize_lanes<decltype(tag)>(lanes_of(in[0].shape(), c), ParamBy::kBlock, c, eps, true, in,
                                   out);
  });
}

void instance_norm_backward(const ParsedParams& pp, std::span<const NDArray> in,
                            std::span<const NDArray> out) {
  const float eps = pp.get<InstanceNormParams>().eps;
  const int64_t c = in[1].shape()[1];
  dispatch_float(pp.op(), in[1].dtype(), [&](auto tag) {
    normalize_lanes_backward<decltype(tag)>(lanes_of(in[1].shape(), c), ParamBy::kBlock, c, eps,
                                            true, in, out);
  });
}

void group_norm(const ParsedParams& pp, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& p = pp.get<GroupNormParams>();
  dispatch_float(pp.op(), in[0].dtype(), [&](auto tag) {
    normalize_lanes<decltype(tag)>(lanes_of(in[0].shape(), p.num_groups), ParamBy::kBlock,
                                   p.num_groups, p.eps, false, in, out);
  });
}

void group_norm_backward(const ParsedParams& pp, std::span<const NDArray> in,
                         std::span<const NDArray> out) {
  const auto& p = pp.get<GroupNormParams>();
  dispatch_float(pp.op(), in[1].dtype(), [&](auto tag) {
    normalize_lanes_backward<decltype(tag)>(lanes_of(in[1].shape(), p.num_groups), ParamBy::kBlock,
                                            p.num_groups, p.eps, false, in, out);
  });
}

// ---- L2Normalization ----------------------------------------------------------------------

// norm = sqrt(sum(x^2) + eps) per lane, y = x / norm.
void l2_normalization(const ParsedParams& pp, std::span<const NDArray> in,
                      std::span<const NDArray> out) {
  const auto& p = pp.get<L2NormalizationParams>();
  const AxisSplit s = l2_normalization_split(p.mode, in[0].shape());
  dispatch_float(pp.op(), in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].data_as<T>();
    T* y = out[0].data_as<T>();
    T* norm = out[1].data_as<T>();
    const int64_t len = s.len, inner = s.inner;
    for_each_block(s, 1, [&](int64_t o, int64_t base, double* sq) {
      for (int64_t i = 0; i < inner; ++i) sq[i] = 0;
      for (int64_t k = 0; k < len; ++k) {
        for (int64_t i = 0; i < inner; ++i) {
          const double v = to_double(x[base + k * inner + i]);
          sq[i] += v * v;
        }
      }
      for (int64_t i = 0; i < inner; ++i) {
        sq[i] = std::sqrt(sq[i] + p.eps);
        norm[o * inner + i] = from_double<T>(sq[i]);
      }
      for (int64_t k = 0; k < len; ++k) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t e = base + k * inner + i;
          y[e] = from_double<T>(to_double(x[e]) / sq[i]);
        }
      }
    });
  });
}

// in: out_grad, output, norm; dx = (dy - y * sum(dy * y)) / norm along each lane (MXNet's
// formula, from the output). dx may be dy's buffer: each lane's sum is taken before it is
// written.
void l2_normalization_backward(const ParsedParams& pp, std::span<const NDArray> in,
                               std::span<const NDArray> out) {
  const auto& p = pp.get<L2NormalizationParams>();
  const AxisSplit s = l2_normalization_split(p.mode, in[1].shape());
  dispatch_float(pp.op(), in[1].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* dy = in[0].data_as<T>();
    const T* y = in[1].data_as<T>();
    const T* norm = in[2].data_as<T>();
    T* dx = out[0].data_as<T>();
    const int64_t len = s.len, inner = s.inner;
    for_each_block(s, 1, [&](int64_t o, int64_t base, double* dot) {
      for (int64_t i = 0; i < inner; ++i) dot[i] = 0;
      for (int64_t k = 0; k < len; ++k) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t e = base + k * inner + i;
          dot[i] += to_double(dy[e]) * to_double(y[e]);
        }
      }
      for (int64_t k = 0; k < len; ++k) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t e = base + k * inner + i;
          dx[e] = from_double<T>((to_double(dy[e]) - to_double(y[e]) * dot[i]) /
                                 to_double(norm[o * inner + i]));
        }
      }
    });
  });
}

}  // namespace

void register_normalization_kernels() {
  register_batch_norm_kernels();
  register_kernel("LayerNorm", DeviceType::kCPU, layer_norm);
  register_kernel("_backward_LayerNorm", DeviceType::kCPU, layer_norm_backward);
  register_kernel("InstanceNorm", DeviceType::kCPU, instance_norm);
  register_kernel("_backward_InstanceNorm", DeviceType::kCPU, instance_norm_backward);
  register_kernel("GroupNorm", DeviceType::kCPU, group_norm);
  register_kernel("_backward_GroupNorm", DeviceType::kCPU, group_norm_backward);
  register_kernel("L2Normalization", DeviceType::kCPU, l2_normalization);
  register_kernel("_backward_L2Normalization", DeviceType::kCPU, l2_normalization_backward);
}

}  // namespace nanomx::ops::cpu
