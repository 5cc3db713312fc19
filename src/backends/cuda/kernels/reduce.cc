// The CUDA kernels of the reductions (sum, mean, prod, max, min, nansum, nanprod, norm, argmax,
// argmin) and their gradients.
#include <cmath>
#include <utility>
#include <vector>

#include "backends/cuda/kernels/gpu_kernel.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace nanomx::ops::cuda_kernels {
namespace {

// Reduces x (of shape `dims`) over the axes marked in `reduced` into `out` with `r`: one pass
// per run of adjacent reduced axes, the last run first, the later passes combining the earlier
// ones' results (a plain sum after the norms' first pass); the last pass scales by `scale` and
// takes the root when `root`. Intermediate results live in stream-ordered memory
// (cudaMallocAsync). No axis reduced: a copy.
void reduce_axes(const ParsedParams& p, cu::Reducer r, cu::ConstTensor x, std::vector<int64_t> dims,
                 std::vector<bool> reduced, cu::Tensor out, int64_t out_size, double scale,
                 bool root, int64_t int_mean_count, cudaStream_t s) {
  cu::ConstTensor src = x;
  std::vector<void*> temps;
  auto free_temps = [&] {
    for (void* t : temps) (void)cudaFreeAsync(t, s);
  };
  bool any = false;
  try {
    for (;;) {
      int b = static_cast<int>(dims.size());
      while (b > 0 && !reduced[static_cast<size_t>(b - 1)]) --b;
      if (b == 0) break;
      int a = b - 1;
      while (a > 0 && reduced[static_cast<size_t>(a - 1)]) --a;
      int64_t outer = 1, len = 1, inner = 1;
      for (int d = 0; d < a; ++d) outer *= dims[static_cast<size_t>(d)];
      for (int d = a; d < b; ++d) len *= dims[static_cast<size_t>(d)];
      for (size_t d = static_cast<size_t>(b); d < dims.size(); ++d) inner *= dims[d];
      dims.erase(dims.begin() + a, dims.begin() + b);
      reduced.erase(reduced.begin() + a, reduced.begin() + b);
      bool last = true;
      for (bool more : reduced) last = last && !more;
      cu::Tensor dst = out;
      if (!last) {
        void* t = nullptr;
        NANOMX_CUDA_CALL(
            cudaMallocAsync(&t, static_cast<size_t>(outer * inner) * cu::elem_size(dst.elem), s));
        temps.push_back(t);
        dst.data = t;
      }
      const cu::Reducer pass = any && (r == cu::Reducer::kAbsSum || r == cu::Reducer::kSquareSum)
                                   ? cu::Reducer::kSum
                                   : r;
      check_launch(p, cu::reduce(pass, src, dst, outer, len, inner, last ? scale : 1.0,
                                 last && root, last ? int_mean_count : 0, s));
      src = dst;
      any = true;
    }
    if (!any) {
      NANOMX_CUDA_CALL(cudaMemcpyAsync(out.data, src.data,
                                       static_cast<size_t>(out_size) * cu::elem_size(out.elem),
                                       cudaMemcpyDeviceToDevice, s));
    }
  } catch (...) {
    free_temps();
    throw;
  }
  free_temps();
}

}  // namespace

// The axes of `full` that `part` (aligned on the right) broadcast along: summed for its gradient.
std::vector<bool> broadcast_axes(const Shape& part, const Shape& full) {
  std::vector<bool> reduced(static_cast<size_t>(full.ndim()), false);
  const int lead = full.ndim() - part.ndim();
  for (int d = 0; d < full.ndim(); ++d) {
    reduced[static_cast<size_t>(d)] = d < lead || (part[d - lead] == 1 && full[d] != 1);
  }
  return reduced;
}

