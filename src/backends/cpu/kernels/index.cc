// CPU kernels of the indexing operators (definitions in ops/index.cc).
#include <cmath>
#include <cstdio>
#include <cstring>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

// An index element as an integer (floats truncate toward zero).
template <typename T>
int64_t index_value(T v) {
  const double d = to_double(v);
  return std::isfinite(d) ? static_cast<int64_t>(d) : INT64_MIN;
}

void pick_kernel(const ParsedParams& p, std::span<const NDArray> in,
                 std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  const Shape& data = in[0].shape();
  const auto& pp = p.get<PickParams>();
  const int axis = normalize_axis(pp.axis, data.ndim(), "pick");
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= data[i];
  for (int i = axis + 1; i < data.ndim(); ++i) inner *= data[i];
  const int64_t len = data[axis];
  const bool wrap = pp.wrap;
  if (out.size() == 0) return;
  NANOMX_CHECK(len > 0) << "pick: cannot pick from an empty axis";
  dispatch_dtype(in[1].dtype(), [&](auto itag) {
    using I = decltype(itag);
    const I* idx = in[1].data_as<I>();
    dispatch_size(dtype_size(out.dtype()), [&](auto tag) {
      using E = decltype(tag);
      const E* x = static_cast<const E*>(in[0].data());
      E* o = static_cast<E*>(out.data());
      for (int64_t a = 0; a < outer; ++a) {
        for (int64_t i = 0; i < inner; ++i) {
          int64_t j = index_value(idx[a * inner + i]);
          j = wrap ? ((j % len) + len) % len : std::clamp<int64_t>(j, 0, len - 1);
          o[a * inner + i] = x[(a * len + j) * inner + i];
        }
      }
    });
  });
}

void fill_element_kernel(const ParsedParams&, std::span<const NDArray> in,
                         std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  const int64_t rows = in[0].shape()[0], cols = in[0].shape()[1];
  if (out.data() != in[0].data() && out.nbytes()) {
    std::memmove(out.data(), in[0].data(), out.nbytes());
  }
  dispatch_dtype(in[2].dtype(), [&](auto itag) {
    using I = decltype(itag);
    const I* idx = in[2].data_as<I>();
    dispatch_size(dtype_size(out.dtype()), [&](auto tag) {
      using E = decltype(tag);
      const E* val = static_cast<const E*>(in[1].data());
      E* o = static_cast<E*>(out.data());
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t j = index_value(idx[i]);
        NANOMX_CHECK(0 <= j && j < cols) << "fill_element_0index: index " << to_double(idx[i])
                                         << " in row " << i << " out of range [0, " << cols << ")";
        o[i * cols + j] = val[i];
      }
    });
  });
}

void onehot_kernel(const ParsedParams&, std::span<const NDArray> in,
                   std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  const int64_t rows = out.shape()[0], cols = out.shape()[1];
  dispatch_dtype(in[0].dtype(), [&](auto itag) {
    using I = decltype(itag);
    const I* idx = in[0].data_as<I>();
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t j = index_value(idx[i]);
      NANOMX_CHECK(0 <= j && j < cols) << "_onehot_encode: index " << to_double(idx[i])
                                       << " in row " << i << " out of range [0, " << cols << ")";
    }
    dispatch_dtype(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* o = out.data_as<T>();
      const T zero = from_double<T>(0), one = from_double<T>(1);
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t j = index_value(idx[i]);
        for (int64_t c = 0; c < cols; ++c) o[i * cols + c] = c == j ? one : zero;
      }
    });
  });
}

}  // namespace

void register_index_kernels() {
  register_kernel("pick", DeviceType::kCPU, pick_kernel);
  register_kernel("fill_element_0index", DeviceType::kCPU, fill_element_kernel);
  register_kernel("_onehot_encode", DeviceType::kCPU, onehot_kernel);
}

}  // namespace nanomx::ops::cpu
