// CPU kernels of the layers in ops/nn_layers.cc and ops/loss_layers.cc (Dropout, LeakyReLU,
// Embedding, SoftmaxActivation, softmax_cross_entropy, MakeLoss, make_loss, BlockGrad) and of
// their backward operators. Plain loops in each dtype's compute type (float for float16 and
// float32, double for float64, as MXNet's kernels); sums along an axis or over a batch
// accumulate in double. Dropout and rrelu draw from the process-wide generator, whose engine
// variable every such call writes (Op::state_var), so draws follow push order.
#include "ops/nn_layers.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

// Calls fn(T{}) for a floating-point dtype (inference admits no other; this names any).
template <typename Fn>
void dispatch_float(DType dtype, const std::string& op, Fn&& fn) {
  NANOMX_CHECK(is_float_dtype(dtype))
      << op << ": takes float16, float32 or float64, got " << dtype_name(dtype);
  dispatch_dtype(dtype, [&](auto tag) {
    if constexpr (kIsFloat<decltype(tag)>) fn(tag);
  });
}

// Uniform in [0, 1) from the top 53 bits, as the random operators draw.
double uniform01(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

void copy_unless_same(const NDArray& from, const NDArray& to) {
  if (from.data() != to.data() && from.nbytes() > 0) {
    std::memcpy(to.data(), from.data(), from.nbytes());
  }
}

void fill_zero(const NDArray& a) {
  if (a.nbytes() > 0) std::memset(a.data(), 0, a.nbytes());
}

template <typename T>
void fill_value(const NDArray& a, double value) {
  T* p = a.data_as<T>();
  const T v = from_double<T>(value);
  for (int64_t i = 0, n = a.size(); i < n; ++i) p[i] = v;
}

// out = a * b, b of a's rank broadcast along its axes of size 1 (Dropout's mask).
template <typename T>
void multiply(const NDArray& a, const NDArray& b, const NDArray& out) {
  broadcast_binary<T>(a, b, out,
                      [](T x, T y) { return static_cast<T>(to_compute(x) * to_compute(y)); });
}

// ---- Dropout -------------------------------------------------------------------------------

// Training (or mode='always'): mask = Bernoulli(1 - p) / (1 - p), drawn once per mask element,
// out = data * mask. Otherwise the identity, with a mask of ones (nothing drawn): MXNet's
// pass-through, whose gradient is the identity too.
void dropout(const ParsedParams& pp, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& p = pp.get<DropoutParams>();
  const NDArray &x = in[0], &y = out[0], &mask = out[1];
  dispatch_float(x.dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    if (p.p == 0.0f || !(pp.is_train() || p.always)) {
      fill_value<T>(mask, 1.0);
      copy_unless_same(x, y);
      return;
    }
    // In float, as MXNet: the kept fraction and the scale 1 / (1 - p).
    const float keep = 1.0f - p.p;
    // p = 1: the scale is 1 / 0 and a dropped element's mask 0 * inf, NaN, as MXNet's.
    const float inverse = keep > 0.0f ? 1.0f / keep : std::numeric_limits<float>::infinity();
    const T scale = from_double<T>(inverse);
    const T dropped = from_double<T>(keep > 0.0f ? 0.0 : std::numeric_limits<double>::quiet_NaN());
    auto& g = random_state().generator;
    T* m = mask.data_as<T>();
    for (int64_t i = 0, n = mask.size(); i < n; ++i) m[i] = uniform01(g) < keep ? scale : dropped;
    multiply<T>(x, mask, y);
  });
}

void dropout_backward(const ParsedParams& pp, std::span<const NDArray> in,
                      std::span<const NDArray> out) {
  dispatch_float(in[0].dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    multiply<T>(in[0], in[1], out[0]);
  });
}

// ---- LeakyReLU -----------------------------------------------------------------------------

template <typename C>
C gelu(C x) {
  return C(0.5) * x * (C(1) + std::erf(x / std::numbers::sqrt2_v<C>));
}
// d gelu / dx = Phi(x) + x phi(x) (MXNet's gelu_grad).
template <typename C>
C gelu_grad(C x) {
  const C inv_sqrt_2pi = std::numbers::inv_sqrtpi_v<C> / std::numbers::sqrt2_v<C>;
  return C(0.5) * (C(1) + std::erf(x / std::numbers::sqrt2_v<C>)) +
         x * inv_sqrt_2pi * std::exp(C(-0.5) * x * x);
}

