// CPU kernels of the random operators (definitions in ops/random.cc): the process-wide
// mt19937_64 behind every one, ordered by the state variable every call writes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <random>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

double uniform01(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

template <bool kUniform>
void uniform_normal_kernel(const ParsedParams& p, std::span<const NDArray>,
                           std::span<const NDArray> outs) {
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

// One draw from distribution kind K with parameters a, b.
enum Kind { kUniform, kNormal, kGamma, kExponential, kPoisson, kRandint };

double draw(Kind kind, double a, double b, std::mt19937_64& g) {
  switch (kind) {
    case kUniform:
      return std::uniform_real_distribution<double>(a, b)(g);
    case kNormal:
      return std::normal_distribution<double>(a, b)(g);
    case kGamma:  // beta is the scale
      return std::gamma_distribution<double>(a, b)(g);
    case kExponential:
      return std::exponential_distribution<double>(a)(g);
    case kPoisson:
      return a == 0 ? 0.0 : static_cast<double>(std::poisson_distribution<int64_t>(a)(g));
    case kRandint:
      return static_cast<double>(std::uniform_int_distribution<int64_t>(
          static_cast<int64_t>(a), static_cast<int64_t>(b) - 1)(g));
  }
  return 0;
}

template <Kind K>
void random_kernel(const ParsedParams& p, std::span<const NDArray>, std::span<const NDArray> outs) {
  const auto& s = p.get<SampleParams>();
  dispatch_dtype(outs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = outs[0].data_as<T>();
    auto& g = random_state().generator;
    for (int64_t i = 0; i < outs[0].size(); ++i) o[i] = from_double<T>(draw(K, s.a, s.b, g));
  });
}

// Each parameter element draws size(out) / size(params) values into its row.
template <Kind K>
void sample_kernel(const ParsedParams&, std::span<const NDArray> in,
                   std::span<const NDArray> outs) {
  const int64_t n = in[0].size();
  if (n == 0) return;
  const int64_t per = outs[0].size() / n;
  std::vector<double> a(static_cast<size_t>(n)), b(static_cast<size_t>(n), 1.0);
  for (size_t k = 0; k < in.size(); ++k) {
    dispatch_dtype(in[k].dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* x = in[k].data_as<T>();
      for (int64_t i = 0; i < n; ++i) (k == 0 ? a : b)[static_cast<size_t>(i)] = to_double(x[i]);
    });
  }
  for (int64_t i = 0; i < n; ++i) {
    const double ai = a[static_cast<size_t>(i)], bi = b[static_cast<size_t>(i)];
    bool ok = true;
    if constexpr (K == kUniform) ok = ai <= bi;
    if constexpr (K == kNormal) ok = bi > 0;
    if constexpr (K == kGamma) ok = ai > 0 && bi > 0;
    if constexpr (K == kExponential) ok = ai > 0;
    if constexpr (K == kPoisson) ok = ai >= 0;
    NANOMX_CHECK(ok) << "sampling: invalid distribution parameter(s) at element " << i << ": " << ai
                     << (in.size() > 1 ? ", " + std::to_string(bi) : std::string());
  }
  auto& g = random_state().generator;
  dispatch_dtype(outs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = outs[0].data_as<T>();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < per; ++j) {
        o[i * per + j] =
            from_double<T>(draw(K, a[static_cast<size_t>(i)], b[static_cast<size_t>(i)], g));
      }
    }
  });
}

// Rows of probabilities over the last axis; `per` draws per row by inverting the CDF.
void multinomial_kernel(const ParsedParams&, std::span<const NDArray> in,
                        std::span<const NDArray> outs) {
  const Shape& d = in[0].shape();
  const int64_t k = d[d.ndim() - 1];
  const int64_t rows = k ? in[0].size() / k : 0;
  if (rows == 0 || outs[0].size() == 0) return;
  const int64_t per = outs[0].size() / rows;
  std::vector<double> prob(static_cast<size_t>(in[0].size()));
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].data_as<T>();
    for (size_t i = 0; i < prob.size(); ++i) prob[i] = to_double(x[i]);
  });
  auto& g = random_state().generator;
  std::vector<int64_t> picks(static_cast<size_t>(rows * per));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < per; ++j) {
      const double u = std::uniform_real_distribution<double>(0, 1)(g);
      double acc = 0;
      int64_t c = k - 1;
      for (int64_t i = 0; i < k; ++i) {
        acc += prob[static_cast<size_t>(r * k + i)];
        if (u < acc) {
          c = i;
          break;
        }
      }
      picks[static_cast<size_t>(r * per + j)] = c;
    }
  }
  dispatch_dtype(outs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = outs[0].data_as<T>();
    for (size_t i = 0; i < picks.size(); ++i) o[i] = from_double<T>(static_cast<double>(picks[i]));
  });
  if (outs.size() > 1) {
    dispatch_dtype(outs[1].dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* o = outs[1].data_as<T>();
      for (size_t i = 0; i < picks.size(); ++i) {
        const int64_t r = static_cast<int64_t>(i) / per;
        o[i] = from_double<T>(std::log(prob[static_cast<size_t>(r * k + picks[i])]));
      }
    });
  }
}

// A Fisher-Yates permutation of the rows (axis 0), into a new array.
void shuffle_kernel(const ParsedParams&, std::span<const NDArray> in,
                    std::span<const NDArray> outs) {
  const Shape& s = in[0].shape();
  const int64_t rows = s.ndim() ? s[0] : 1;
  if (outs[0].nbytes() == 0) return;
  const size_t row = outs[0].nbytes() / static_cast<size_t>(rows);
  std::vector<int64_t> perm(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) perm[static_cast<size_t>(i)] = i;
  std::shuffle(perm.begin(), perm.end(), random_state().generator);
  std::vector<unsigned char> copy(
      static_cast<const unsigned char*>(in[0].data()),
      static_cast<const unsigned char*>(in[0].data()) + outs[0].nbytes());
  auto* o = static_cast<unsigned char*>(outs[0].data());
  for (int64_t i = 0; i < rows; ++i) {
    std::memcpy(o + static_cast<size_t>(i) * row,
                copy.data() + static_cast<size_t>(perm[static_cast<size_t>(i)]) * row, row);
  }
}

}  // namespace

void register_random_kernels() {
  register_kernel("_random_uniform", DeviceType::kCPU, uniform_normal_kernel<true>);
  register_kernel("_random_normal", DeviceType::kCPU, uniform_normal_kernel<false>);
  constexpr DeviceType kCPU = DeviceType::kCPU;
  register_kernel("_random_exponential", kCPU, random_kernel<kExponential>);
  register_kernel("_random_gamma", kCPU, random_kernel<kGamma>);
  register_kernel("_random_poisson", kCPU, random_kernel<kPoisson>);
  register_kernel("_random_randint", kCPU, random_kernel<kRandint>);
  register_kernel("_sample_uniform", kCPU, sample_kernel<kUniform>);
  register_kernel("_sample_normal", kCPU, sample_kernel<kNormal>);
  register_kernel("_sample_gamma", kCPU, sample_kernel<kGamma>);
  register_kernel("_sample_exponential", kCPU, sample_kernel<kExponential>);
  register_kernel("_sample_poisson", kCPU, sample_kernel<kPoisson>);
  register_kernel("_sample_multinomial", kCPU, multinomial_kernel);
  register_kernel("_shuffle", kCPU, shuffle_kernel);
}

}  // namespace nanomx::ops::cpu
