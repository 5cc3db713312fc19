// CPU kernels of the backward operators (definitions and formulas in ops/backward_ops.cc).
// Sums over a batch or a broadcast axis accumulate in double; every kernel takes float16,
// float32 and float64 (a gradient of integers is refused by name).
#include <cblas.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/onednn/onednn.h"
#include "ops/backward_ops.h"
#include "ops/nn.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

// Calls fn(T{}) for a floating-point dtype; any other names the operator.
template <typename Fn>
void dispatch_float(DType dtype, const std::string& op, Fn&& fn) {
  NANOMX_CHECK(is_float_dtype(dtype))
      << op << ": gradients are computed for float16, float32 and float64, got "
      << dtype_name(dtype);
  dispatch_dtype(dtype, [&](auto tag) {
    if constexpr (kIsFloat<decltype(tag)>) fn(tag);
  });
}

void fill_zero(const NDArray& a) {
  if (a.nbytes()) std::memset(a.data(), 0, a.nbytes());
}

void fc_backward(const ParsedParams& pp, std::span<const NDArray> in,
                 std::span<const NDArray> out) {
  const auto& p = pp.get<FullyConnectedParams>();
  const NDArray &dy = in[0], &x = in[1], &w = in[2];
  NANOMX_CHECK(x.dtype() == DType::kFloat32 || x.dtype() == DType::kFloat64)
      << pp.op() << ": the CPU kernel supports float32 and float64, got " << dtype_name(x.dtype());
  const int64_t n = p.num_hidden, k = w.shape()[1];
  const int64_t m = n == 0 ? 0 : dy.size() / n;
  const DType t = x.dtype();
  // dW = dY^T X, then db = column sums of dY, then dX = dY W (last: dX may share X's buffer).
  gemm(t, dy.data(), x.data(), out[1].data(), DotDims{n, m, k, true, false});
  if (!p.no_bias) {
    dispatch_float(t, pp.op(), [&](auto tag) {
      using T = decltype(tag);
      const T* g = dy.data_as<T>();
      std::vector<double> sums(static_cast<size_t>(n), 0.0);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) sums[static_cast<size_t>(j)] += to_double(g[i * n + j]);
      }
      T* db = out[2].data_as<T>();
      for (int64_t j = 0; j < n; ++j) db[j] = from_double<T>(sums[static_cast<size_t>(j)]);
    });
  }
  if (pp.output_wanted(0))
    gemm(t, dy.data(), w.data(), out[0].data(), DotDims{m, n, k, false, false});
}

// dx = dy * f'(...) in the dtype's compute type (as MXNet's kernels), one loop per act_type.
template <typename T, typename F>
void map_grad(const NDArray& dy, const NDArray& v, const NDArray& dx, F f) {
  using C = compute_t<T>;
  const T* g = dy.data_as<T>();
  const T* a = v.data_as<T>();
  T* o = dx.data_as<T>();
  const int64_t n = dx.size();
  // Memory-bound: split across the intra-op team when large (docs/nn.md#threads).
  onednn::set_thread_team();
#pragma omp parallel for if (n >= (int64_t{1} << 16))
  for (int64_t i = 0; i < n; ++i) o[i] = T(to_compute(g[i]) * f(C(to_compute(a[i]))));
}

void activation_backward(const ParsedParams& pp, std::span<const NDArray> in,
                         std::span<const NDArray> out) {
  const ActType act = pp.get<ActivationParams>().act;
  dispatch_float(in[0].dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const NDArray &dy = in[0], &y = in[1], &dx = out[0];
    switch (act) {
      case ActType::kRelu:  // NaN passes through
        if constexpr (std::is_same_v<T, float>) {
          // Both compares made unconditionally, so that the loop vectorizes.
          const float* g = dy.data_as<float>();
          const float* v = y.data_as<float>();
          float* o = dx.data_as<float>();
          const int64_t n = dx.size();
          onednn::set_thread_team();
#pragma omp parallel for if (n >= (int64_t{1} << 16))
          for (int64_t i = 0; i < n; ++i) {
            const float positive = v[i] > 0.0f ? g[i] : 0.0f;
            o[i] = v[i] != v[i] ? v[i] : positive;
          }
          return;
        }
        return map_grad<T>(dy, y, dx, [](C v) { return std::isnan(v) ? v : C(v > C(0)); });
      case ActType::kSigmoid:
        return map_grad<T>(dy, y, dx, [](C v) { return v * (C(1) - v); });
      case ActType::kTanh:
        return map_grad<T>(dy, y, dx, [](C v) { return C(1) - v * v; });
      case ActType::kSoftRelu:
        return map_grad<T>(dy, y, dx, [](C v) { return -std::expm1(-v); });
      case ActType::kSoftSign:
        return map_grad<T>(dy, in[2], dx, [](C v) {
          const C a = C(1) + std::abs(v);
          return C(1) / (a * a);
        });
    }
  });
}