// y[i] = f(x[i]) in T's compute type.
template <typename T, typename F>
void map_values(const NDArray& x, const NDArray& y, F f) {
  const T* a = x.data_as<T>();
  T* b = y.data_as<T>();
  for (int64_t i = 0, n = x.size(); i < n; ++i) b[i] = static_cast<T>(f(to_compute(a[i])));
}

// prelu: visits every element of data with the offset of its slope in gamma, gamma expanded to
// data's rank (ops/nn_layers.h's prelu_gamma_shape): f(i, gamma_offset).
template <typename F>
void for_each_with_gamma(const Shape& data, const Shape& gamma, F f) {
  const Shape expanded = prelu_gamma_shape(gamma, data);
  const std::array<std::vector<int64_t>, 2> strides = {data.strides(),
                                                       broadcast_strides(expanded, data)};
  for_each_row<2>(
      data.dims(), strides, {0, 0},
      [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
        for (int64_t k = 0; k < len; ++k) f(off[0] + k * st[0], off[1] + k * st[1]);
      });
}

void leaky_relu(const ParsedParams& pp, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& l = pp.get<LeakyReLUParams>();
  const NDArray &x = in[0], &y = out[0];
  dispatch_float(x.dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C slope = l.slope;
    switch (l.act) {
      case LeakyAct::kLeaky:
        map_values<T>(x, y, [slope](C v) { return v > C(0) ? v : v * slope; });
        break;
      case LeakyAct::kPrelu: {
        const T* a = x.data_as<T>();
        const T* g = in[1].data_as<T>();
        T* b = y.data_as<T>();
        for_each_with_gamma(x.shape(), in[1].shape(), [&](int64_t i, int64_t j) {
          const C v = to_compute(a[i]);
          b[i] = static_cast<T>(v > C(0) ? v : v * to_compute(g[j]));
        });
        break;
      }
      case LeakyAct::kRrelu: {
        T* m = out[1].data_as<T>();
        const int64_t n = x.size();
        if (pp.is_train()) {
          // One slope per element, uniform in [lower_bound, upper_bound).
          auto& gen = random_state().generator;
          const double lo = l.lower_bound, span = l.upper_bound - l.lower_bound;
          for (int64_t i = 0; i < n; ++i) m[i] = from_double<T>(lo + span * uniform01(gen));
        } else {
          // Their mean, computed in float as MXNet does; the mask holds it for the gradient.
          fill_value<T>(out[1], (l.lower_bound + l.upper_bound) / 2.0f);
        }
        const T* a = x.data_as<T>();
        T* b = y.data_as<T>();
        for (int64_t i = 0; i < n; ++i) {
          const C v = to_compute(a[i]);
          b[i] = static_cast<T>(v > C(0) ? v : v * to_compute(m[i]));
        }
        break;
      }
      case LeakyAct::kElu:
        map_values<T>(x, y, [slope](C v) { return v > C(0) ? v : slope * std::expm1(v); });
        break;
      case LeakyAct::kSelu:
        map_values<T>(x, y, [](C v) {
          return C(kSeluLambda) * (v > C(0) ? v : C(kSeluAlpha) * std::expm1(v));
        });
        break;
      case LeakyAct::kGelu:
        map_values<T>(x, y, [](C v) { return gelu(v); });
        break;
    }
  });
}

