// CPU kernels of the layer operators (definitions in ops/nn.cc): FullyConnected through
// OpenBLAS, the activations, SoftmaxOutput's forward (a softmax) and the copies of Flatten and
// LinearRegressionOutput.
#include "ops/nn.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

void require_float(const char* op, const NDArray& a) {
  NANOMX_CHECK(a.dtype() == DType::kFloat32 || a.dtype() == DType::kFloat64)
      << op << ": the CPU kernel supports float32 and float64, got " << dtype_name(a.dtype());
}

template <typename T>
void gemm_nt(int64_t m, int64_t n, int64_t k, const T* x, const T* w, T* out) {
  const auto bm = static_cast<blasint>(m), bn = static_cast<blasint>(n),
             bk = static_cast<blasint>(k);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bm, bn, bk, 1.0f, x, bk, w, bk, 0.0f, out,
                bn);
  } else {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bm, bn, bk, 1.0, x, bk, w, bk, 0.0, out,
                bn);
  }
}

void fully_connected(const ParsedParams& pp, std::span<const NDArray> in,
                     std::span<const NDArray> out) {
  const auto& p = pp.get<FullyConnectedParams>();
  require_float("FullyConnected", in[0]);
  const int64_t n = p.num_hidden;
  const int64_t k = in[1].shape()[1];
  const int64_t m = k == 0 ? 0 : in[0].size() / k;
  NANOMX_CHECK(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX)
      << "FullyConnected: " << in[0].shape() << " x " << in[1].shape()
      << " exceeds the BLAS int range";
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* o = out[0].data_as<T>();
      if (m == 0 || n == 0) return;
      if (k == 0) {
        std::fill(o, o + m * n, T(0));
      } else {
        gemm_nt<T>(m, n, k, in[0].data_as<T>(), in[1].data_as<T>(), o);
      }
      if (!p.no_bias) {
        const T* b = in[2].data_as<T>();
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) o[i * n + j] += b[j];
        }
      }
    }
  });
}

void activation(const ParsedParams& pp, std::span<const NDArray> in, std::span<const NDArray> out) {
  const ActType act = pp.get<ActivationParams>().act;
  require_float("Activation", in[0]);
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* x = in[0].data_as<T>();
      T* y = out[0].data_as<T>();
      const int64_t size = in[0].size();
      switch (act) {
        case ActType::kRelu:
          for (int64_t i = 0; i < size; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
          break;
        case ActType::kSigmoid:
          for (int64_t i = 0; i < size; ++i) y[i] = T(1) / (T(1) + std::exp(-x[i]));
          break;
        case ActType::kTanh:
          for (int64_t i = 0; i < size; ++i) y[i] = std::tanh(x[i]);
          break;
        case ActType::kSoftRelu:
          // log(1 + exp(x)), without overflow for large x (MXNet's softrelu).
          for (int64_t i = 0; i < size; ++i)
            y[i] = x[i] > T(20) ? x[i] : std::log1p(std::exp(x[i]));
          break;
        case ActType::kSoftSign:
          for (int64_t i = 0; i < size; ++i) y[i] = x[i] / (T(1) + std::abs(x[i]));
          break;
      }
    }
  });
}

// Softmax over `len` contiguous elements... or strided by `stride` (multi_output: axis 1).
template <typename T>
void softmax_rows(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* xr = x + o * len * inner + i;
      T* yr = y + o * len * inner + i;
      double mx = -INFINITY;
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, static_cast<double>(xr[j * inner]));
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += std::exp(static_cast<double>(xr[j * inner]) - mx);
      for (int64_t j = 0; j < len; ++j)
        yr[j * inner] = static_cast<T>(std::exp(static_cast<double>(xr[j * inner]) - mx) / sum);
    }
  }
}

void softmax_output(const ParsedParams& pp, std::span<const NDArray> in,
                    std::span<const NDArray> out) {
  const auto& p = pp.get<SoftmaxOutputParams>();
  require_float("SoftmaxOutput", in[0]);
  const Shape& s = in[0].shape();
  const int64_t size = in[0].size();
  if (size == 0) return;
  const AxisSplit split = softmax_output_split(p, s);
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      softmax_rows<T>(in[0].data_as<T>(), out[0].data_as<T>(), outer, len, inner);
    }
  });
}

void copy_data(const ParsedParams&, std::span<const NDArray> in, std::span<const NDArray> out) {
  if (in[0].data() != out[0].data() && in[0].nbytes() > 0)
    std::memcpy(out[0].data(), in[0].data(), in[0].nbytes());
}

// ---- softmax --------------------------------------------------------------------------------

enum class Softmax { kSoftmax, kLog, kMin };

// Along the axis, for each (outer, inner) pair: m = max(x / t), e = exp(x / t - m),
// softmax = e / sum(e), log_softmax = x / t - m - log(sum(e)); softmin negates x first.
// Accumulates in double; an empty input writes nothing.
template <Softmax S, typename In, typename Out>
void softmax_typed(const NDArray& in, const NDArray& out, int axis, double temperature) {
  const AxisSplit split = split_at_axis(in.shape(), axis);
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  const In* x = in.data_as<In>();
  Out* o = out.data_as<Out>();
  const double scale = (S == Softmax::kMin ? -1.0 : 1.0) / temperature;
  std::vector<double> row(static_cast<size_t>(len));
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t b = 0; b < inner; ++b) {
      const int64_t base = a * len * inner + b;
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < len; ++k) {
        const double v = to_double(x[base + k * inner]) * scale;
        row[static_cast<size_t>(k)] = v;
        if (v > m) m = v;
      }
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(row[static_cast<size_t>(k)] - m);
      const double log_sum = std::log(sum);
      for (int64_t k = 0; k < len; ++k) {
        const double v = row[static_cast<size_t>(k)] - m;
        o[base + k * inner] =
            from_double<Out>(S == Softmax::kLog ? v - log_sum : std::exp(v) / sum);
      }
    }
  }
}

template <Softmax S>
void softmax_kernel(const ParsedParams& p, std::span<const NDArray> in,
                    std::span<const NDArray> out) {
  const auto& s = p.get<SoftmaxParams>();
  const int axis = normalize_axis(s.axis, in[0].shape().ndim(), p.op().c_str());
  dispatch_dtype(in[0].dtype(), [&](auto in_tag) {
    using In = decltype(in_tag);
    dispatch_dtype(out[0].dtype(), [&](auto out_tag) {
      using Out = decltype(out_tag);
      // Inference admits floating-point types only.
      if constexpr (kIsFloat<In> && kIsFloat<Out>) {
        softmax_typed<S, In, Out>(in[0], out[0], axis, s.temperature);
      }
    });
  });
}

}  // namespace

void register_nn_kernels() {
  register_kernel("FullyConnected", DeviceType::kCPU, fully_connected);
  register_kernel("Activation", DeviceType::kCPU, activation);
  register_kernel("SoftmaxOutput", DeviceType::kCPU, softmax_output);
  register_kernel("LinearRegressionOutput", DeviceType::kCPU, copy_data);
  register_kernel("softmax", DeviceType::kCPU, softmax_kernel<Softmax::kSoftmax>);
  register_kernel("log_softmax", DeviceType::kCPU, softmax_kernel<Softmax::kLog>);
  register_kernel("softmin", DeviceType::kCPU, softmax_kernel<Softmax::kMin>);
}

}  // namespace nanomx::ops::cpu
