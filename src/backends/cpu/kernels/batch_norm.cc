// CPU kernels of BatchNorm and _backward_BatchNorm (definitions in ops/normalization.cc):
// oneDNN's batch normalization for float32 (as MXNet's MKL-DNN path), plain loops accumulating
// in double for float64 and for float16 data (whose parameters are float32).
//
// Semantics (MXNet 1.9.1's src/operator/nn/batch_norm.cc): in training without
// use_global_stats the batch mean and biased variance normalise the data, the outputs mean and
// var are that mean and the inverse standard deviation 1/sqrt(variance + eps), and the moving
// statistics move toward the batch's (moving = moving * momentum + batch * (1 - momentum)) in
// this forward call. Otherwise the moving statistics normalise, and mean/var are the moving mean
// and its inverse standard deviation. The gradient treats mean and var as what the forward call
// saved: batch statistics (the training formula) or constants (the inference one).
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/onednn/onednn.h"
#include "ops/normalization.h"

namespace nanomx::ops::cpu {

void register_batch_norm_kernels();  // called by normalization.cc

namespace {

// Loops over at least this many elements run on the OpenMP team.
constexpr int64_t kParallelWork = int64_t{1} << 15;

// One channel's elements: outer blocks of `inner` contiguous elements, len * inner apart.
struct ChannelWalk {
  AxisSplit s;
  int64_t count() const { return s.outer * s.inner; }
  template <typename F>
  void each(int64_t c, F&& f) const {
    for (int64_t o = 0; o < s.outer; ++o) {
      const int64_t base = (o * s.len + c) * s.inner;
      for (int64_t i = 0; i < s.inner; ++i) f(base + i);
    }
  }
};

// ---- plain loops (float64; float16 data with float32 parameters) --------------------------

template <typename T, typename P>
void forward_plain(const BatchNormParams& p, bool batch_stats, std::span<const NDArray> in,
                   std::span<const NDArray> out) {
  const ChannelWalk w{batch_norm_split(p, in[0].shape())};
  const T* x = in[0].data_as<T>();
  const P* gamma = in[1].data_as<P>();
  const P* beta = in[2].data_as<P>();
  P* moving_mean = in[3].data_as<P>();
  P* moving_var = in[4].data_as<P>();
  T* y = out[0].data_as<T>();
  P* mean_out = out[1].data_as<P>();
  P* var_out = out[2].data_as<P>();
  const int64_t count = w.count();
  const double momentum = p.momentum;
  onednn::set_thread_team();
#pragma omp parallel for if (count * w.s.len >= kParallelWork)
  for (int64_t c = 0; c < w.s.len; ++c) {
    double mean = 0, inv_std = 0;
    if (batch_stats) {
      double sum = 0, squares = 0;
      w.each(c, [&](int64_t k) { sum += to_double(x[k]); });
      mean = count > 0 ? sum / static_cast<double>(count) : 0.0;
      w.each(c, [&](int64_t k) {
        const double d = to_double(x[k]) - mean;
        squares += d * d;
      });
      const double var = count > 0 ? squares / static_cast<double>(count) : 0.0;
      // MXNet's guard: no spread and no eps give 0, so the output is beta rather than NaN.
      inv_std = squares == 0 && p.eps == 0 ? 0.0 : 1.0 / std::sqrt(var + p.eps);
      // An empty batch has no statistics to move toward.
      if (count > 0) {
        moving_mean[c] = static_cast<P>(moving_mean[c] * momentum + mean * (1 - momentum));
        moving_var[c] = static_cast<P>(moving_var[c] * momentum + var * (1 - momentum));
      }
    } else {
      mean = moving_mean[c];
      inv_std = 1.0 / std::sqrt(static_cast<double>(moving_var[c]) + p.eps);
    }
    mean_out[c] = static_cast<P>(mean);
    var_out[c] = static_cast<P>(inv_std);
    const double scale = (p.fix_gamma ? 1.0 : static_cast<double>(gamma[c])) * inv_std;
    const double shift = beta[c];
    w.each(c, [&](int64_t k) { y[k] = from_double<T>((to_double(x[k]) - mean) * scale + shift); });
  }
}

// in: out_grad, data, gamma, mean, var (the inverse standard deviation); out: data_grad,
// gamma_grad, beta_grad. With batch statistics
//   dx = (dy - mean(dy) - (x - mean) * mean(dy * (x - mean)) * inv_std^2) * inv_std * gamma,
// with fixed ones dx = dy * inv_std * gamma; dgamma = sum(dy * (x - mean)) * inv_std (0 with
// fix_gamma), dbeta = sum(dy).
template <typename T, typename P>
void backward_plain(const BatchNormParams& p, bool batch_stats, std::span<const NDArray> in,
                    std::span<const NDArray> out) {
  const ChannelWalk w{batch_norm_split(p, in[1].shape())};
  const T* dy = in[0].data_as<T>();
  const T* x = in[1].data_as<T>();
  const P* gamma = in[2].data_as<P>();
  const P* saved_mean = in[3].data_as<P>();
  const P* saved_inv_std = in[4].data_as<P>();
  T* dx = out[0].data_as<T>();
  P* dgamma = out[1].data_as<P>();
  P* dbeta = out[2].data_as<P>();
  const auto count = static_cast<double>(w.count());
  onednn::set_thread_team();
#pragma omp parallel for if (w.count() * w.s.len >= kParallelWork)
  for (int64_t c = 0; c < w.s.len; ++c) {
    const double mean = saved_mean[c], inv_std = saved_inv_std[c];
    const double g = p.fix_gamma ? 1.0 : static_cast<double>(gamma[c]);
    double sum_dy = 0, dot = 0;
    w.each(c, [&](int64_t k) {
      const double d = to_double(dy[k]);
      sum_dy += d;
      dot += (to_double(x[k]) - mean) * d;
    });
    const double scale = inv_std * g;
    if (batch_stats && count > 0) {
      const double mean_dy = sum_dy / count;
      const double proj = dot * inv_std * inv_std / count;
      if constexpr (std::is_same_v<T, float>) {
        // The sums above accumulate in double; this pass stays in float so that it vectorizes
        // at full width (it is half the kernel's memory traffic).
        const auto m = static_cast<float>(mean), mdy = static_cast<float>(mean_dy),
                   pr = static_cast<float>(proj), sc = static_cast<float>(scale);
        w.each(c, [&](int64_t k) { dx[k] = (dy[k] - mdy - (x[k] - m) * pr) * sc; });
      } else {
        w.each(c, [&](int64_t k) {
          const double centered = to_double(x[k]) - mean;
          dx[k] = from_double<T>((to_double(dy[k]) - mean_dy - centered * proj) * scale);
        });
      }
    } else {
      w.each(c, [&](int64_t k) { dx[k] = from_double<T>(to_double(dy[k]) * scale); });
    }
    dgamma[c] = static_cast<P>(p.fix_gamma ? 0.0 : dot * inv_std);
    dbeta[c] = static_cast<P>(sum_dy);
  }
}

// ---- oneDNN (float32) ---------------------------------------------------------------------

using dnnl::normalization_flags;

// oneDNN computes exactly MXNet's formulas for float32 data that is not empty and an eps above
// 0 (with eps 0 a constant channel would give NaN where MXNet gives beta).
bool use_onednn(const BatchNormParams& p, const NDArray& data) {
  return onednn::supports(data.dtype()) && data.size() > 0 && p.eps > 0;
}

// The data as MXNet's MKL-DNN path sees it: (outer, channels, 1, inner), row-major.
onednn::dims nchw_dims(const AxisSplit& s) { return {s.outer, s.len, 1, s.inner}; }

normalization_flags flags_for(bool batch_stats) {
  // fix_gamma passes a scale of ones: one primitive for both.
  normalization_flags f = normalization_flags::use_scale | normalization_flags::use_shift;
  if (!batch_stats) f |= normalization_flags::use_global_stats;
  return f;
}

int64_t float_bits(float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

void forward_onednn(const BatchNormParams& p, bool batch_stats, std::span<const NDArray> in,
                    std::span<const NDArray> out) {
  const AxisSplit s = batch_norm_split(p, in[0].shape());
  const onednn::dims d = nchw_dims(s);
  const auto eps = static_cast<float>(p.eps);
  const normalization_flags flags = flags_for(batch_stats);
  const auto prop =
      batch_stats ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const std::string key =
      onednn::key_of("BatchNorm", {d}, {static_cast<int64_t>(flags), batch_stats, float_bits(eps)},
                     DType::kFloat32);
  const onednn::Primitive& prim = onednn::cached(key, "batch_normalization_forward", [&] {
    const dnnl::memory::desc md = onednn::plain_desc(d, DType::kFloat32);
    const dnnl::batch_normalization_forward::primitive_desc pd(
        {prop, md, eps, flags}, onednn::user_scratchpad(), onednn::engine());
    return onednn::Primitive{dnnl::batch_normalization_forward(pd), pd};
  });
  const dnnl::memory::desc md = onednn::plain_desc(d, DType::kFloat32);
  const dnnl::memory::desc cd = onednn::plain_desc(onednn::dims{s.len}, DType::kFloat32);
  std::vector<float> ones;
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, onednn::wrap(md, in[0])},
                                                {DNNL_ARG_DST, onednn::wrap(md, out[0])},
                                                {DNNL_ARG_SHIFT, onednn::wrap(cd, in[2])}};
  if (p.fix_gamma) {
    ones.assign(static_cast<size_t>(s.len), 1.0f);
    args.emplace(DNNL_ARG_SCALE, onednn::wrap(cd, ones.data()));
  } else {
    args.emplace(DNNL_ARG_SCALE, onednn::wrap(cd, in[1]));
  }
  // Training writes the batch statistics into the mean and var outputs; inference reads the
  // moving ones.
  const NDArray& mean = batch_stats ? out[1] : in[3];
  const NDArray& var = batch_stats ? out[2] : in[4];
  args.emplace(DNNL_ARG_MEAN, onednn::wrap(cd, mean));
  args.emplace(DNNL_ARG_VARIANCE, onednn::wrap(cd, var));
  onednn::execute(prim, std::move(args));

