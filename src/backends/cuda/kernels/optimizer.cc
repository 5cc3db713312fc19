// The CUDA kernels of the optimizer updates: sgd (with momentum, several weights at once, mixed
// precision) and adam.
#include "ops/optimizer.h"

#include "backends/cuda/kernels/gpu_kernel.h"

namespace nanomx::ops::cuda_kernels {
namespace {

template <bool kMomentum>
void sgd(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
         cudaStream_t s) {
  const auto& o = p.get<OptimizerParams>();
  const cu::Tensor mom = kMomentum ? fw(in[2]) : cu::Tensor{nullptr, elem_of(out[0].dtype())};
  check_launch(p, cu::sgd(f(in[0]), f(in[1]), mom, fw(out[0]), out[0].size(), o.lr, o.wd,
                          o.rescale_grad, o.clip_gradient, o.momentum, s));
}

// multi_sgd_update / multi_sgd_mom_update: one sgd launch per weight, with its lr and wd.
template <bool kMomentum>
void multi_sgd(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
               cudaStream_t s) {
  const auto& m = p.get<MultiSgdParams>();
  constexpr int kGroup = kMomentum ? 3 : 2;
  for (int w = 0; w < m.num_weights; ++w) {
    const NDArray& weight = in[static_cast<size_t>(w * kGroup)];
    const cu::Tensor mom = kMomentum ? fw(in[static_cast<size_t>(w * kGroup + 2)])
                                     : cu::Tensor{nullptr, elem_of(weight.dtype())};
    check_launch(p, cu::sgd(f(weight), f(in[static_cast<size_t>(w * kGroup + 1)]), mom,
                            fw(out[static_cast<size_t>(w)]), out[static_cast<size_t>(w)].size(),
                            m.lrs[static_cast<size_t>(w)], m.wds[static_cast<size_t>(w)],
                            m.rescale_grad, m.clip_gradient, m.momentum, s));
  }
}

void adam(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
          cudaStream_t s) {
  const auto& o = p.get<OptimizerParams>();
  check_launch(
      p, cu::adam(f(in[0]), f(in[1]), fw(in[2]), fw(in[3]), fw(out[0]), out[0].size(), o.lr, o.wd,
                  o.rescale_grad, o.clip_gradient, o.beta1, o.beta2, o.epsilon, s));
}

// mp_sgd_update / mp_sgd_mom_update: weight and gradient in one dtype, the momentum and the
// master copy float32 (the operator's inference says so).
template <bool kMomentum>
void mp_sgd(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
            cudaStream_t s) {
  const auto& o = p.get<OptimizerParams>();
  const NDArray& w32 = in[kMomentum ? 3 : 2];
  NANOMX_CHECK(in[1].dtype() == out[0].dtype() && w32.dtype() == DType::kFloat32 &&
               (!kMomentum || in[2].dtype() == DType::kFloat32))
      << p.op() << ": the weight and gradient must share a dtype and the master weight"
      << (kMomentum ? " and momentum" : "") << " be float32";
  float* mom = kMomentum ? static_cast<float*>(in[2].data()) : nullptr;
  check_launch(p,
               cu::mp_sgd(f(in[1]), mom, static_cast<float*>(w32.data()), fw(out[0]), out[0].size(),
                          static_cast<float>(o.lr), static_cast<float>(o.wd),
                          static_cast<float>(o.rescale_grad), static_cast<float>(o.clip_gradient),
                          static_cast<float>(o.momentum), s));
}

}  // namespace

void add_optimizer_kernels(const AddKernel& add) {
  add("sgd_update", gpu_kernel<sgd<false>>);
  add("sgd_mom_update", gpu_kernel<sgd<true>>);
  add("multi_sgd_update", gpu_kernel<multi_sgd<false>>);
  add("multi_sgd_mom_update", gpu_kernel<multi_sgd<true>>);
  add("adam_update", gpu_kernel<adam>);
  add("mp_sgd_update", gpu_kernel<mp_sgd<false>, Operands::kAnyFloat>);
  add("mp_sgd_mom_update", gpu_kernel<mp_sgd<true>, Operands::kAnyFloat>);
}

}  // namespace nanomx::ops::cuda_kernels
