// CPU kernels of Pooling, _backward_Pooling, LRN and _backward_LRN (definitions in
// ops/pooling.cc). float32 max and avg pooling run through oneDNN wherever its windows and
// divisors are exactly MXNet's (src/operator/nn/pool.h); every other case (float64, float16,
// sum, lp, windows wholly in the padding, avg windows cut at the padded edge) and max pooling's
// gradient (to the first maximum of each window, as MXNet's CPU unpool) are plain loops over
// (batch, channel) planes, OpenMP across the planes.
#include "ops/pooling.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/onednn/onednn.h"

namespace nanomx::ops::cpu {
namespace {

// Below this much work (elements visited) a call stays on its engine worker's thread.
constexpr int64_t kParallelWork = int64_t{1} << 15;

// Calls f(i) for each of `planes` planes, across the intra-op OpenMP team when the work
// (`per_plane` elements visited each) is worth it. f must not throw.
template <typename F>
void for_each_plane(int64_t planes, int64_t per_plane, F&& f) {
  onednn::set_thread_team();
  const bool parallel = planes > 1 && planes * per_plane >= kParallelWork;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t i = 0; i < planes; ++i) f(i);
}

template <typename T>
T store(compute_t<T> v) {
  if constexpr (std::is_same_v<T, half>) {
    return half(v);
  } else {
    return v;
  }
}

// MXNet's MinValue: what a max-pooling window without an input element gives.
template <typename T>
compute_t<T> lowest() {
  if constexpr (std::is_same_v<T, half>) {
    return -65504.0f;
  } else {
    return std::numeric_limits<T>::lowest();
  }
}

// Where the elements of (batch, channel) plane i lie, in the input and the output: the plane's
// offset and the element strides of its three spatial axes (channel-last layouts interleave the
// planes).
struct PlaneWalk {
  int64_t channels = 1, in_plane = 0, out_plane = 0;
  bool channel_last = false;
  std::array<int64_t, 3> in_step{}, out_step{};

