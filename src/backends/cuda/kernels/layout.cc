// The CUDA kernels of the layout operators (slice, transpose, Concat, tile, ...): strided walks,
// every operator one or a few; Pad and diag.
#include <vector>

#include "backends/cuda/kernels/gpu_kernel.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace nanomx::ops::cuda_kernels {
namespace {

// A walk of `shape` reading `src` with src_strides from src_base and writing `dst` with
// dst_strides from dst_base (element strides); at most kMaxDims axes.
void walk(const ParsedParams& p, const NDArray& src, std::span<const int64_t> shape,
          std::span<const int64_t> src_strides, int64_t src_base, const NDArray& dst,
          std::span<const int64_t> dst_strides, int64_t dst_base, cudaStream_t s) {
  NANOMX_CHECK(shape.size() <= static_cast<size_t>(cu::kMaxDims))
      << p.op() << ": " << shape.size() << " axes; the CUDA kernel handles up to " << cu::kMaxDims;
  cu::Strided w;
  w.ndim = static_cast<int>(shape.size());
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    w.shape[d] = shape[d];
    w.src_strides[d] = src_strides[d];
    w.dst_strides[d] = dst_strides[d];
    n *= shape[d];
  }
  w.src_base = src_base;
  w.dst_base = dst_base;
  check_launch(p, cu::copy_strided(src.data(), dst.data(), dtype_size(dst.dtype()), n, w, s));
}

// dst (contiguous, its own shape) = src walked with src_strides from src_base.
void gather(const ParsedParams& p, const NDArray& src, std::span<const int64_t> src_strides,
            int64_t src_base, const NDArray& dst, cudaStream_t s) {
  const auto dst_strides = dst.shape().strides();
  walk(p, src, dst.shape().dims(), src_strides, src_base, dst, dst_strides, 0, s);
}

void slice(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
           cudaStream_t s) {
  const auto& sp = p.get<SliceParams>();
  const Region r = slice_region(p.op(), sp.begin, sp.end, sp.step, in[0].shape(), "data");
  const auto [strides, base] = region_strides(in[0].shape(), r);
  gather(p, in[0], strides, base, out[0], s);
}

void slice_axis(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                cudaStream_t s) {
  const auto& sp = p.get<SliceAxisParams>();
  const Shape& shape = in[0].shape();
  const int axis = normalize_axis(sp.axis, shape.ndim(), "slice_axis");
  Region r = full_region(shape);
  slice_axis_range("slice_axis", axis, shape[axis], sp.begin, sp.end, 1, r);
  const auto [strides, base] = region_strides(shape, r);
  gather(p, in[0], strides, base, out[0], s);
}

// _slice_assign (lhs, rhs): out = lhs with rhs written into the region.
void slice_assign(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                  cudaStream_t s) {
  const auto& sp = p.get<SliceParams>();
  const Region r = slice_region(p.op(), sp.begin, sp.end, sp.step, in[0].shape(), "lhs");
  copy(p, in.first(1), out, s);
  const auto [strides, base] = region_strides(out[0].shape(), r);
  const auto rhs_strides = in[1].shape().strides();
  walk(p, in[1], r.count, rhs_strides, 0, out[0], strides, base, s);
}

void slice_like(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                cudaStream_t s) {
  Region r = full_region(in[0].shape());
  r.count = out[0].shape().to_vector();
  const auto [strides, base] = region_strides(in[0].shape(), r);
  gather(p, in[0], strides, base, out[0], s);
}

void broadcast_to(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                  cudaStream_t s) {
  const LayoutWalk w = broadcast_to_walk(in[0].shape(), out[0].shape());
  gather(p, in[0], w.strides, w.base, out[0], s);
}

void transpose(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
               cudaStream_t s) {
  const LayoutWalk w = transpose_walk(in[0].shape(), p.get<AxesParams>().values);
  gather(p, in[0], w.strides, w.base, out[0], s);
}

void reverse(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
             cudaStream_t s) {
  const LayoutWalk w = reverse_walk(in[0].shape(), p.get<AxesParams>().values);
  gather(p, in[0], w.strides, w.base, out[0], s);
}

// SliceChannel: output k is the k-th equal part of the input along the axis.
void split(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
           cudaStream_t s) {
  for (size_t k = 0; k < out.size(); ++k) {
    const LayoutWalk w = split_walk(p.get<SplitParams>(), in[0].shape(), static_cast<int64_t>(k));
    gather(p, in[0], w.strides, w.base, out[k], s);
  }
}

// Concat: input k into the output's slab at its offset along the axis.
void concat(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  const Shape& os = out[0].shape();
  const int axis = normalize_axis(p.get<AxisParams>().axis, os.ndim(), "Concat");
  const auto out_strides = os.strides();
  int64_t offset = 0;
  for (const NDArray& x : in) {
    const auto x_strides = x.shape().strides();
    walk(p, x, x.shape().dims(), x_strides, 0, out[0], out_strides,
         offset * out_strides[static_cast<size_t>(axis)], s);
    offset += x.shape()[axis];
  }
}

// stack: input k at index k of the new axis.
void stack(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
           cudaStream_t s) {
  const Shape& os = out[0].shape();
  const int axis = normalize_axis(p.get<AxisParams>().axis, os.ndim(), "stack");
  std::vector<int64_t> dst = os.strides();
  const int64_t step = dst[static_cast<size_t>(axis)];
  dst.erase(dst.begin() + axis);
  for (size_t k = 0; k < in.size(); ++k) {
    const auto x_strides = in[k].shape().strides();
    walk(p, in[k], in[k].shape().dims(), x_strides, 0, out[0], dst, static_cast<int64_t>(k) * step,
         s);
  }
}