  float* moving_mean = in[3].data_as<float>();
  float* moving_var = in[4].data_as<float>();
  float* mean_out = out[1].data_as<float>();
  float* var_out = out[2].data_as<float>();
  const double momentum = p.momentum;
  for (int64_t c = 0; c < s.len; ++c) {
    if (batch_stats) {
      const double v = var_out[c];
      moving_mean[c] =
          static_cast<float>(moving_mean[c] * momentum + double{mean_out[c]} * (1 - momentum));
      moving_var[c] = static_cast<float>(moving_var[c] * momentum + v * (1 - momentum));
      var_out[c] = static_cast<float>(1.0 / std::sqrt(v + p.eps));
    } else {
      mean_out[c] = moving_mean[c];
      var_out[c] = static_cast<float>(1.0 / std::sqrt(double{moving_var[c]} + p.eps));
    }
  }
}

// Inference admitted float16, float32 and float64 data only.
template <template <typename, typename> class Kernel>
void dispatch(const char* op, DType dtype, const BatchNormParams& p, bool batch_stats,
              std::span<const NDArray> in, std::span<const NDArray> out) {
  switch (dtype) {
    case DType::kFloat32:
      return Kernel<float, float>::run(p, batch_stats, in, out);
    case DType::kFloat64:
      return Kernel<double, double>::run(p, batch_stats, in, out);
    case DType::kFloat16:
      return Kernel<half, float>::run(p, batch_stats, in, out);
    default:
      NANOMX_THROW() << op << ": the CPU kernel takes float16, float32 and float64 data, got "
                     << dtype_name(dtype);
  }
}

template <typename T, typename P>
struct Forward {
  static void run(const BatchNormParams& p, bool batch_stats, std::span<const NDArray> in,
                  std::span<const NDArray> out) {
    forward_plain<T, P>(p, batch_stats, in, out);
  }
};
template <typename T, typename P>
struct Backward {
  static void run(const BatchNormParams& p, bool batch_stats, std::span<const NDArray> in,
                  std::span<const NDArray> out) {
    backward_plain<T, P>(p, batch_stats, in, out);
  }
};

void batch_norm(const ParsedParams& pp, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& p = pp.get<BatchNormParams>();
  const bool batch_stats = pp.is_train() && !p.use_global_stats;
  if (use_onednn(p, in[0])) return forward_onednn(p, batch_stats, in, out);
  dispatch<Forward>("BatchNorm", in[0].dtype(), p, batch_stats, in, out);
}

void batch_norm_backward(const ParsedParams& pp, std::span<const NDArray> in,
                         std::span<const NDArray> out) {
  const auto& p = pp.get<BatchNormParams>();
  const bool batch_stats = pp.is_train() && !p.use_global_stats;
  // oneDNN's backward on plain (ncsp) data measured 3.9 ms for (16, 64, 56, 56) float32 where
  // this loop takes about 2.6 ms (bench/compare_nn.py's shape): the forward alone uses oneDNN.
  dispatch<Backward>("_backward_BatchNorm", in[1].dtype(), p, batch_stats, in, out);
}

}  // namespace

void register_batch_norm_kernels() {
  register_kernel("BatchNorm", DeviceType::kCPU, batch_norm);
  register_kernel("_backward_BatchNorm", DeviceType::kCPU, batch_norm_backward);
}

}  // namespace nanomx::ops::cpu