  explicit PlaneWalk(const PoolGeometry& g)
      : channels(g.channels),
        in_plane(g.in_plane()),
        out_plane(g.out_plane()),
        channel_last(g.channel_last) {
    const int64_t c = g.channel_last ? g.channels : 1;
    in_step = {g.in[1] * g.in[2] * c, g.in[2] * c, c};
    out_step = {g.out[1] * g.out[2] * c, g.out[2] * c, c};
  }
  int64_t in_base(int64_t i) const {
    return channel_last ? (i / channels) * in_plane * channels + i % channels : i * in_plane;
  }
  int64_t out_base(int64_t i) const {
    return channel_last ? (i / channels) * out_plane * channels + i % channels : i * out_plane;
  }
};

// Every output's window along each of the three axes.
std::array<std::vector<PoolWindow>, 3> all_windows(const PoolGeometry& g) {
  std::array<std::vector<PoolWindow>, 3> w;
  for (size_t a = 0; a < 3; ++a) {
    for (int64_t o = 0; o < g.out[a]; ++o) {
      w[a].push_back(pool_window(o, g.in[a], g.kernel[a], g.stride[a], g.pad[a]));
    }
  }
  return w;
}

int64_t window_work(const PoolGeometry& g) {
  return g.out_plane() * g.kernel[0] * g.kernel[1] * g.kernel[2];
}

// Calls f(output offset, wd, wh, ww) for every output of one plane: its offset in the plane and
// its windows along the three axes.
template <typename F>
void for_each_output(const PlaneWalk& pw, const std::array<std::vector<PoolWindow>, 3>& win,
                     F&& f) {
  for (size_t od = 0; od < win[0].size(); ++od) {
    for (size_t oh = 0; oh < win[1].size(); ++oh) {
      for (size_t ow = 0; ow < win[2].size(); ++ow) {
        const int64_t o = static_cast<int64_t>(od) * pw.out_step[0] +
                          static_cast<int64_t>(oh) * pw.out_step[1] +
                          static_cast<int64_t>(ow) * pw.out_step[2];
        f(o, win[0][od], win[1][oh], win[2][ow]);
      }
    }
  }
}

// x^p and its root for lp pooling (MXNet's pool_utils.h: no absolute value, so p = 1 and p = 3
// keep signs); p = 1 also serves sum and avg.
template <int P, typename A>
A pow_p(A v) {
  if constexpr (P == 1) {
    return v;
  } else if constexpr (P == 2) {
    return v * v;
  } else {
    return v * v * v;
  }
}
template <int P, typename A>
A root_p(A v) {
  if constexpr (P == 1) {
    return v;
  } else if constexpr (P == 2) {
    return std::sqrt(v);
  } else {
    return std::cbrt(v);
  }
}
// d(root_p(sum x^p)) / dx times g; 0 where the output is 0 (MXNet's lp_grad avoids inf / nan).
template <int P, typename A>
A lp_grad(A g, A x, A y) {
  if constexpr (P == 1) {
    return g;
  } else if constexpr (P == 2) {
    return y == A(0) ? A(0) : g * (x / y);
  } else {
    const A r = x / y;
    return y == A(0) ? A(0) : g * r * r;
  }
}

int64_t count_of(const PoolWindow& d, const PoolWindow& h, const PoolWindow& w) {
  return (d.end - d.begin) * (h.end - h.begin) * (w.end - w.begin);
}

// avg's divisor (MXNet's pool_size): the window's padded extent with count_include_pad, its
// input elements without; 1 for sum and lp.
int64_t divisor_of(const PoolingParams& p, const PoolWindow& d, const PoolWindow& h,
                   const PoolWindow& w) {
  if (p.type != PoolType::kAvg) return 1;
  if (!p.count_include_pad) return count_of(d, h, w);
  return d.padded * h.padded * w.padded;
}

template <typename T>
void max_forward(const PoolGeometry& g, const T* x, T* y) {
  using A = compute_t<T>;
  const PlaneWalk pw(g);
  const auto win = all_windows(g);
  const A low = lowest<T>();
  for_each_plane(g.batch * g.channels, window_work(g), [&](int64_t i) {
    const T* xp = x + pw.in_base(i);
    T* yp = y + pw.out_base(i);
    const auto& st = pw.in_step;
    for_each_output(
        pw, win, [&](int64_t o, const PoolWindow& wd, const PoolWindow& wh, const PoolWindow& ww) {
          A m = low;
          for (int64_t d = wd.begin; d < wd.end; ++d) {
            for (int64_t h = wh.begin; h < wh.end; ++h) {
              const T* row = xp + d * st[0] + h * st[1];
              for (int64_t w = ww.begin; w < ww.end; ++w) {
                const A v = to_compute(row[w * st[2]]);
                if (v > m) m = v;  // NaN never wins, as in MXNet
              }
            }
          }
          yp[o] = store<T>(m);
        });
  });
}

template <typename T, int P>
void sum_forward(const PoolingParams& p, const PoolGeometry& g, const T* x, T* y) {
  using A = compute_t<T>;
  const PlaneWalk pw(g);
  const auto win = all_windows(g);
  for_each_plane(g.batch * g.channels, window_work(g), [&](int64_t i) {
    const T* xp = x + pw.in_base(i);
    T* yp = y + pw.out_base(i);
    const auto& st = pw.in_step;
    for_each_output(
        pw, win, [&](int64_t o, const PoolWindow& wd, const PoolWindow& wh, const PoolWindow& ww) {
          A s = 0;
          for (int64_t d = wd.begin; d < wd.end; ++d) {
            for (int64_t h = wh.begin; h < wh.end; ++h) {
              const T* row = xp + d * st[0] + h * st[1];
              for (int64_t w = ww.begin; w < ww.end; ++w) s += pow_p<P>(to_compute(row[w * st[2]]));
            }
          }
          // A window without input elements sums to 0, whatever its divisor.
          if (count_of(wd, wh, ww) > 0) s = root_p<P>(s / A(divisor_of(p, wd, wh, ww)));
          yp[o] = store<T>(s);
        });
  });
}

// Zeroes dx before the planes accumulate into it: plane by plane (in the parallel loop) when
// planes are contiguous, here at once otherwise.
template <typename T>
void zero_grad_if_interleaved(const PoolGeometry& g, T* dx) {
  if (g.channel_last) std::fill(dx, dx + g.batch * g.channels * g.in_plane(), store<T>(0));
}

// The gradient goes to the first element of the window (depth, row, column order) equal to the
// output, as MXNet's CPU unpool; none where no element is (an empty window).
template <typename T>
void max_backward(const PoolGeometry& g, const T* dy, const T* x, const T* y, T* dx) {
  using A = compute_t<T>;
  const PlaneWalk pw(g);
  const auto win = all_windows(g);
  zero_grad_if_interleaved(g, dx);
  for_each_plane(g.batch * g.channels, window_work(g), [&](int64_t i) {
    const int64_t in_base = pw.in_base(i), out_base = pw.out_base(i);
    const T* xp = x + in_base;
    T* dxp = dx + in_base;
    if (!g.channel_last) std::fill(dxp, dxp + pw.in_plane, store<T>(0));
    const auto& st = pw.in_step;
    for_each_output(
        pw, win, [&](int64_t o, const PoolWindow& wd, const PoolWindow& wh, const PoolWindow& ww) {
          const A target = to_compute(y[out_base + o]);
          for (int64_t d = wd.begin; d < wd.end; ++d) {
            for (int64_t h = wh.begin; h < wh.end; ++h) {
              const int64_t row = d * st[0] + h * st[1];
              for (int64_t w = ww.begin; w < ww.end; ++w) {
                const int64_t at = row + w * st[2];
                if (to_compute(xp[at]) == target) {
                  dxp[at] = store<T>(to_compute(dxp[at]) + to_compute(dy[out_base + o]));
                  return;
                }
              }
            }
          }
        });
  });
}

template <typename T, int P>
void sum_backward(const PoolingParams& p, const PoolGeometry& g, const T* dy, const T* x,
                  const T* y, T* dx) {
  using A = compute_t<T>;
  const PlaneWalk pw(g);
  const auto win = all_windows(g);
  zero_grad_if_interleaved(g, dx);
  for_each_plane(g.batch * g.channels, window_work(g), [&](int64_t i) {
    const int64_t in_base = pw.in_base(i), out_base = pw.out_base(i);
    const T* xp = x + in_base;
    T* dxp = dx + in_base;
    if (!g.channel_last) std::fill(dxp, dxp + pw.in_plane, store<T>(0));
    const auto& st = pw.in_step;
    for_each_output(
        pw, win, [&](int64_t o, const PoolWindow& wd, const PoolWindow& wh, const PoolWindow& ww) {
          if (count_of(wd, wh, ww) == 0) return;
          const A div = A(divisor_of(p, wd, wh, ww));
          const A gy = to_compute(dy[out_base + o]);
          const A yo = to_compute(y[out_base + o]);
          for (int64_t d = wd.begin; d < wd.end; ++d) {
            for (int64_t h = wh.begin; h < wh.end; ++h) {
              const int64_t row = d * st[0] + h * st[1];
              for (int64_t w = ww.begin; w < ww.end; ++w) {
                const int64_t at = row + w * st[2];
                const A add = lp_grad<P>(gy, to_compute(xp[at]), yo) / div;
                dxp[at] = store<T>(to_compute(dxp[at]) + add);
              }
            }
          }
        });
  });
}

template <typename T>
void forward_plain(const PoolingParams& p, const PoolGeometry& g, const T* x, T* y) {
  switch (p.type) {
    case PoolType::kMax:
      return max_forward(g, x, y);
    case PoolType::kAvg:
    case PoolType::kSum:
      return sum_forward<T, 1>(p, g, x, y);
    case PoolType::kLp:
      if (p.p_value == 2) return sum_forward<T, 2>(p, g, x, y);
      if (p.p_value == 3) return sum_forward<T, 3>(p, g, x, y);
      return sum_forward<T, 1>(p, g, x, y);
  }
}

template <typename T>
void backward_plain(const PoolingParams& p, const PoolGeometry& g, const T* dy, const T* x,
                    const T* y, T* dx) {
  switch (p.type) {
    case PoolType::kMax:
      return max_backward(g, dy, x, y, dx);
    case PoolType::kAvg:
    case PoolType::kSum:
      return sum_backward<T, 1>(p, g, dy, x, y, dx);
    case PoolType::kLp:
      if (p.p_value == 2) return sum_backward<T, 2>(p, g, dy, x, y, dx);
      if (p.p_value == 3) return sum_backward<T, 3>(p, g, dy, x, y, dx);
      return sum_backward<T, 1>(p, g, dy, x, y, dx);
  }
}

// A oneDNN pooling that computes exactly what the plain loops do.
struct OnednnPlan {
  dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  onednn::dims src, dst, kernel, strides, pad_l, pad_r;
  onednn::tag format = onednn::tag::nchw;