// dst (contiguous) = src walked over the index space `space` with `strides` (tile, repeat,
// SwapAxis: a space larger than either array's shape, stride 0 on the repeated axes).
void gather_space(const ParsedParams& p, const NDArray& src, const std::vector<int64_t>& space,
                  std::span<const int64_t> strides, int64_t base, const NDArray& dst,
                  cudaStream_t s) {
  const auto dst_strides = Shape(space).strides();
  walk(p, src, space, strides, base, dst, dst_strides, 0, s);
}

void swapaxis(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
              cudaStream_t s) {
  const auto& a = p.get<AxisParams>();
  const LayoutWalk w = swapaxis_walk(in[0].shape(), a.axis, a.axis2);
  gather_space(p, in[0], w.space, w.strides, w.base, out[0], s);
}

// At most 4 axes: the walk's space has two per axis, and the walk takes 8.
void tile(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const LayoutWalk w = tile_walk(in[0].shape(), *p.get<AxisListParams>().axes);
  gather_space(p, in[0], w.space, w.strides, w.base, out[0], s);
}

void repeat(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  const auto& a = p.get<AxisParams>();
  const LayoutWalk w = repeat_walk(in[0].shape(), a.count, a.opt_axis);
  gather_space(p, in[0], w.space, w.strides, w.base, out[0], s);
}

// _slice_assign_scalar: out = data with the region set to the scalar.
void slice_assign_scalar(const ParsedParams& p, std::span<const NDArray> in,
                         std::span<const NDArray> out, cudaStream_t s) {
  const auto& sp = p.get<SliceParams>();
  const Region r = slice_region(p.op(), sp.begin, sp.end, sp.step, in[0].shape(), "data");
  copy(p, in.first(1), out, s);
  const auto [strides, base] = region_strides(out[0].shape(), r);
  NANOMX_CHECK(r.count.size() <= static_cast<size_t>(cu::kMaxDims))
      << p.op() << ": " << r.count.size() << " axes; the CUDA kernel handles up to "
      << cu::kMaxDims;
  cu::Strided w;
  w.ndim = static_cast<int>(r.count.size());
  int64_t n = 1;
  for (size_t d = 0; d < r.count.size(); ++d) {
    w.shape[d] = r.count[d];
    w.dst_strides[d] = strides[d];
    n *= r.count[d];
  }
  w.dst_base = base;
  check_launch(p, cu::fill_strided(fw(out[0]), sp.scalar, n, w, s));
}

void pad(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
         cudaStream_t s) {
  const auto& pp = p.get<PadParams>();
  const Shape &is = in[0].shape(), &os = out[0].shape();
  NANOMX_CHECK(is.ndim() <= cu::kMaxDims)
      << "Pad: " << is.ndim() << " axes; the CUDA kernel handles up to " << cu::kMaxDims;
  cu::PadLayout l;
  l.ndim = is.ndim();
  for (int d = 0; d < is.ndim(); ++d) {
    l.in_shape[d] = is[d];
    l.out_shape[d] = os[d];
    l.before[d] = pp.width[2 * static_cast<size_t>(d)];
  }
  l.mode = pp.mode == PadParams::kConstant ? 0 : pp.mode == PadParams::kEdge ? 1 : 2;
  check_launch(p, cu::pad(f(in[0]), fw(out[0]), out[0].size(), l, pp.value, s));
}

// diag: a 1-D input onto the k-th diagonal of a zeroed matrix; otherwise the k-th diagonal of
// axes (axis1, axis2) gathered as the last axis (a strided walk, as the CPU's).
void diag(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const auto& d = p.get<DiagParams>();
  const Shape& sh = in[0].shape();
  if (out[0].size() == 0) return;
  if (sh.ndim() == 1) {
    const int64_t n = out[0].shape()[0];
    NANOMX_CUDA_CALL(cudaMemsetAsync(out[0].data(), 0, out[0].nbytes(), s));
    const std::vector<int64_t> shape = {sh[0]}, src = {1}, dst = {n + 1};
    walk(p, in[0], shape, src, 0, out[0], dst, d.k >= 0 ? d.k : -d.k * n, s);
    return;
  }
  const LayoutWalk w = diag_walk(sh, d.k, d.axis1, d.axis2);
  gather_space(p, in[0], w.space, w.strides, w.base, out[0], s);
}

}  // namespace

void add_layout_kernels(const AddKernel& add) {
  constexpr Operands kSame = Operands::kSame;
  // Layout operators move elements of any dtype, every array on the GPU.
  constexpr Operands kAnyType = Operands::kAnyType;
  add("slice", gpu_kernel<slice, kAnyType>);
  add("slice_axis", gpu_kernel<slice_axis, kAnyType>);
  add("_slice_assign", gpu_kernel<slice_assign, kAnyType>);
  add("slice_like", gpu_kernel<slice_like, kAnyType>);
  add("broadcast_to", gpu_kernel<broadcast_to, kAnyType>);
  add("transpose", gpu_kernel<transpose, kAnyType>);
  add("reverse", gpu_kernel<reverse, kAnyType>);
  add("SliceChannel", gpu_kernel<split, kAnyType>);
  add("Concat", gpu_kernel<concat, kAnyType>);
  add("stack", gpu_kernel<stack, kAnyType>);
  add("SwapAxis", gpu_kernel<swapaxis, kAnyType>);
  add("tile", gpu_kernel<tile, kAnyType>);
  add("repeat", gpu_kernel<repeat, kAnyType>);
  add("_slice_assign_scalar", gpu_kernel<slice_assign_scalar, kSame>);
  add("Pad", gpu_kernel<pad, kAnyType>);
  add("diag", gpu_kernel<diag, kAnyType>);
}

}  // namespace nanomx::ops::cuda_kernels