// Softmax minus the (smoothed) one-hot label, normalised as MXNet's SoftmaxOutput backward.
void softmax_output_backward(const ParsedParams& pp, std::span<const NDArray> in,
                             std::span<const NDArray> out) {
  const auto& p = pp.get<SoftmaxOutputParams>();
  const NDArray &y = in[0], &label = in[1];
  const Shape& s = y.shape();
  const int64_t size = y.size();
  fill_zero(out[1]);  // the label gets no gradient
  if (size == 0) return;
  dispatch_float(y.dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    const T* o = y.data_as<T>();
    T* g = out[0].data_as<T>();
    if (label.shape() == s) {
      // Probability labels: (out - label) * grad_scale, no normalisation.
      dispatch_dtype(label.dtype(), [&](auto ltag) {
        using L = decltype(ltag);
        const L* l = label.data_as<L>();
        for (int64_t i = 0; i < size; ++i) {
          g[i] = from_double<T>((to_double(o[i]) - to_double(l[i])) * p.grad_scale);
        }
      });
      return;
    }
    // rows x classes, classes `inner` apart (multi_output: axis 1 of (n, k, rest)).
    const AxisSplit split = softmax_output_split(p, s);
    const int64_t classes = split.len, inner = split.inner, rows = split.outer * split.inner;
    NANOMX_CHECK(label.size() == rows)
        << pp.op() << ": 'label' " << label.shape() << " has " << label.size()
        << " entries, 'output' " << s << " has " << rows << " rows";
    std::vector<double> labels(static_cast<size_t>(rows));
    dispatch_dtype(label.dtype(), [&](auto ltag) {
      using L = decltype(ltag);
      const L* l = label.data_as<L>();
      for (int64_t r = 0; r < rows; ++r) labels[static_cast<size_t>(r)] = to_double(l[r]);
    });
    const int ignore = static_cast<int>(p.ignore_label);
    double valid = 1;
    if (p.normalization == "batch") {
      valid = static_cast<double>(label.shape().ndim() > 0 ? label.shape()[0] : 1);
    } else if (p.normalization == "valid") {
      int64_t count = 0;
      for (double l : labels) count += static_cast<int>(l) != ignore;
      valid = static_cast<double>(count == 0 ? 1 : count);
    }
    double scale = p.grad_scale / valid;
    if (p.multi_output && p.normalization != "valid") scale /= static_cast<double>(inner);
    const double a = p.smooth_alpha;
    const double off = a > 0 && classes > 1 ? a / static_cast<double>(classes - 1) : 0.0;
    // One pass, each output element read before its gradient is written (the gradient may
    // share the output's buffer).
    for (int64_t r = 0; r < rows; ++r) {
      // Row r: multi_output's (batch b, position q) walks the class axis `inner` apart.
      const int64_t base = p.multi_output ? (r / inner) * classes * inner + r % inner : r * classes;
      const int lab = static_cast<int>(labels[static_cast<size_t>(r)]);
      const bool ignored = p.use_ignore && lab == ignore;
      for (int64_t j = 0; j < classes; ++j) {
        const int64_t i = base + j * inner;
        double v = 0;
        if (!ignored) {
          const double y = to_double(o[i]);
          v = (y - (j == lab ? 1 - a : off)) * scale;
          // MXNet's quirk: out_grad=True multiplies by the operator's output (its backward
          // never receives the head gradient).
          if (p.out_grad) v *= y;
        }
        g[i] = from_double<T>(v);
      }
    }
  });
}

void linear_reg_backward(const ParsedParams& pp, std::span<const NDArray> in,
                         std::span<const NDArray> out) {
  const double grad_scale = pp.get<RegressionOutputParams>().grad_scale;
  const NDArray &label = in[0], &y = in[1];
  fill_zero(out[1]);  // the label gets no gradient
  const int64_t size = y.size();
  if (size == 0) return;
  const int64_t per_row = label.size() / label.shape()[0];
  const double scale = grad_scale / static_cast<double>(per_row);
  dispatch_float(y.dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    dispatch_dtype(label.dtype(), [&](auto ltag) {
      using L = decltype(ltag);
      const T* o = y.data_as<T>();
      const L* l = label.data_as<L>();
      T* g = out[0].data_as<T>();
      for (int64_t i = 0; i < size; ++i) {
        g[i] = from_double<T>((to_double(o[i]) - to_double(l[i])) * scale);
      }
    });
  });
}

