// CPU kernels of the optimizer update operators (definitions in ops/optimizer.cc), with
// MXNet's formulas element by element in the weight's compute type (float for float16). The
// weight is written through out[0] (the weight itself when called with out=weight); the state
// inputs are written in place.
#include "ops/optimizer.h"

#include <cmath>
#include <type_traits>

#include "backends/cpu/kernels/kernels.h"

namespace nanomx::ops::cpu {
namespace {

template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename C>
inline C clip(C x, C c) {
  if (c < 0) return x;  // clip_gradient < 0: no clipping
  return x > c ? c : (x < -c ? -c : x);
}

template <typename Fn>
void dispatch_float(const char* op, DType dtype, Fn&& fn) {
  NANOMX_CHECK(dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16)
      << op << ": the CPU kernel supports float32, float64 and float16 weights, got "
      << dtype_name(dtype);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, half>) {
      fn(tag);
    }
  });
}

// sgd_update: w = (1 - lr*wd)*w - lr*clip(rescale*g).
void sgd_update(const ParsedParams& pp, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& p = pp.get<OptimizerParams>();
  dispatch_float("sgd_update", in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* w = in[0].data_as<T>();
    const T* g = in[1].data_as<T>();
    T* o = out[0].data_as<T>();
    const C lr = C(p.lr), wd = C(p.wd), rs = C(p.rescale_grad), c = C(p.clip_gradient);
    const int64_t n = out[0].size();
    for (int64_t i = 0; i < n; ++i) {
      const C wi = C(w[i]);
      o[i] = T((C(1) - lr * wd) * wi - lr * clip(rs * C(g[i]), c));
    }
  });
}

// sgd_mom_update: m = momentum*m - lr*wd*w - lr*clip(rescale*g); w = w + m.
void sgd_mom_update(const ParsedParams& pp, std::span<const NDArray> in,
                    std::span<const NDArray> out) {
  const auto& p = pp.get<OptimizerParams>();
  dispatch_float("sgd_mom_update", in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* w = in[0].data_as<T>();
    const T* g = in[1].data_as<T>();
    T* m = in[2].data_as<T>();
    T* o = out[0].data_as<T>();
    const C lr = C(p.lr), wd = C(p.wd), rs = C(p.rescale_grad), c = C(p.clip_gradient),
            mu = C(p.momentum);
    const int64_t n = out[0].size();
    for (int64_t i = 0; i < n; ++i) {
      const C wi = C(w[i]);
      const C mi = mu * C(m[i]) - lr * wd * wi - lr * clip(rs * C(g[i]), c);
      m[i] = T(mi);
      o[i] = T(wi + mi);
    }
  });
}

// mp_sgd_update / mp_sgd_mom_update: the same on the float32 master copy (last input), then
// the weight is its cast.
template <bool kMomentum>
void mp_sgd_update(const ParsedParams& pp, std::span<const NDArray> in,
                   std::span<const NDArray> out) {
  const auto& p = pp.get<OptimizerParams>();
  const char* name = kMomentum ? "mp_sgd_mom_update" : "mp_sgd_update";
  dispatch_float(name, in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = in[1].data_as<T>();
    float* m = kMomentum ? in[2].data_as<float>() : nullptr;
    float* w32 = in[kMomentum ? 3 : 2].data_as<float>();
    T* o = out[0].data_as<T>();
    const float lr = float(p.lr), wd = float(p.wd), rs = float(p.rescale_grad),
                c = float(p.clip_gradient), mu = float(p.momentum);
    const int64_t n = out[0].size();
    for (int64_t i = 0; i < n; ++i) {
      const float wi = w32[i];
      const float step = lr * clip(rs * float(g[i]), c);
      float wn = 0;
      if constexpr (kMomentum) {
        const float mi = mu * m[i] - lr * wd * wi - step;
        m[i] = mi;
        wn = wi + mi;
      } else {
        wn = (1.0f - lr * wd) * wi - step;
      }
      w32[i] = wn;
      o[i] = T(wn);
    }
  });
}