// The derivatives are MXNet's (src/operator/mshadow_op.h), most of them from the output y:
// leaky dx = dy (y > 0 ? 1 : slope); rrelu the same with the drawn slope; elu
// dy (y > 0 ? 1 : y + slope); selu dy lambda (y > 0 ? 1 : alpha + y); gelu from the input;
// prelu dx = dy (x > 0 ? 1 : gamma), dgamma = sum of dy (x > 0 ? 0 : x) over the axes gamma is
// broadcast along.
void leaky_relu_backward(const ParsedParams& pp, std::span<const NDArray> in,
                         std::span<const NDArray> out) {
  const auto& l = pp.get<LeakyReLUParams>();
  const NDArray& dy = in[0];
  const NDArray& x = in[1];
  const NDArray& y = l.act == LeakyAct::kPrelu ? in[3] : in[2];
  dispatch_float(dy.dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* g = dy.data_as<T>();
    const T* xs = x.data_as<T>();
    const T* ys = y.data_as<T>();
    T* dx = out[0].data_as<T>();  // may be dy itself: each dy[i] is read before dx[i] is written
    const int64_t n = dy.size();
    const C slope = l.slope;
    auto each = [&](auto f) {
      for (int64_t i = 0; i < n; ++i) {
        dx[i] = static_cast<T>(to_compute(g[i]) * f(i, to_compute(xs[i]), to_compute(ys[i])));
      }
    };
    switch (l.act) {
      case LeakyAct::kLeaky:
        each([slope](int64_t, C, C v) { return v > C(0) ? C(1) : slope; });
        break;
      case LeakyAct::kRrelu: {
        const T* m = in[3].data_as<T>();
        each([m](int64_t i, C, C v) { return v > C(0) ? C(1) : to_compute(m[i]); });
        break;
      }
      case LeakyAct::kElu:
        each([slope](int64_t, C, C v) { return v > C(0) ? C(1) : v + slope; });
        break;
      case LeakyAct::kSelu:
        each(
            [](int64_t, C, C v) { return C(kSeluLambda) * (v > C(0) ? C(1) : C(kSeluAlpha) + v); });
        break;
      case LeakyAct::kGelu:
        each([](int64_t, C u, C) { return gelu_grad(u); });
        break;
      case LeakyAct::kPrelu: {
        const NDArray& gamma = in[2];
        const T* gm = gamma.data_as<T>();
        std::vector<double> dgamma(static_cast<size_t>(gamma.size()), 0.0);
        for_each_with_gamma(x.shape(), gamma.shape(), [&](int64_t i, int64_t j) {
          const C d = to_compute(g[i]), v = to_compute(xs[i]);
          if (v <= C(0)) dgamma[static_cast<size_t>(j)] += static_cast<double>(d * v);
          dx[i] = static_cast<T>(v > C(0) ? d : d * to_compute(gm[j]));
        });
        T* dg = out[1].data_as<T>();
        for (size_t j = 0; j < dgamma.size(); ++j) dg[j] = from_double<T>(dgamma[j]);
        break;
      }
    }
  });
}

// ---- Embedding -----------------------------------------------------------------------------

// The weight row an index picks: truncated toward zero, then clipped to [0, rows - 1] (MXNet's
// Embedding clips; NaN picks row 0).
template <typename I>
int64_t embedding_row(I index, int64_t rows) {
  if constexpr (std::is_integral_v<I>) {
    const auto j = static_cast<int64_t>(index);
    return j <= 0 ? 0 : j >= rows ? rows - 1 : j;
  } else {
    const double v = to_double(index);
    if (!(v > 0)) return 0;
    return v >= static_cast<double>(rows) ? rows - 1 : static_cast<int64_t>(v);
  }
}

// Calls f(row, k) for the k-th index of `data`, its row of a weight of `rows` rows.
template <typename F>
void for_each_row_index(const NDArray& data, int64_t rows, F f) {
  dispatch_dtype(data.dtype(), [&](auto tag) {
    using I = decltype(tag);
    const I* idx = data.data_as<I>();
    for (int64_t k = 0, n = data.size(); k < n; ++k) f(embedding_row(idx[k], rows), k);
  });
}

// out[k, :] = weight[row(k), :], copied as bytes (any weight dtype).
void embedding(const ParsedParams&, std::span<const NDArray> in, std::span<const NDArray> out) {
  const NDArray& w = in[1];
  const int64_t rows = w.shape()[0];
  const size_t row_bytes = static_cast<size_t>(w.shape()[1]) * dtype_size(w.dtype());
  if (row_bytes == 0) return;
  const auto* src = static_cast<const unsigned char*>(w.data());
  auto* dst = static_cast<unsigned char*>(out[0].data());
  for_each_row_index(in[0], rows, [&](int64_t row, int64_t k) {
    std::memcpy(dst + static_cast<size_t>(k) * row_bytes,
                src + static_cast<size_t>(row) * row_bytes, row_bytes);
  });
}

