// CPU kernels of the layout and shape operators (definitions in ops/layout.cc): every one of
// them but Reshape, the slice assignments, Pad, Concat and stack is a strided gather over an
// index space whose row-major order is the output's; those copy rows or elements.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

// out (contiguous, `space` in row-major order) = src walked with src_strides from src_base.
void gather_space(const NDArray& src, std::span<const int64_t> space,
                  const std::vector<int64_t>& src_strides, int64_t src_base, const NDArray& out) {
  const Shape space_shape(space);
  dispatch_size(dtype_size(out.dtype()), [&](auto tag) {
    using E = decltype(tag);
    const E* s = static_cast<const E*>(src.data());
    E* o = static_cast<E*>(out.data());
    const std::array<std::vector<int64_t>, 2> strides = {space_shape.strides(), src_strides};
    for_each_row<2>(
        space, strides, {0, src_base},
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

// out (contiguous) = src walked with src_strides from src_base.
void gather(const NDArray& src, const std::vector<int64_t>& src_strides, int64_t src_base,
            const NDArray& out) {
  gather_space(src, out.shape().dims(), src_strides, src_base, out);
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
  for (size_t k = 0; k < out.size(); ++k) {
    const LayoutWalk w = split_walk(p.get<SplitParams>(), in[0].shape(), static_cast<int64_t>(k));
    gather_space(in[0], w.space, w.strides, w.base, out[k]);
  }
}

void copy_kernel(const ParsedParams&, std::span<const NDArray> in, std::span<const NDArray> out) {
  if (out[0].data() != in[0].data() && out[0].nbytes()) {
    std::memmove(out[0].data(), in[0].data(), out[0].nbytes());
  }
}

void swapaxis_kernel(const ParsedParams& p, std::span<const NDArray> in,
                     std::span<const NDArray> out) {
  const auto& a = p.get<AxisParams>();
  const LayoutWalk w = swapaxis_walk(in[0].shape(), a.axis, a.axis2);
  gather_space(in[0], w.space, w.strides, w.base, out[0]);
}

void tile_kernel(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out) {
  const LayoutWalk w = tile_walk(in[0].shape(), *p.get<AxisListParams>().axes);
  gather_space(in[0], w.space, w.strides, w.base, out[0]);
}

void repeat_kernel(const ParsedParams& p, std::span<const NDArray> in,
                   std::span<const NDArray> out) {
  const auto& a = p.get<AxisParams>();
  const LayoutWalk w = repeat_walk(in[0].shape(), a.count, a.opt_axis);
  gather_space(in[0], w.space, w.strides, w.base, out[0]);
}

// The source index of padded position `j` (already shifted by the padding before) on an axis of
// `n` elements, or -1 outside the data in constant mode.
int64_t pad_source(PadParams::Mode mode, int64_t j, int64_t n) {
  if (j >= 0 && j < n) return j;
  if (mode == PadParams::kConstant) return -1;
  if (mode == PadParams::kEdge) return j < 0 ? 0 : n - 1;
  return j < 0 ? -j : 2 * (n - 1) - j;  // reflect about the end elements, not repeating them
}

// Row by row: the leading axes map to one source row (or to padding), then the last axis is
// the padding before, one contiguous copy, and the padding after.
void pad_kernel(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> outs) {
  const auto& pp = p.get<PadParams>();
  const Shape& s = in[0].shape();
  const NDArray& out = outs[0];
  const int nd = s.ndim();
  if (out.size() == 0) return;
  const std::vector<int64_t> in_strides = s.strides();
  const Shape& os = out.shape();
  const int64_t width = os[nd - 1], n_last = s[nd - 1];
  const int64_t before_last = pp.width[2 * static_cast<size_t>(nd - 1)];
  const int64_t rows = out.size() / width;
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].data_as<T>();
    T* o = out.data_as<T>();
    const T fill = from_double<T>(pp.value);
    std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
    for (int64_t r = 0; r < rows; ++r) {
      T* row = o + r * width;
      int64_t src = 0;
      bool outside = false;
      for (int d = 0; d < nd - 1 && !outside; ++d) {
        const int64_t j = pad_source(
            pp.mode, idx[static_cast<size_t>(d)] - pp.width[2 * static_cast<size_t>(d)], s[d]);
        outside = j < 0;
        src += j * in_strides[static_cast<size_t>(d)];
      }
      if (outside) {
        std::fill(row, row + width, fill);
      } else {
        const T* xs = x + src;
        for (int64_t c = 0; c < before_last; ++c) {
          const int64_t j = pad_source(pp.mode, c - before_last, n_last);
          row[c] = j < 0 ? fill : xs[j];
        }
        std::copy(xs, xs + n_last, row + before_last);
        for (int64_t c = before_last + n_last; c < width; ++c) {
          const int64_t j = pad_source(pp.mode, c - before_last, n_last);
          row[c] = j < 0 ? fill : xs[j];
        }
      }
      for (int d = nd - 2; d >= 0; --d) {
        if (++idx[static_cast<size_t>(d)] < os[d]) break;
        idx[static_cast<size_t>(d)] = 0;
      }
    }
  });
}

// Concat's inverse: (dY, x0 ..) -> (dx0 ..), each row block's slabs copied out in turn.
void concat_backward_kernel(const ParsedParams& p, std::span<const NDArray> in,
                            std::span<const NDArray> outs) {
  const NDArray& dy = in[0];
  const int axis = normalize_axis(p.get<AxisParams>().axis, dy.shape().ndim(), "_backward_Concat");
  int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= dy.shape()[i];
  const size_t esize = dtype_size(dy.dtype());
  std::vector<size_t> slab(outs.size());
  size_t row = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    slab[i] = outer ? static_cast<size_t>(outs[i].size() / outer) * esize : 0;
    row += slab[i];
  }
  const auto* g = static_cast<const unsigned char*>(dy.data());
  for (int64_t r = 0; r < outer; ++r) {
    size_t at = static_cast<size_t>(r) * row;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (slab[i]) {
        std::memcpy(static_cast<unsigned char*>(outs[i].data()) + r * slab[i], g + at, slab[i]);
      }
      at += slab[i];
    }
  }
}