// adam_update: g' = clip(rescale*g + wd*w); mean = b1*mean + (1-b1)*g';
// var = b2*var + (1-b2)*g'^2; w = w - lr*mean/(sqrt(var) + eps). (Bias correction is the
// caller's: MXNet's Python folds it into lr.)
void adam_update(const ParsedParams& pp, std::span<const NDArray> in,
                 std::span<const NDArray> out) {
  const auto& p = pp.get<OptimizerParams>();
  dispatch_float("adam_update", in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* w = in[0].data_as<T>();
    const T* g = in[1].data_as<T>();
    T* mean = in[2].data_as<T>();
    T* var = in[3].data_as<T>();
    T* o = out[0].data_as<T>();
    const C lr = C(p.lr), wd = C(p.wd), rs = C(p.rescale_grad), c = C(p.clip_gradient),
            b1 = C(p.beta1), b2 = C(p.beta2), eps = C(p.epsilon);
    const int64_t n = out[0].size();
    for (int64_t i = 0; i < n; ++i) {
      const C wi = C(w[i]);
      const C gi = clip(rs * C(g[i]) + wd * wi, c);
      const C mi = b1 * C(mean[i]) + (C(1) - b1) * gi;
      const C vi = b2 * C(var[i]) + (C(1) - b2) * gi * gi;
      mean[i] = T(mi);
      var[i] = T(vi);
      o[i] = T(wi - lr * mi / (std::sqrt(vi) + eps));
    }
  });
}

// multi_sgd_update / multi_sgd_mom_update: sgd_update / sgd_mom_update per weight, with that
// weight's lr and wd.
template <bool kMomentum>
void multi_sgd_update(const ParsedParams& pp, std::span<const NDArray> in,
                      std::span<const NDArray> out) {
  const auto& p = pp.get<MultiSgdParams>();
  constexpr int kGroup = kMomentum ? 3 : 2;
  const char* name = kMomentum ? "multi_sgd_mom_update" : "multi_sgd_update";
  for (int gi = 0; gi < p.num_weights; ++gi) {
    const NDArray& weight = in[gi * kGroup];
    dispatch_float(name, weight.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = Compute<T>;
      const T* w = weight.data_as<T>();
      const T* g = in[gi * kGroup + 1].data_as<T>();
      T* m = kMomentum ? in[gi * kGroup + 2].data_as<T>() : nullptr;
      T* o = out[gi].data_as<T>();
      const C lr = C(p.lrs[gi]), wd = C(p.wds[gi]), rs = C(p.rescale_grad), c = C(p.clip_gradient),
              mu = C(p.momentum);
      const int64_t n = out[gi].size();
      for (int64_t i = 0; i < n; ++i) {
        const C wi = C(w[i]);
        if constexpr (kMomentum) {
          const C mi = mu * C(m[i]) - lr * wd * wi - lr * clip(rs * C(g[i]), c);
          m[i] = T(mi);
          o[i] = T(wi + mi);
        } else {
          o[i] = T((C(1) - lr * wd) * wi - lr * clip(rs * C(g[i]), c));
        }
      }
    });
  }
}

}  // namespace

void register_optimizer_kernels() {
  register_kernel("multi_sgd_update", DeviceType::kCPU, multi_sgd_update<false>);
  register_kernel("multi_sgd_mom_update", DeviceType::kCPU, multi_sgd_update<true>);
  register_kernel("sgd_update", DeviceType::kCPU, sgd_update);
  register_kernel("sgd_mom_update", DeviceType::kCPU, sgd_mom_update);
  register_kernel("mp_sgd_update", DeviceType::kCPU, mp_sgd_update<false>);
  register_kernel("mp_sgd_mom_update", DeviceType::kCPU, mp_sgd_update<true>);
  register_kernel("adam_update", DeviceType::kCPU, adam_update);
}

}  // namespace nanomx::ops::cpu
