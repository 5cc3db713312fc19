// CPU kernels of the operators that move elements (definitions in ops/layout.cc): every one of
// them but Reshape and the slice assignments is a strided gather.
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

// out (contiguous) = src walked with src_strides from src_base.
void gather(const NDArray& src, const std::vector<int64_t>& src_strides, int64_t src_base,
            const NDArray& out) {
  dispatch_size(dtype_size(out.dtype()), [&](auto tag) {
    using E = decltype(tag);
    const E* s = static_cast<const E*>(src.data());
    E* o = static_cast<E*>(out.data());
    const std::array<std::vector<int64_t>, 2> strides = {out.shape().strides(), src_strides};
    for_each_row<2>(
        out.shape().dims(), strides, {0, src_base},
        [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
          E* po = o + off[0];
          const E* ps = s + off[1];
          if (st[1] == 1) {
            std::memcpy(po, ps, static_cast<size_t>(len) * sizeof(E));
          } else {
            for (int64_t i = 0; i < len; ++i) po[i] = ps[i * st[1]];
          }
        });
  });
}

Region slice_of(const ParsedParams& p, const Shape& shape, const char* arg) {
  const auto& s = p.get<SliceParams>();
  return slice_region(p.op(), s.begin, s.end, s.step, shape, arg);
}

void slice_kernel(const ParsedParams& p, std::span<const NDArray> in,
                  std::span<const NDArray> out) {
  const Region r = slice_of(p, in[0].shape(), "data");
  // Not a structured binding: clang 14 cannot capture one in the lambdas below.
  const auto layout = region_strides(in[0].shape(), r);
  const std::vector<int64_t>& strides = layout.first;
  const int64_t base = layout.second;
  gather(in[0], strides, base, out[0]);
}

void slice_axis_kernel(const ParsedParams& p, std::span<const NDArray> in,
                       std::span<const NDArray> out) {
  const auto& s = p.get<SliceAxisParams>();
  const Shape& shape = in[0].shape();
  const int axis = normalize_axis(s.axis, shape.ndim(), "slice_axis");
  Region r = full_region(shape);
  slice_axis_range("slice_axis", axis, shape[axis], s.begin, s.end, 1, r);
  // Not a structured binding: clang 14 cannot capture one in the lambdas below.
  const auto layout = region_strides(shape, r);
  const std::vector<int64_t>& strides = layout.first;
  const int64_t base = layout.second;
  gather(in[0], strides, base, out[0]);
}

void copy_if_distinct(const NDArray& src, const NDArray& out) {
  if (out.data() != src.data() && out.nbytes()) std::memmove(out.data(), src.data(), out.nbytes());
}

void slice_assign_kernel(const ParsedParams& p, std::span<const NDArray> in,
                         std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  const Region r = slice_of(p, in[0].shape(), "lhs");
  copy_if_distinct(in[0], out);
  // Not a structured binding: clang 14 cannot capture one in the lambdas below.
  const auto layout = region_strides(out.shape(), r);
  const std::vector<int64_t>& strides = layout.first;
  const int64_t base = layout.second;
  dispatch_size(dtype_size(out.dtype()), [&](auto tag) {
    using E = decltype(tag);
    E* o = static_cast<E*>(out.data());
    const E* s = static_cast<const E*>(in[1].data());
    const std::array<std::vector<int64_t>, 2> st2 = {strides, in[1].shape().strides()};
    for_each_row<2>(
        r.count, st2, {base, 0},
        [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
          for (int64_t i = 0; i < len; ++i) o[off[0] + i * st[0]] = s[off[1] + i];
        });
  });
}

void slice_assign_scalar_kernel(const ParsedParams& p, std::span<const NDArray> in,
                                std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  const Region r = slice_of(p, in[0].shape(), "data");
  const double scalar = p.get<SliceParams>().scalar;
  copy_if_distinct(in[0], out);
  // Not a structured binding: clang 14 cannot capture one in the lambdas below.
  const auto layout = region_strides(out.shape(), r);
  const std::vector<int64_t>& strides = layout.first;
  const int64_t base = layout.second;
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = from_double<T>(scalar);
    T* o = out.data_as<T>();
    const std::array<std::vector<int64_t>, 1> st1 = {strides};
    for_each_row<1>(
        r.count, st1, {base},
        [&](const std::array<int64_t, 1>& off, int64_t len, const std::array<int64_t, 1>& st) {
          for (int64_t i = 0; i < len; ++i) o[off[0] + i * st[0]] = v;
        });
  });
}

void broadcast_to_kernel(const ParsedParams&, std::span<const NDArray> in,
                         std::span<const NDArray> out) {
  const LayoutWalk w = broadcast_to_walk(in[0].shape(), out[0].shape());
  gather(in[0], w.strides, w.base, out[0]);
}

void transpose_kernel(const ParsedParams& p, std::span<const NDArray> in,
                      std::span<const NDArray> out) {
  const LayoutWalk w = transpose_walk(in[0].shape(), p.get<AxesParams>().values);
  gather(in[0], w.strides, w.base, out[0]);
}

void reverse_kernel(const ParsedParams& p, std::span<const NDArray> in,
                    std::span<const NDArray> out) {
  const LayoutWalk w = reverse_walk(in[0].shape(), p.get<AxesParams>().values);
  gather(in[0], w.strides, w.base, out[0]);
}

void reshape_kernel(const ParsedParams&, std::span<const NDArray> in,
                    std::span<const NDArray> out) {
  copy_if_distinct(in[0], out[0]);
}

// SliceChannel: output k is the k-th equal part of the input along the axis.
void split_kernel(const ParsedParams& p, std::span<const NDArray> in,
                  std::span<const NDArray> out) {
  const auto& s = p.get<SplitParams>();
  const Shape& src = in[0].shape();
  const int axis = normalize_axis(s.axis, src.ndim(), "SliceChannel");
  const int64_t part = src[axis] / s.num_outputs;
  Region r = full_region(src);
  r.count[static_cast<size_t>(axis)] = part;
  for (size_t k = 0; k < out.size(); ++k) {
    r.begin[static_cast<size_t>(axis)] = static_cast<int64_t>(k) * part;
    auto [strides, base] = region_strides(src, r);
    if (s.squeeze_axis) strides.erase(strides.begin() + axis);
    gather(in[0], strides, base, out[k]);
  }
}

}  // namespace

void register_layout_kernels() {
  constexpr DeviceType kCPU = DeviceType::kCPU;
  register_kernel("slice", kCPU, slice_kernel);
  register_kernel("slice_axis", kCPU, slice_axis_kernel);
  register_kernel("_slice_assign", kCPU, slice_assign_kernel);
  register_kernel("_slice_assign_scalar", kCPU, slice_assign_scalar_kernel);
  register_kernel("broadcast_to", kCPU, broadcast_to_kernel);
  register_kernel("transpose", kCPU, transpose_kernel);
  register_kernel("reverse", kCPU, reverse_kernel);
  register_kernel("Reshape", kCPU, reshape_kernel);
  register_kernel("SliceChannel", kCPU, split_kernel);
}

}  // namespace nanomx::ops::cpu
