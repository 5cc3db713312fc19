// CPU kernels of _random_uniform and _random_normal (definitions in ops/random.cc): the
// process-wide mt19937_64, ordered by the state variable every call writes.
#include <cmath>
#include <numbers>
#include <random>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

double uniform01(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

template <bool kUniform>
void random_kernel(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  const auto& r = p.get<RandomParams>();
  const double a = r.a, b = r.b;
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data_as<T>();
    const int64_t n = out.size();
    auto& g = random_state().generator;
    if constexpr (kUniform) {
      for (int64_t i = 0; i < n; ++i) o[i] = from_double<T>(a + (b - a) * uniform01(g));
    } else {
      for (int64_t i = 0; i < n; i += 2) {  // Box-Muller, two values per pair
        const double u1 = 1.0 - uniform01(g), u2 = uniform01(g);
        const double rr = std::sqrt(-2.0 * std::log(u1));
        o[i] = from_double<T>(a + b * rr * std::cos(2 * std::numbers::pi * u2));
        if (i + 1 < n) o[i + 1] = from_double<T>(a + b * rr * std::sin(2 * std::numbers::pi * u2));
      }
    }
  });
}

}  // namespace

void register_random_kernels() {
  register_kernel("_random_uniform", DeviceType::kCPU, random_kernel<true>);
  register_kernel("_random_normal", DeviceType::kCPU, random_kernel<false>);
}

}  // namespace nanomx::ops::cpu