// Row blocks: for each index before the axis, each input's slab in turn.
void concat_kernel(const ParsedParams& p, std::span<const NDArray> in,
                   std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  const int axis = normalize_axis(p.get<AxisParams>().axis, out.shape().ndim(), "Concat");
  int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= out.shape()[i];
  const size_t esize = dtype_size(out.dtype());
  std::vector<size_t> slab(in.size());
  size_t row = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    slab[i] = outer ? static_cast<size_t>(in[i].size() / outer) * esize : 0;
    row += slab[i];
  }
  auto* o = static_cast<unsigned char*>(out.data());
  for (int64_t r = 0; r < outer; ++r) {
    size_t at = static_cast<size_t>(r) * row;
    for (size_t i = 0; i < in.size(); ++i) {
      if (slab[i]) {
        std::memcpy(o + at, static_cast<const unsigned char*>(in[i].data()) + r * slab[i], slab[i]);
      }
      at += slab[i];
    }
  }
}

void stack_kernel(const ParsedParams& p, std::span<const NDArray> in,
                  std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  const int axis = normalize_axis(p.get<AxisParams>().axis, out.shape().ndim(), "stack");
  int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= out.shape()[i];
  const size_t slab =
      outer ? static_cast<size_t>(in[0].size() / outer) * dtype_size(out.dtype()) : 0;
  if (slab == 0) return;
  auto* o = static_cast<unsigned char*>(out.data());
  for (int64_t r = 0; r < outer; ++r) {
    for (size_t i = 0; i < in.size(); ++i) {
      std::memcpy(o + (static_cast<size_t>(r) * in.size() + i) * slab,
                  static_cast<const unsigned char*>(in[i].data()) + r * slab, slab);
    }
  }
}

void slice_like_kernel(const ParsedParams&, std::span<const NDArray> in,
                       std::span<const NDArray> out) {
  Region r = full_region(in[0].shape());
  r.count = out[0].shape().to_vector();
  const auto layout = region_strides(in[0].shape(), r);
  gather_space(in[0], out[0].shape().dims(), layout.first, layout.second, out[0]);
}

void diag_kernel(const ParsedParams& p, std::span<const NDArray> in,
                 std::span<const NDArray> outs) {
  const auto& d = p.get<DiagParams>();
  const Shape& s = in[0].shape();
  const NDArray& out = outs[0];
  if (s.ndim() == 1) {
    const int64_t n = out.shape()[0];
    if (out.nbytes()) std::memset(out.data(), 0, out.nbytes());
    dispatch_size(dtype_size(out.dtype()), [&](auto tag) {
      using E = decltype(tag);
      const E* x = static_cast<const E*>(in[0].data());
      E* o = static_cast<E*>(out.data());
      for (int64_t i = 0; i < s[0]; ++i) {
        const int64_t row = d.k >= 0 ? i : i - d.k, col = d.k >= 0 ? i + d.k : i;
        o[row * n + col] = x[i];
      }
    });
    return;
  }
  const LayoutWalk w = diag_walk(s, d.k, d.axis1, d.axis2);
  gather_space(in[0], w.space, w.strides, w.base, out);
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
  for (const char* name : {"expand_dims", "squeeze", "Flatten"}) {
    register_kernel(name, kCPU, copy_kernel);
  }
  register_kernel("SwapAxis", kCPU, swapaxis_kernel);
  register_kernel("tile", kCPU, tile_kernel);
  register_kernel("repeat", kCPU, repeat_kernel);
  register_kernel("Pad", kCPU, pad_kernel);
  register_kernel("Concat", kCPU, concat_kernel);
  register_kernel("_backward_Concat", kCPU, concat_backward_kernel);
  register_kernel("stack", kCPU, stack_kernel);
  register_kernel("slice_like", kCPU, slice_like_kernel);
  register_kernel("diag", kCPU, diag_kernel);
}

}  // namespace nanomx::ops::cpu