// dA and dB of C = op(A) op(B) for one (2-D view of a) product: MXNet's four cases.
void dot_grads(DType t, const void* dc, const void* a, const void* b, void* da, void* db,
               const DotDims& d) {
  const int64_t m = d.m, k = d.k, n = d.n;
  if (!d.ta && !d.tb) {
    gemm(t, dc, b, da, DotDims{m, n, k, false, true});  // dA = dC B^T
    gemm(t, a, dc, db, DotDims{k, m, n, true, false});  // dB = A^T dC
  } else if (d.ta && !d.tb) {
    gemm(t, b, dc, da, DotDims{k, n, m, false, true});   // dA = B dC^T
    gemm(t, a, dc, db, DotDims{k, m, n, false, false});  // dB = A dC
  } else if (!d.ta && d.tb) {
    gemm(t, dc, b, da, DotDims{m, n, k, false, false});  // dA = dC B
    gemm(t, dc, a, db, DotDims{n, m, k, true, false});   // dB = dC^T A
  } else {
    gemm(t, b, dc, da, DotDims{k, n, m, true, true});  // dA = B^T dC^T
    gemm(t, dc, a, db, DotDims{n, m, k, true, true});  // dB = dC^T A^T
  }
}

void dot_backward(const ParsedParams& p, std::span<const NDArray> in,
                  std::span<const NDArray> out) {
  const DotDims d = dot_dims(p.get<DotParams>(), in[1].shape(), in[2].shape(), nullptr);
  dot_grads(in[1].dtype(), in[0].data(), in[1].data(), in[2].data(), out[0].data(), out[1].data(),
            d);
}

void batch_dot_backward(const ParsedParams& p, std::span<const NDArray> in,
                        std::span<const NDArray> out) {
  int64_t batch = 0;
  const DotDims d =
      batch_dot_dims(p.get<DotParams>(), in[1].shape(), in[2].shape(), nullptr, &batch);
  const DType t = in[1].dtype();
  const size_t es = dtype_size(t);
  const auto* dc = static_cast<const char*>(in[0].data());
  const auto* a = static_cast<const char*>(in[1].data());
  const auto* b = static_cast<const char*>(in[2].data());
  auto* da = static_cast<char*>(out[0].data());
  auto* db = static_cast<char*>(out[1].data());
  const auto sa = static_cast<size_t>(d.m * d.k) * es, sb = static_cast<size_t>(d.k * d.n) * es,
             sc = static_cast<size_t>(d.m * d.n) * es;
  for (int64_t i = 0; i < batch; ++i) {
    const auto u = static_cast<size_t>(i);
    dot_grads(t, dc + u * sc, a + u * sa, b + u * sb, da + u * sa, db + u * sb, d);
  }
}

enum class SoftmaxKind { kSoftmax, kLog, kMin };

template <SoftmaxKind S>
void softmax_backward(const ParsedParams& pp, std::span<const NDArray> in,
                      std::span<const NDArray> out) {
  const auto& s = pp.get<SoftmaxParams>();
  const NDArray &dy = in[0], &y = in.back();
  const Shape& shape = y.shape();
  const int axis = normalize_axis(s.axis, shape.ndim(), pp.op().c_str());
  const AxisSplit split = split_at_axis(shape, axis);
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  const double t = s.temperature;
  dispatch_float(y.dtype(), pp.op(), [&](auto ytag) {
    using Y = decltype(ytag);
    dispatch_float(out[0].dtype(), pp.op(), [&](auto xtag) {
      using X = decltype(xtag);
      const Y* g = dy.data_as<Y>();
      const Y* yv = y.data_as<Y>();
      X* dx = out[0].data_as<X>();
      for (int64_t a = 0; a < outer; ++a) {
        for (int64_t b = 0; b < inner; ++b) {
          const int64_t base = a * len * inner + b;
          double sum = 0;
          for (int64_t k = 0; k < len; ++k) {
            const int64_t i = base + k * inner;
            sum += S == SoftmaxKind::kLog ? to_double(g[i]) : to_double(g[i]) * to_double(yv[i]);
          }
          for (int64_t k = 0; k < len; ++k) {
            const int64_t i = base + k * inner;
            const double gi = to_double(g[i]), yi = to_double(yv[i]);
            double v;
            if constexpr (S == SoftmaxKind::kLog) {
              v = (gi - std::exp(yi) * sum) / t;
            } else if constexpr (S == SoftmaxKind::kMin) {
              v = -yi * (gi - sum) / t;
            } else {
              v = yi * (gi - sum) / t;
            }
            dx[i] = from_double<X>(v);
          }
        }
      }
    });
  });
}