// dweight[row(k), :] += dy[k, :] from zeros; repeated indices add up. The indices' gradient
// is zeros (the gradient rule passes none on).
void embedding_backward(const ParsedParams& pp, std::span<const NDArray> in,
                        std::span<const NDArray> out) {
  const NDArray &dy = in[0], &dw = out[1];
  fill_zero(out[0]);
  fill_zero(dw);
  const int64_t rows = dw.shape()[0], cols = dw.shape()[1];
  NANOMX_CHECK(dy.dtype() == dw.dtype())
      << pp.op() << ": 'out_grad' has dtype " << dtype_name(dy.dtype())
      << " but the weight gradient " << dtype_name(dw.dtype());
  dispatch_dtype(dw.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* g = dy.data_as<T>();
    T* d = dw.data_as<T>();
    // float16 sums in a float buffer; the other types in place.
    std::vector<C> buffer;
    C* acc = nullptr;
    if constexpr (std::is_same_v<T, C>) {
      acc = d;
    } else {
      buffer.assign(static_cast<size_t>(rows * cols), C(0));
      acc = buffer.data();
    }
    for_each_row_index(in[1], rows, [&](int64_t row, int64_t k) {
      C* a = acc + row * cols;
      const T* s = g + k * cols;
      for (int64_t c = 0; c < cols; ++c) a[c] = static_cast<C>(a[c] + to_compute(s[c]));
    });
    if constexpr (!std::is_same_v<T, C>) {
      for (int64_t i = 0; i < rows * cols; ++i) d[i] = static_cast<T>(acc[i]);
    }
  });
}

// ---- SoftmaxActivation ---------------------------------------------------------------------

void softmax_activation(const ParsedParams& pp, std::span<const NDArray> in,
                        std::span<const NDArray> out) {
  if (in[0].size() == 0) return;
  const AxisSplit s =
      softmax_activation_split(pp.get<SoftmaxActivationParams>().channel, in[0].shape());
  dispatch_float(in[0].dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].data_as<T>();
    T* y = out[0].data_as<T>();  // may be x itself: a lane is read whole before it is written
    std::vector<double> lane(static_cast<size_t>(s.len));
    for (int64_t a = 0; a < s.outer; ++a) {
      for (int64_t b = 0; b < s.inner; ++b) {
        const int64_t base = a * s.len * s.inner + b;
        double m = -INFINITY;
        for (int64_t k = 0; k < s.len; ++k) {
          lane[static_cast<size_t>(k)] = to_double(x[base + k * s.inner]);
          m = std::max(m, lane[static_cast<size_t>(k)]);
        }
        double sum = 0;
        for (double& v : lane) sum += (v = std::exp(v - m));
        for (int64_t k = 0; k < s.len; ++k) {
          y[base + k * s.inner] = from_double<T>(lane[static_cast<size_t>(k)] / sum);
        }
      }
    }
  });
}

// dx = y * (dy - sum(dy * y)) along the forward's axis.
void softmax_activation_backward(const ParsedParams& pp, std::span<const NDArray> in,
                                 std::span<const NDArray> out) {
  if (in[0].size() == 0) return;
  const AxisSplit s =
      softmax_activation_split(pp.get<SoftmaxActivationParams>().channel, in[0].shape());
  dispatch_float(in[0].dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    const T* dy = in[0].data_as<T>();
    const T* y = in[1].data_as<T>();
    T* dx = out[0].data_as<T>();  // may be dy itself
    for (int64_t a = 0; a < s.outer; ++a) {
      for (int64_t b = 0; b < s.inner; ++b) {
        const int64_t base = a * s.len * s.inner + b;
        double dot = 0;
        for (int64_t k = 0; k < s.len; ++k) {
          const int64_t i = base + k * s.inner;
          dot += to_double(dy[i]) * to_double(y[i]);
        }
        for (int64_t k = 0; k < s.len; ++k) {
          const int64_t i = base + k * s.inner;
          dx[i] = from_double<T>(to_double(y[i]) * (to_double(dy[i]) - dot));
        }
      }
    }
  });
}

// ---- softmax_cross_entropy -----------------------------------------------------------------

// Row r's class: the label truncated to an integer, which must name one of the `classes`.
template <typename T>
int64_t label_class(const std::string& op, const T* label, int64_t r, int64_t classes) {
  const double v = to_double(label[r]);
  NANOMX_CHECK(v > -1 && v < static_cast<double>(classes))
      << op << ": label " << v << " of row " << r << " is not a class index in [0, " << classes
      << ")";
  return static_cast<int64_t>(v);
}

// The softmax of row r of (rows, classes) data into `p`, in double.
template <typename T>
void softmax_row(const T* x, int64_t r, int64_t classes, std::vector<double>& p) {
  double m = -INFINITY;
  for (int64_t c = 0; c < classes; ++c) {
    p[static_cast<size_t>(c)] = to_double(x[r * classes + c]);
    m = std::max(m, p[static_cast<size_t>(c)]);
  }
  double sum = 0;
  for (double& v : p) sum += (v = std::exp(v - m));
  for (double& v : p) v /= sum;
}