void sum_axes(const ParsedParams& p, cu::ConstTensor x, std::vector<int64_t> dims,
              std::vector<bool> reduced, const NDArray& out, double scale, cudaStream_t s) {
  reduce_axes(p, cu::Reducer::kSum, x, std::move(dims), std::move(reduced), fw(out), out.size(),
              scale, false, 0, s);
}

namespace {

// The reductions: sum, mean, prod, max, min, nansum, nanprod, norm (ord 1 or 2) over any set of
// axes. kMean: the sum divided by the count (an empty mean is NaN, as numpy; 0 for integers, as
// the CPU's). Integer sums, products and means wrap as the CPU's (cu::reduce).
template <cu::Reducer R, bool kMean = false>
void reduce_tensor(const ParsedParams& p, cu::ConstTensor x, const Shape& is, cu::Tensor out,
                   int64_t out_size, cudaStream_t s) {
  const auto& r = p.get<ReduceParams>();
  const ReduceSpec spec = reduce_spec(p.op(), r.axis, r.keepdims, r.exclude, is);
  int64_t total = 1;
  for (int d = 0; d < is.ndim(); ++d) {
    if (spec.reduced[static_cast<size_t>(d)]) total *= is[d];
  }
  if (out_size == 0) return;
  const bool norm = R == cu::Reducer::kSquareSum;  // norm's ord picks the reducer below
  const cu::Reducer reducer = norm && r.ord == 1 ? cu::Reducer::kAbsSum : R;
  if (is.size() == 0) {
    NANOMX_CHECK(reducer != cu::Reducer::kMax && reducer != cu::Reducer::kMin)
        << p.op() << ": zero-size reduction of " << is << " has no identity";
    const bool ones = reducer == cu::Reducer::kProd || reducer == cu::Reducer::kNanProd;
    const bool float_out = out.elem == cu::Elem::kFloat32 || out.elem == cu::Elem::kFloat64 ||
                           out.elem == cu::Elem::kFloat16;
    const double empty_mean = float_out ? NAN : 0.0;
    check_launch(p, cu::fill(out, kMean ? empty_mean : ones ? 1.0 : 0.0, out_size, s));
    return;
  }
  reduce_axes(p, reducer, x, std::vector<int64_t>(is.begin(), is.end()), spec.reduced, out,
              out_size, kMean ? 1.0 / static_cast<double>(total) : 1.0,
              reducer == cu::Reducer::kSquareSum, kMean ? total : 0, s);
}
template <cu::Reducer R, bool kMean = false>
void reduce(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  reduce_tensor<R, kMean>(p, f(in[0]), in[0].shape(), fw(out[0]), out[0].size(), s);
}

// norm: in the input's dtype (a reduction), or, with an out_dtype another, as the CPU: the input
// read as float64 (a cast into scratch), the norm in double, converted once to the output's
// dtype.
void norm(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  if (in[0].dtype() == out[0].dtype()) {
    reduce<cu::Reducer::kSquareSum>(p, in, out, s);
    return;
  }
  const int64_t n = in[0].size(), m = out[0].size();
  DeviceScratch wide(static_cast<size_t>(n + m) * sizeof(double), s);
  const cu::Tensor wide_in{wide.get(), cu::Elem::kFloat64};
  const cu::Tensor wide_out{static_cast<double*>(wide.get()) + n, cu::Elem::kFloat64};
  check_launch(p, cu::cast(f(in[0]), wide_in, n, s));
  reduce_tensor<cu::Reducer::kSquareSum>(p, wide_in, in[0].shape(), wide_out, m, s);
  check_launch(p, cu::cast(wide_out, fw(out[0]), m, s));
}

// argmax / argmin / argmax_channel: along one axis, or over the array flattened.
template <bool kMax>
void arg_reduce(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                cudaStream_t s) {
  const auto& a = p.get<ArgReduceParams>();
  const Shape& shape = in[0].shape();
  if (out[0].size() == 0) return;
  int64_t outer = 1, len = in[0].size(), inner = 1;
  if (a.axis) {
    const int axis = normalize_axis(*a.axis, shape.ndim(), p.op().c_str());
    for (int d = 0; d < axis; ++d) outer *= shape[d];
    for (int d = axis + 1; d < shape.ndim(); ++d) inner *= shape[d];
    len = shape[axis];
  }
  check_launch(p, cu::arg_reduce(kMax, f(in[0]), fw(out[0]), outer, len, inner, s));
}

// _backward_sum / _backward_mean (dy, data) -> d_data: dy spread over the reduced axes
// (divided by their size for mean).
template <bool kMean>
void reduce_backward(const ParsedParams& p, std::span<const NDArray> in,
                     std::span<const NDArray> out, cudaStream_t s) {
  const auto& r = p.get<ReduceParams>();
  const Shape& shape = in[1].shape();
  const ReduceSpec spec = reduce_spec(p.op(), r.axis, r.keepdims, r.exclude, shape);
  NANOMX_CHECK(shape.ndim() <= cu::kMaxDims)
      << p.op() << ": " << shape.ndim() << " axes; the CUDA kernel handles up to " << cu::kMaxDims;
  const double scale = kMean && shape.size() > 0 ? static_cast<double>(spec.kept.size()) /
                                                       static_cast<double>(shape.size())
                                                 : 1.0;
  cu::Broadcast bc;
  bc.ndim = shape.ndim();
  const auto kept_strides = spec.kept.strides();
  for (int d = 0; d < shape.ndim(); ++d) {
    bc.shape[d] = shape[d];
    bc.a_strides[d] = spec.kept[d] == 1 ? 0 : kept_strides[static_cast<size_t>(d)];
  }
  check_launch(p, cu::broadcast_scaled(f(in[0]), fw(out[0]), out[0].size(), bc, scale, s));
}

// _broadcast_backward (dy, input) -> d_input: dy summed down to the input's shape (aligned on
// the right; the axes the forward broadcast are summed).
void broadcast_backward(const ParsedParams& p, std::span<const NDArray> in,
                        std::span<const NDArray> out, cudaStream_t s) {
  const Shape &full = in[0].shape(), &part = in[1].shape();
  if (out[0].size() == 0) return;
  if (in[0].size() == 0) {
    check_launch(p, cu::fill(fw(out[0]), 0.0, out[0].size(), s));
    return;
  }
  sum_axes(p, f(in[0]), std::vector<int64_t>(full.begin(), full.end()), broadcast_axes(part, full),
           out[0], 1.0, s);
}

}  // namespace