  dnnl::memory::desc src_desc() const { return {src, dnnl::memory::data_type::f32, format}; }
  dnnl::memory::desc dst_desc() const { return {dst, dnnl::memory::data_type::f32, format}; }
  std::string key(const char* what) const {
    return onednn::key_of(what, {src, dst, kernel, strides, pad_l, pad_r},
                          {static_cast<int64_t>(alg), static_cast<int64_t>(format)},
                          DType::kFloat32);
  }
};

// oneDNN's windows run from -pad_l in steps of the stride over the input padded by pad_l and
// pad_r; padding never counts for max nor for avg_exclude_padding, and avg_include_padding
// always divides by the whole kernel. That is MXNet's pool.h when no window lies wholly in the
// padding (pool.h gives MinValue or 0 there) and, with count_include_pad, no window runs past
// the left pad's width on the right (pool.h cuts those windows there and divides by less: the
// 'full' convention's extra windows, 'same''s last ones). Otherwise: nullopt, the plain loops.
std::optional<OnednnPlan> onednn_plan(const PoolingParams& p, const PoolGeometry& g, DType dtype) {
  if (!onednn::supports(dtype) || (p.type != PoolType::kMax && p.type != PoolType::kAvg)) {
    return std::nullopt;
  }
  if (g.batch == 0 || g.channels == 0) return std::nullopt;
  OnednnPlan plan;
  if (p.type == PoolType::kAvg) {
    plan.alg = p.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                   : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  plan.src = {g.batch, g.channels};
  plan.dst = {g.batch, g.channels};
  for (size_t a = static_cast<size_t>(3 - g.nsp); a < 3; ++a) {
    const int64_t x = g.in[a], o = g.out[a], k = g.kernel[a], s = g.stride[a], pl = g.pad[a];
    if (x == 0) return std::nullopt;
    // How far the last window reaches past the input's end (negative: it stops short).
    const int64_t reach = (o - 1) * s + k - x - pl;
    if (pl >= k || reach >= k) return std::nullopt;
    if (p.type == PoolType::kAvg && p.count_include_pad && reach > pl) return std::nullopt;
    plan.src.push_back(x);
    plan.dst.push_back(o);
    plan.kernel.push_back(k);
    plan.strides.push_back(s);
    plan.pad_l.push_back(pl);
    // oneDNN's extent floor((x + pl + pr - k) / s) + 1 is o for any pr in [reach, reach + s)
    // (reach > -s always): no padding oneDNN's windows would read.
    plan.pad_r.push_back(std::max<int64_t>(reach, 0));
  }
  using onednn::tag;
  static constexpr tag kFirst[] = {tag::ncw, tag::nchw, tag::ncdhw};
  static constexpr tag kLast[] = {tag::nwc, tag::nhwc, tag::ndhwc};
  plan.format = (g.channel_last ? kLast : kFirst)[g.nsp - 1];
  return plan;
}

dnnl::pooling_forward::desc forward_desc(const OnednnPlan& plan, dnnl::prop_kind prop) {
  return {prop,         plan.alg,    plan.src_desc(), plan.dst_desc(),
          plan.strides, plan.kernel, plan.pad_l,      plan.pad_r};
}

// Runs the plan forward; false when oneDNN refuses it (remembered: later calls go straight to
// the plain loops).
bool onednn_forward(const OnednnPlan& plan, const NDArray& x, const NDArray& y) {
  const onednn::Primitive& prim =
      onednn::cached(plan.key("Pooling"), "pooling forward", [&]() -> onednn::Primitive {
        try {
          const dnnl::pooling_forward::primitive_desc pd(
              forward_desc(plan, dnnl::prop_kind::forward_inference), onednn::user_scratchpad(),
              onednn::engine());
          return {dnnl::pooling_forward(pd), pd};
        } catch (const dnnl::error&) {
          return {};
        }
      });
  if (!prim.primitive) return false;
  onednn::execute(prim, {{DNNL_ARG_SRC, onednn::wrap(plan.src_desc(), x)},
                         {DNNL_ARG_DST, onednn::wrap(plan.dst_desc(), y)}});
  return true;
}

// avg's gradient through oneDNN (it overwrites dx); false when oneDNN refuses the plan.
bool onednn_backward(const OnednnPlan& plan, const NDArray& dy, const NDArray& dx) {
  const onednn::Primitive& prim =
      onednn::cached(plan.key("_backward_Pooling"), "pooling backward", [&]() -> onednn::Primitive {
        try {
          const dnnl::pooling_forward::primitive_desc hint(
              forward_desc(plan, dnnl::prop_kind::forward_training), onednn::engine());
          const dnnl::pooling_backward::desc desc(plan.alg, plan.src_desc(), plan.dst_desc(),
                                                  plan.strides, plan.kernel, plan.pad_l,
                                                  plan.pad_r);
          const dnnl::pooling_backward::primitive_desc pd(desc, onednn::user_scratchpad(),
                                                          onednn::engine(), hint);
          return {dnnl::pooling_backward(pd), pd};
        } catch (const dnnl::error&) {
          return {};
        }
      });
  if (!prim.primitive) return false;
  onednn::execute(prim, {{DNNL_ARG_DIFF_DST, onednn::wrap(plan.dst_desc(), dy)},
                         {DNNL_ARG_DIFF_SRC, onednn::wrap(plan.src_desc(), dx)}});
  return true;
}

void require_float(const char* op, const NDArray& a) {
  NANOMX_CHECK(is_float_dtype(a.dtype()))
      << op << ": the CPU kernel takes float16, float32 and float64, got " << dtype_name(a.dtype());
}

void pooling(const ParsedParams& pp, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& p = pp.get<PoolingParams>();
  const NDArray& x = in[0];
  const NDArray& y = out[0];
  require_float("Pooling", x);
  if (y.size() == 0) return;
  const PoolGeometry g = pooling_geometry(p, x.shape());
  if (const auto plan = onednn_plan(p, g, x.dtype()); plan && onednn_forward(*plan, x, y)) return;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) forward_plain<T>(p, g, x.data_as<T>(), y.data_as<T>());
  });
}

