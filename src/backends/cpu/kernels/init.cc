// CPU kernels of the creation operators (definitions in ops/init.cc).
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

// out[i] = T(start) + T(i / repeat) * T(step): with an integer dtype a fractional step
// truncates (MXNet's rule).
void arange_kernel(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> outs) {
  const auto& r = p.get<RangeParams>();
  const double start = r.stop ? r.start : (r.infer_range ? r.start : 0);
  dispatch_dtype(outs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    T* o = outs[0].data_as<T>();
    const C s = to_compute(from_double<T>(start)), st = to_compute(from_double<T>(r.step));
    const int64_t n = outs[0].size();
    for (int64_t i = 0; i < n; ++i) {
      const C v = static_cast<C>(s + static_cast<C>(i / r.repeat) * st);
      if constexpr (std::is_same_v<T, half>) {
        o[i] = half(static_cast<float>(v));
      } else {
        o[i] = static_cast<T>(v);
      }
    }
  });
}

void linspace_kernel(const ParsedParams& p, std::span<const NDArray>,
                     std::span<const NDArray> outs) {
  const auto& r = p.get<RangeParams>();
  const double den = static_cast<double>(r.endpoint ? r.num - 1 : r.num);
  const double step = den > 0 ? (*r.stop - r.start) / den : 0;
  dispatch_dtype(outs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = outs[0].data_as<T>();
    for (int64_t i = 0; i < r.num; ++i)
      o[i] = from_double<T>(r.start + step * static_cast<double>(i));
  });
}

void eye_kernel(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> outs) {
  const auto& r = p.get<RangeParams>();
  const NDArray& out = outs[0];
  const int64_t rows = out.shape()[0], cols = out.shape()[1];
  if (out.nbytes()) std::memset(out.data(), 0, out.nbytes());
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data_as<T>();
    for (int64_t i = std::max<int64_t>(0, -r.k); i < rows && i + r.k < cols; ++i) {
      o[i * cols + i + r.k] = from_double<T>(1);
    }
  });
}

void fill_kernel(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> outs) {
  const double value = p.get<FillParams>().value;
  const NDArray& out = outs[0];
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = from_double<T>(value);
    T* o = out.data_as<T>();
    const int64_t n = out.size();
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  });
}

template <int kValue>
void fill_like_kernel(const ParsedParams&, std::span<const NDArray>,
                      std::span<const NDArray> outs) {
  dispatch_dtype(outs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = outs[0].data_as<T>();
    std::fill(o, o + outs[0].size(), from_double<T>(kValue));
  });
}

}  // namespace

void register_init_kernels() {
  constexpr DeviceType kCPU = DeviceType::kCPU;
  for (const char* name : {"_full", "_zeros", "_ones", "_zeros_without_dtype"}) {
    register_kernel(name, kCPU, fill_kernel);
  }
  register_kernel("_arange", kCPU, arange_kernel);
  register_kernel("_linspace", kCPU, linspace_kernel);
  register_kernel("_eye", kCPU, eye_kernel);
  register_kernel("zeros_like", kCPU, fill_like_kernel<0>);
  register_kernel("ones_like", kCPU, fill_like_kernel<1>);
}

}  // namespace nanomx::ops::cpu