// d_data = dy spread over the reduced axes of sum/mean (scaled by 1/count for mean).
template <bool kMean>
void reduce_backward(const ParsedParams& pp, std::span<const NDArray> in,
                     std::span<const NDArray> out) {
  const auto& r = pp.get<ReduceParams>();
  const Shape& shape = in[1].shape();
  const ReduceSpec spec = reduce_spec(pp.op(), r.axis, r.keepdims, r.exclude, shape);
  const double scale = kMean && shape.size() > 0 ? static_cast<double>(spec.kept.size()) /
                                                       static_cast<double>(shape.size())
                                                 : 1.0;
  dispatch_float(out[0].dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = in[0].data_as<T>();
    T* o = out[0].data_as<T>();
    const std::array<std::vector<int64_t>, 2> strides = {shape.strides(),
                                                         broadcast_strides(spec.kept, shape)};
    for_each_row<2>(
        shape.dims(), strides, {0, 0},
        [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
          for (int64_t i = 0; i < len; ++i) {
            o[off[0] + i * st[0]] = from_double<T>(to_double(g[off[1] + i * st[1]]) * scale);
          }
        });
  });
}

// Sums `dy` (of shape `full`) into `acc` laid out as `part` (right-aligned, broadcast to full).
template <typename T>
void sum_to(const T* dy, const Shape& full, const Shape& part, std::vector<double>& acc) {
  acc.assign(static_cast<size_t>(part.size()), 0.0);
  const std::array<std::vector<int64_t>, 2> strides = {full.strides(),
                                                       broadcast_strides(part, full)};
  for_each_row<2>(
      full.dims(), strides, {0, 0},
      [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
        for (int64_t i = 0; i < len; ++i) {
          acc[static_cast<size_t>(off[1] + i * st[1])] += to_double(dy[off[0] + i * st[0]]);
        }
      });
}

void broadcast_backward(const ParsedParams& pp, std::span<const NDArray> in,
                        std::span<const NDArray> out) {
  dispatch_float(out[0].dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<double> acc;
    sum_to<T>(in[0].data_as<T>(), in[0].shape(), in[1].shape(), acc);
    T* o = out[0].data_as<T>();
    for (size_t i = 0; i < acc.size(); ++i) o[i] = from_double<T>(acc[i]);
  });
}

// (dy, lhs, rhs) -> (dy * dl, dy * dr), reduced to each input's shape when broadcast.
void binary_backward(const BinaryGrad& bg, const ParsedParams& pp, std::span<const NDArray> in,
                     std::span<const NDArray> out) {
  dispatch_float(in[0].dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = in[0].data_as<T>();
    T* ol = out[0].data_as<T>();
    T* orr = out[1].data_as<T>();
    if (!bg.needs_inputs) {
      double dl = 0, dr = 0;
      bg.d(0, 0, dl, dr);
      const int64_t n = in[0].size();
      // out[0] may share dy's buffer: the other output first.
      for (int64_t i = 0; i < n; ++i) orr[i] = from_double<T>(to_double(g[i]) * dr);
      for (int64_t i = 0; i < n; ++i) ol[i] = from_double<T>(to_double(g[i]) * dl);
      return;
    }
    const T* l = in[1].data_as<T>();
    const T* r = in[2].data_as<T>();
    const Shape &full = in[0].shape(), &sl = in[1].shape(), &sr = in[2].shape();
    if (sl == full && sr == full) {
      const int64_t n = full.size();
      for (int64_t i = 0; i < n; ++i) {
        double dl = 0, dr = 0;
        bg.d(to_double(l[i]), to_double(r[i]), dl, dr);
        const double gi = to_double(g[i]);
        ol[i] = from_double<T>(gi * dl);
        orr[i] = from_double<T>(gi * dr);
      }
      return;
    }
    std::vector<double> al(static_cast<size_t>(sl.size()), 0.0),
        ar(static_cast<size_t>(sr.size()), 0.0);
    const std::array<std::vector<int64_t>, 3> strides = {
        full.strides(), broadcast_strides(sl, full), broadcast_strides(sr, full)};
    for_each_row<3>(
        full.dims(), strides, {0, 0, 0},
        [&](const std::array<int64_t, 3>& off, int64_t len, const std::array<int64_t, 3>& st) {
          for (int64_t i = 0; i < len; ++i) {
            const int64_t il = off[1] + i * st[1], ir = off[2] + i * st[2];
            double dl = 0, dr = 0;
            bg.d(to_double(l[il]), to_double(r[ir]), dl, dr);
            const double gi = to_double(g[off[0] + i * st[0]]);
            al[static_cast<size_t>(il)] += gi * dl;
            ar[static_cast<size_t>(ir)] += gi * dr;
          }
        });
    for (size_t i = 0; i < al.size(); ++i) ol[i] = from_double<T>(al[i]);
    for (size_t i = 0; i < ar.size(); ++i) orr[i] = from_double<T>(ar[i]);
  });
}