// (dy, x, y) -> dx.
void pooling_backward(const ParsedParams& pp, std::span<const NDArray> in,
                      std::span<const NDArray> out) {
  const auto& p = pp.get<PoolingParams>();
  const NDArray& x = in[1];
  const NDArray& dx = out[0];
  require_float("_backward_Pooling", x);
  if (dx.size() == 0) return;
  const PoolGeometry g = pooling_geometry(p, x.shape());
  if (p.type == PoolType::kAvg) {
    const auto plan = onednn_plan(p, g, x.dtype());
    if (plan && onednn_backward(*plan, in[0], dx)) return;
  }
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      backward_plain<T>(p, g, in[0].data_as<T>(), x.data_as<T>(), in[2].data_as<T>(),
                        dx.data_as<T>());
    }
  });
}

// LRN over (batch, channel, height, width), MXNet's lrn-inl.h:
//   norm = knorm + alpha / nsize * sum of x^2 over channels [c - nsize/2, c + nsize/2] (clipped),
//   y = x * norm^-beta,
//   dx = dy norm^-beta - 2 beta alpha / nsize * x * (that channel sum of dy x norm^(-beta-1)).
// Plain loops: oneDNN's LRN has MXNet's formula but keeps no norm for the gradient.
struct LRNWalk {
  int64_t channels, spatial, half_window;
  int64_t lo(int64_t c) const { return std::max<int64_t>(c - half_window, 0); }
  int64_t hi(int64_t c) const { return std::min(c + half_window + 1, channels); }
};