// The sum over rows of -log(max(softmax(data)[label], 1e-8)).
void softmax_cross_entropy(const ParsedParams& pp, std::span<const NDArray> in,
                           std::span<const NDArray> out) {
  const int64_t rows = in[0].shape()[0], classes = in[0].shape()[1];
  dispatch_float(in[0].dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].data_as<T>();
    const T* label = in[1].data_as<T>();
    std::vector<double> p(static_cast<size_t>(classes));
    double loss = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t c = label_class(pp.op(), label, r, classes);
      softmax_row(x, r, classes, p);
      loss -= std::log(std::max(p[static_cast<size_t>(c)], 1e-8));
    }
    out[0].data_as<T>()[0] = from_double<T>(loss);
  });
}

// d data = dy * (softmax(data) - one_hot(label)); the label's gradient is zeros.
void softmax_cross_entropy_backward(const ParsedParams& pp, std::span<const NDArray> in,
                                    std::span<const NDArray> out) {
  const NDArray& data = in[1];
  const int64_t rows = data.shape()[0], classes = data.shape()[1];
  fill_zero(out[1]);
  dispatch_float(data.dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    const double scale = to_double(in[0].data_as<T>()[0]);
    const T* x = data.data_as<T>();
    const T* label = in[2].data_as<T>();
    T* dx = out[0].data_as<T>();
    std::vector<double> p(static_cast<size_t>(classes));
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t k = label_class(pp.op(), label, r, classes);
      softmax_row(x, r, classes, p);
      for (int64_t c = 0; c < classes; ++c) {
        dx[r * classes + c] = from_double<T>(scale * (p[static_cast<size_t>(c)] - (c == k)));
      }
    }
  });
}

// ---- MakeLoss, make_loss, BlockGrad --------------------------------------------------------

void identity(const ParsedParams&, std::span<const NDArray> in, std::span<const NDArray> out) {
  copy_unless_same(in[0], out[0]);
}

// Every element of the gradient is grad_scale, divided by (batch) the rows of MXNet's 2-D view
// (the product of all axes but the last: 1 for a 1-D loss) or (valid) the number of elements
// above valid_thresh, at least 1. Computed in float, as MXNet's float attributes.
void make_loss_backward(const ParsedParams& pp, std::span<const NDArray> in,
                        std::span<const NDArray> out) {
  const auto& m = pp.get<MakeLossParams>();
  const NDArray& x = in[0];
  dispatch_float(x.dtype(), pp.op(), [&](auto tag) {
    using T = decltype(tag);
    float value = m.grad_scale;
    if (m.normalization == MakeLossParams::kBatch) {
      const Shape& s = x.shape();
      const int64_t last = s.ndim() == 0 ? 1 : s[s.ndim() - 1];
      if (last == 0) return;  // nothing to write
      value = m.grad_scale / static_cast<float>(x.size() / last);
    } else if (m.normalization == MakeLossParams::kValid) {
      const T* v = x.data_as<T>();
      int64_t valid = 0;
      for (int64_t i = 0, n = x.size(); i < n; ++i) {
        valid += to_compute(v[i]) > static_cast<compute_t<T>>(m.valid_thresh) ? 1 : 0;
      }
      value = m.grad_scale / static_cast<float>(std::max<int64_t>(valid, 1));
    }
    fill_value<T>(out[0], value);
  });
}

}  // namespace

void register_nn_layer_kernels() {
  constexpr DeviceType kCPU = DeviceType::kCPU;
  register_kernel("Dropout", kCPU, dropout);
  register_kernel("_backward_Dropout", kCPU, dropout_backward);
  register_kernel("LeakyReLU", kCPU, leaky_relu);
  register_kernel("_backward_LeakyReLU", kCPU, leaky_relu_backward);
  register_kernel("Embedding", kCPU, embedding);
  register_kernel("_backward_Embedding", kCPU, embedding_backward);
  register_kernel("SoftmaxActivation", kCPU, softmax_activation);
  register_kernel("_backward_SoftmaxActivation", kCPU, softmax_activation_backward);
  register_kernel("softmax_cross_entropy", kCPU, softmax_cross_entropy);
  register_kernel("_backward_softmax_cross_entropy", kCPU, softmax_cross_entropy_backward);
  register_kernel("MakeLoss", kCPU, identity);
  register_kernel("_backward_MakeLoss", kCPU, make_loss_backward);
  register_kernel("make_loss", kCPU, identity);
  register_kernel("BlockGrad", kCPU, identity);
}

}  // namespace nanomx::ops::cpu