void unary_backward(const UnaryGrad& ug, const ParsedParams& pp, std::span<const NDArray> in,
                    std::span<const NDArray> out) {
  const double s = ug.scalar ? pp.get<ScalarParams>().scalar : 0.0;
  dispatch_float(in[0].dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = in[0].data_as<T>();
    const T* v = in[1].data_as<T>();
    T* o = out[0].data_as<T>();
    const int64_t n = out[0].size();
    for (int64_t i = 0; i < n; ++i) {
      o[i] = from_double<T>(to_double(g[i]) * ug.d(to_double(v[i]), s));
    }
  });
}

void clip_backward(const ParsedParams& pp, std::span<const NDArray> in,
                   std::span<const NDArray> out) {
  const ClipParams& c = pp.get<ClipParams>();
  const double lo = c.lo, hi = c.hi;
  dispatch_float(in[0].dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = in[0].data_as<T>();
    const T* x = in[1].data_as<T>();
    T* o = out[0].data_as<T>();
    const int64_t n = out[0].size();
    for (int64_t i = 0; i < n; ++i) {
      const double v = to_double(x[i]);
      o[i] = v < lo || v > hi ? T(0.0f) : g[i];
    }
  });
}

void copy_grad(const ParsedParams&, std::span<const NDArray> in, std::span<const NDArray> out) {
  if (in[0].data() != out[0].data() && out[0].nbytes() > 0) {
    std::memmove(out[0].data(), in[0].data(), out[0].nbytes());
  }
}

void cast_backward(const ParsedParams& pp, std::span<const NDArray> in,
                   std::span<const NDArray> out) {
  if (in[0].dtype() == out[0].dtype()) return copy_grad(pp, in, out);
  dispatch_dtype(in[0].dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_dtype(out[0].dtype(), [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* x = in[0].data_as<From>();
      To* o = out[0].data_as<To>();
      const int64_t n = out[0].size();
      for (int64_t i = 0; i < n; ++i) o[i] = convert<To>(x[i]);
    });
  });
}

}  // namespace

void register_backward_kernels() {
  constexpr DeviceType kCPU = DeviceType::kCPU;
  register_kernel("_backward_FullyConnected", kCPU, fc_backward);
  register_kernel("_backward_Activation", kCPU, activation_backward);
  register_kernel("_backward_SoftmaxOutput", kCPU, softmax_output_backward);
  register_kernel("_backward_linear_reg_out", kCPU, linear_reg_backward);
  register_kernel("_backward_dot", kCPU, dot_backward);
  register_kernel("_backward_batch_dot", kCPU, batch_dot_backward);
  register_kernel("_backward_softmax", kCPU, softmax_backward<SoftmaxKind::kSoftmax>);
  register_kernel("_backward_log_softmax", kCPU, softmax_backward<SoftmaxKind::kLog>);
  register_kernel("_backward_softmin", kCPU, softmax_backward<SoftmaxKind::kMin>);
  register_kernel("_backward_sum", kCPU, reduce_backward<false>);
  register_kernel("_backward_mean", kCPU, reduce_backward<true>);
  register_kernel("_broadcast_backward", kCPU, broadcast_backward);
  register_kernel("_backward_copy", kCPU, copy_grad);
  register_kernel("_backward_reshape", kCPU, copy_grad);
  register_kernel("_backward_cast", kCPU, cast_backward);
  register_kernel("_backward_clip", kCPU, clip_backward);
  for (const UnaryGrad& u : unary_grads()) {
    register_kernel(u.backward, kCPU,
                    [&u](const ParsedParams& p, std::span<const NDArray> in,
                         std::span<const NDArray> out) { unary_backward(u, p, in, out); });
  }
  for (const BinaryGrad& b : binary_grads()) {
    register_kernel(b.backward, kCPU,
                    [&b](const ParsedParams& p, std::span<const NDArray> in,
                         std::span<const NDArray> out) { binary_backward(b, p, in, out); });
  }
}

}  // namespace nanomx::ops::cpu