template <typename T>
void lrn_forward(const LRNParams& p, const Shape& s, const T* x, T* y, T* norm) {
  using A = compute_t<T>;
  const LRNWalk lw{s[1], s[2] * s[3], p.nsize / 2};
  const A salpha = A(p.alpha) / A(p.nsize), knorm = A(p.knorm), nbeta = A(-p.beta);
  for_each_plane(s[0] * lw.channels, lw.spatial * (p.nsize + 1), [&](int64_t i) {
    const int64_t c = i % lw.channels;
    const T* first = x + (i - c) * lw.spatial;  // channel 0 of this batch entry
    for (int64_t j = 0; j < lw.spatial; ++j) {
      A sum = 0;
      for (int64_t k = lw.lo(c); k < lw.hi(c); ++k) {
        const A v = to_compute(first[k * lw.spatial + j]);
        sum += v * v;
      }
      const A n = sum * salpha + knorm;
      const int64_t at = i * lw.spatial + j;
      norm[at] = store<T>(n);
      y[at] = store<T>(to_compute(x[at]) * std::pow(n, nbeta));
    }
  });
}

template <typename T>
void lrn_backward(const LRNParams& p, const Shape& s, const T* dy, const T* x, const T* norm,
                  T* dx) {
  using A = compute_t<T>;
  const LRNWalk lw{s[1], s[2] * s[3], p.nsize / 2};
  const A salpha = A(p.alpha) / A(p.nsize), beta = A(p.beta);
  const int64_t planes = s[0] * lw.channels;
  std::vector<A> t(static_cast<size_t>(planes * lw.spatial));  // dy x norm^(-beta-1)
  for_each_plane(planes, lw.spatial, [&](int64_t i) {
    for (int64_t j = i * lw.spatial; j < (i + 1) * lw.spatial; ++j) {
      t[static_cast<size_t>(j)] =
          to_compute(dy[j]) * to_compute(x[j]) * std::pow(to_compute(norm[j]), -beta - A(1));
    }
  });
  const A coef = A(-2) * beta * salpha;
  for_each_plane(planes, lw.spatial * (p.nsize + 1), [&](int64_t i) {
    const int64_t c = i % lw.channels;
    const A* first = t.data() + (i - c) * lw.spatial;
    for (int64_t j = 0; j < lw.spatial; ++j) {
      A sum = 0;
      for (int64_t k = lw.lo(c); k < lw.hi(c); ++k) sum += first[k * lw.spatial + j];
      const int64_t at = i * lw.spatial + j;
      dx[at] = store<T>(to_compute(dy[at]) * std::pow(to_compute(norm[at]), -beta) +
                        coef * sum * to_compute(x[at]));
    }
  });
}

void lrn(const ParsedParams& pp, std::span<const NDArray> in, std::span<const NDArray> out) {
  require_float("LRN", in[0]);
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      lrn_forward<T>(pp.get<LRNParams>(), in[0].shape(), in[0].data_as<T>(), out[0].data_as<T>(),
                     out[1].data_as<T>());
    }
  });
}

// (dy, x, tmp_norm) -> dx.
void lrn_backward_kernel(const ParsedParams& pp, std::span<const NDArray> in,
                         std::span<const NDArray> out) {
  require_float("_backward_LRN", in[1]);
  dispatch_dtype(in[1].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      lrn_backward<T>(pp.get<LRNParams>(), in[1].shape(), in[0].data_as<T>(), in[1].data_as<T>(),
                      in[2].data_as<T>(), out[0].data_as<T>());
    }
  });
}

}  // namespace

void register_pooling_kernels() {
  register_kernel("Pooling", DeviceType::kCPU, pooling);
  register_kernel("_backward_Pooling", DeviceType::kCPU, pooling_backward);
  register_kernel("LRN", DeviceType::kCPU, lrn);
  register_kernel("_backward_LRN", DeviceType::kCPU, lrn_backward_kernel);
}

}  // namespace nanomx::ops::cpu
