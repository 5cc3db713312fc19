// The CUDA kernels of the creation operators: _zeros, _ones, _full, zeros_like, _arange,
// _linspace, _eye.
#include "backends/cuda/kernels/gpu_kernel.h"
#include "ops/op_params.h"

namespace nanomx::ops::cuda_kernels {
namespace {

void fill(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
          cudaStream_t s) {
  check_launch(p, cu::fill(fw(out[0]), p.get<FillParams>().value, out[0].size(), s));
}

template <int kValue>
void fill_like(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
               cudaStream_t s) {
  check_launch(p, cu::fill(fw(out[0]), static_cast<double>(kValue), out[0].size(), s));
}

void arange(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
            cudaStream_t s) {
  const auto& r = p.get<RangeParams>();
  const double start = r.stop ? r.start : (r.infer_range ? r.start : 0);
  check_launch(p, cu::arange(fw(out[0]), out[0].size(), start, r.step, r.repeat, s));
}

void linspace(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
              cudaStream_t s) {
  const auto& r = p.get<RangeParams>();
  const double den = static_cast<double>(r.endpoint ? r.num - 1 : r.num);
  const double step = den > 0 ? (*r.stop - r.start) / den : 0;
  check_launch(p, cu::linspace(fw(out[0]), out[0].size(), r.start, step, s));
}

void eye(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
         cudaStream_t s) {
  const Shape& sh = out[0].shape();
  check_launch(p, cu::eye(fw(out[0]), sh[0], sh[1], p.get<RangeParams>().k, s));
}

}  // namespace

void add_init_kernels(const AddKernel& add) {
  constexpr Operands kSame = Operands::kSame;
  add("_zeros", gpu_kernel<fill, kSame>);
  add("_ones", gpu_kernel<fill, kSame>);
  add("_full", gpu_kernel<fill, kSame>);
  add("_zeros_without_dtype", gpu_kernel<fill, kSame>);
  add("zeros_like", gpu_kernel<fill_like<0>, kSame>);
  add("ones_like", gpu_kernel<fill_like<1>, kSame>);
  add("_arange", gpu_kernel<arange, kSame>);
  add("_linspace", gpu_kernel<linspace, kSame>);
  add("_eye", gpu_kernel<eye, kSame>);
}

}  // namespace nanomx::ops::cuda_kernels
