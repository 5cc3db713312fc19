// The CUDA kernels of the random operators: the samplers (_random_*, _sample_*) and _shuffle.
// Each call takes a key from the process's generator (mx.random.seed).
#include <string>
#include <vector>

#include "backends/cuda/kernels/gpu_kernel.h"
#include "nanomx/dtype.h"
#include "ops/op_params.h"

namespace nanomx::ops::cuda_kernels {
namespace {

// Each call takes a key from the process's generator (mx.random.seed), in the order the state
// variable imposes on every random operator, CPU or GPU: a seeded program draws the same GPU
// numbers on every run (not the CPU's: a GPU stream of its own, as MXNet's).
template <bool kUniform>
void random_sample(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
                   cudaStream_t s) {
  const auto& r = p.get<RandomParams>();
  const uint64_t key = random_state().generator();
  check_launch(p, cu::random_fill(kUniform, fw(out[0]), out[0].size(), key, r.a, r.b, s));
}

// _shuffle: the rows (axis 0) in a random order drawn from the process's generator.
void shuffle(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
             cudaStream_t s) {
  const Shape& sh = in[0].shape();
  const int64_t rows = sh.ndim() > 0 ? sh[0] : 1;
  if (out[0].size() == 0) return;
  const uint64_t key = random_state().generator();
  const size_t esize = dtype_size(out[0].dtype());
  const void* src = in[0].data();
  DeviceScratch copy(src == out[0].data() ? out[0].nbytes() : 0, s);  // rows read while written
  if (copy.get() != nullptr) {
    NANOMX_CUDA_CALL(
        cudaMemcpyAsync(copy.get(), src, out[0].nbytes(), cudaMemcpyDeviceToDevice, s));
    src = copy.get();
  }
  DeviceScratch scratch(cu::shuffle_scratch_bytes(rows), s);
  check_launch(p, cu::shuffle_rows(src, out[0].data(), rows, out[0].size() / rows, esize, key,
                                   scratch.get(), s));
}

// _random_exponential, _random_gamma, _random_poisson, _random_randint: scalar parameters.
template <cu::Sampler K>
void random_draw(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> out,
                 cudaStream_t s) {
  const auto& sp = p.get<SampleParams>();
  const uint64_t key = random_state().generator();
  check_launch(p, cu::sample(K, fw(out[0]), out[0].size(), 1, {}, {}, sp.a, sp.b, key, s));
}

// _sample_<distribution> (parameter arrays): each parameter element draws size(out) /
// size(params) values into its row. The parameters are checked as the CPU checks them (read
// back: a wait for the stream).
template <cu::Sampler K>
void sample_draw(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                 cudaStream_t s) {
  const int64_t n = in[0].size();
  if (n == 0 || out[0].size() == 0) return;
  std::vector<std::vector<double>> params(in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    params[k] = dispatch_dtype(in[k].dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> host(static_cast<size_t>(n));
      NANOMX_CUDA_CALL(
          cudaMemcpyAsync(host.data(), in[k].data(), in[k].nbytes(), cudaMemcpyDeviceToHost, s));
      NANOMX_CUDA_CALL(cudaStreamSynchronize(s));
      std::vector<double> v(host.size());
      for (size_t i = 0; i < host.size(); ++i) v[i] = to_double(host[i]);
      return v;
    });
  }
  for (int64_t i = 0; i < n; ++i) {
    const double a = params[0][static_cast<size_t>(i)];
    const double b = in.size() > 1 ? params[1][static_cast<size_t>(i)] : 1.0;
    bool ok = true;
    if constexpr (K == cu::Sampler::kUniform) ok = a <= b;
    if constexpr (K == cu::Sampler::kNormal) ok = b > 0;
    if constexpr (K == cu::Sampler::kGamma) ok = a > 0 && b > 0;
    if constexpr (K == cu::Sampler::kExponential) ok = a > 0;
    if constexpr (K == cu::Sampler::kPoisson) ok = a >= 0;
    NANOMX_CHECK(ok) << "sampling: invalid distribution parameter(s) at element " << i << ": " << a
                     << (in.size() > 1 ? ", " + std::to_string(b) : std::string());
  }
  const uint64_t key = random_state().generator();
  const cu::Indices b = in.size() > 1 ? indices_of(p, in[1]) : cu::Indices{};
  check_launch(p, cu::sample(K, fw(out[0]), out[0].size(), out[0].size() / n, indices_of(p, in[0]),
                             b, 0.0, 1.0, key, s));
}

// _sample_multinomial: rows of probabilities over the last axis.
void multinomial(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out,
                 cudaStream_t s) {
  const Shape& d = in[0].shape();
  const int64_t k = d[d.ndim() - 1];
  const int64_t rows = k > 0 ? in[0].size() / k : 0;
  if (rows == 0 || out[0].size() == 0) return;
  const cu::Tensor logp = out.size() > 1 ? fw(out[1]) : cu::Tensor{nullptr, cu::Elem::kFloat32};
  const uint64_t key = random_state().generator();
  check_launch(p, cu::multinomial(indices_of(p, in[0]), rows, k, out[0].size() / rows, fw(out[0]),
                                  logp, key, s));
}

}  // namespace

void add_random_kernels(const AddKernel& add) {
  add("_random_uniform", gpu_kernel<random_sample<true>>);
  add("_random_normal", gpu_kernel<random_sample<false>>);
  constexpr Operands kAnyType = Operands::kAnyType;
  add("_shuffle", gpu_kernel<shuffle, kAnyType>);
  // The samplers: a float (randint: any) output, parameters of any numeric dtype.
  using S = cu::Sampler;
  add("_random_exponential", gpu_kernel<random_draw<S::kExponential>, kAnyType>);
  add("_random_gamma", gpu_kernel<random_draw<S::kGamma>, kAnyType>);
  add("_random_poisson", gpu_kernel<random_draw<S::kPoisson>, kAnyType>);
  add("_random_randint", gpu_kernel<random_draw<S::kRandint>, kAnyType>);
  add("_sample_uniform", gpu_kernel<sample_draw<S::kUniform>, kAnyType>);
  add("_sample_normal", gpu_kernel<sample_draw<S::kNormal>, kAnyType>);
  add("_sample_gamma", gpu_kernel<sample_draw<S::kGamma>, kAnyType>);
  add("_sample_exponential", gpu_kernel<sample_draw<S::kExponential>, kAnyType>);
  add("_sample_poisson", gpu_kernel<sample_draw<S::kPoisson>, kAnyType>);
  add("_sample_multinomial", gpu_kernel<multinomial, kAnyType>);
}

}  // namespace nanomx::ops::cuda_kernels