void add_reduce_kernels(const AddKernel& add) {
  constexpr Operands kSame = Operands::kSame;
  constexpr Operands kAnyType = Operands::kAnyType;
  using R = cu::Reducer;
  add("sum", gpu_kernel<reduce<R::kSum>, kSame>);
  add("prod", gpu_kernel<reduce<R::kProd>, kSame>);
  add("max", gpu_kernel<reduce<R::kMax>, kSame>);
  add("min", gpu_kernel<reduce<R::kMin>, kSame>);
  add("nansum", gpu_kernel<reduce<R::kNanSum>, kSame>);
  add("nanprod", gpu_kernel<reduce<R::kNanProd>, kSame>);
  add("norm", gpu_kernel<norm, kAnyType>);
  add("argmax", gpu_kernel<arg_reduce<true>, kSame>);
  add("argmin", gpu_kernel<arg_reduce<false>, kSame>);
  add("argmax_channel", gpu_kernel<arg_reduce<true>, kSame>);
  add("_backward_sum", gpu_kernel<reduce_backward<false>>);
  add("_backward_mean", gpu_kernel<reduce_backward<true>>);
  add("_broadcast_backward", gpu_kernel<broadcast_backward>);
  add("mean", gpu_kernel<reduce<R::kSum, true>, kSame>);
}

}  // namespace nanomx::ops::cuda_kernels
