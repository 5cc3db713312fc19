// CPU kernels of the reductions (definitions in ops/reduce.cc).
#include <cmath>
#include <limits>

#include "ops/cpu/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

enum class Reducer { kSum, kMax, kMin, kNorm1, kNorm2 };

// Float sums in blocks of lanes (vectorizable: 32 independent lanes keep enough additions in
// flight to run at memory speed), blocks added in double.
template <typename T>
[[gnu::always_inline]] inline double sum_contiguous_body(const T* x, int64_t n) {
  constexpr int kLanes = 32;
  double total = 0;
  for (int64_t start = 0; start < n; start += 4096) {
    const int64_t end = std::min<int64_t>(n, start + 4096);
    T lanes[kLanes] = {};
    int64_t i = start;
    for (; i + kLanes <= end; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) lanes[j] += x[i + j];
    }
    double block = 0;
    for (int j = 0; j < kLanes; ++j) block += lanes[j];
    for (; i < end; ++i) block += x[i];
    total += block;
  }
  return total;
}

// An AVX2 build of the same loop, chosen at the first call from the running CPU (the binary
// runs on any x86-64). Not GCC's target_clones: its ifunc resolver runs before the sanitizers'
// runtimes are initialised and crashes instrumented builds. The lanes and the order of the
// additions are the same in both builds, so are the results.
#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("avx2")]] double sum_contiguous_f32_avx2(const float* x, int64_t n) {
  return sum_contiguous_body(x, n);
}
[[gnu::target("avx2")]] double sum_contiguous_f64_avx2(const double* x, int64_t n) {
  return sum_contiguous_body(x, n);
}
bool cpu_has_avx2() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
}
double sum_contiguous(const float* x, int64_t n) {
  return cpu_has_avx2() ? sum_contiguous_f32_avx2(x, n) : sum_contiguous_body(x, n);
}
double sum_contiguous(const double* x, int64_t n) {
  return cpu_has_avx2() ? sum_contiguous_f64_avx2(x, n) : sum_contiguous_body(x, n);
}
#else
double sum_contiguous(const float* x, int64_t n) { return sum_contiguous_body(x, n); }
double sum_contiguous(const double* x, int64_t n) { return sum_contiguous_body(x, n); }
#endif

template <Reducer R, typename T>
struct Accum {
  // Integer sums wrap modulo 2^64 (then to T's width, as numpy); everything else in double.
  using type = std::conditional_t<R == Reducer::kSum && std::is_integral_v<T>, uint64_t, double>;
  static type init() {
    if constexpr (R == Reducer::kMax) return -std::numeric_limits<double>::infinity();
    if constexpr (R == Reducer::kMin) return std::numeric_limits<double>::infinity();
    return 0;
  }
  static void add(type& acc, T x) {
    if constexpr (R == Reducer::kSum) {
      if constexpr (std::is_integral_v<T>) {
        acc += static_cast<uint64_t>(static_cast<int64_t>(x));
      } else {
        acc += to_double(x);
      }
    } else if constexpr (R == Reducer::kMax) {
      const double v = to_double(x);
      if (!(v <= acc)) acc = v;  // NaN propagates, as numpy
    } else if constexpr (R == Reducer::kMin) {
      const double v = to_double(x);
      if (!(v >= acc)) acc = v;
    } else if constexpr (R == Reducer::kNorm1) {
      acc += std::fabs(to_double(x));
    } else {
      const double v = to_double(x);
      acc += v * v;
    }
  }
  static T finish(type acc) {
    if constexpr (R == Reducer::kSum && std::is_integral_v<T>) {
      return static_cast<T>(acc);
    } else if constexpr (R == Reducer::kNorm2) {
      return from_double<T>(std::sqrt(acc));
    } else {
      return from_double<T>(acc);
    }
  }
};

template <Reducer R, typename T>
void reduce_kernel(const NDArray& in, const NDArray& out, const ReduceSpec& spec) {
  using A = Accum<R, T>;
  using Acc = typename A::type;
  const T* x = in.data_as<T>();
  T* o = out.data_as<T>();
  const int64_t n_out = out.size();
  const int64_t n_in = in.size();
  if (n_out == 0) return;
  if constexpr (R == Reducer::kMax || R == Reducer::kMin) {
    NANOMX_CHECK(n_in > 0) << (R == Reducer::kMax ? "max" : "min") << ": zero-size reduction of "
                           << in.shape() << " has no identity";
  }
  // Fast path: every axis reduced, contiguous float sum.
  if constexpr (R == Reducer::kSum && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    if (n_out == 1) {
      o[0] = static_cast<T>(sum_contiguous(x, n_in));
      return;
    }
  }
  std::vector<Acc> acc(static_cast<size_t>(n_out), A::init());
  // Output strides over the input index space (0 on reduced axes).
  std::vector<int64_t> out_strides = spec.kept.strides();
  for (size_t i = 0; i < out_strides.size(); ++i) {
    if (spec.reduced[i]) out_strides[i] = 0;
  }
  const std::array<std::vector<int64_t>, 2> strides = {in.shape().strides(), out_strides};
  for_each_row<2>(
      in.shape().dims(), strides, {0, 0},
      [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
        const T* px = x + off[0];
        Acc* pa = acc.data() + off[1];
        if (st[1] == 0) {
          Acc a = *pa;
          for (int64_t i = 0; i < len; ++i) A::add(a, px[i]);
          *pa = a;
        } else {
          for (int64_t i = 0; i < len; ++i) A::add(pa[i], px[i]);
        }
      });
  for (int64_t i = 0; i < n_out; ++i) o[i] = A::finish(acc[static_cast<size_t>(i)]);
}

template <Reducer R>
void reduce(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& r = p.get<ReduceParams>();
  const ReduceSpec spec = reduce_spec(p.op(), r.axis, r.keepdims, r.exclude, in[0].shape());
  dispatch_dtype(out[0].dtype(),
                 [&](auto tag) { reduce_kernel<R, decltype(tag)>(in[0], out[0], spec); });
}

void norm(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out) {
  if (p.get<ReduceParams>().ord == 1) {
    reduce<Reducer::kNorm1>(p, in, out);
  } else {
    reduce<Reducer::kNorm2>(p, in, out);
  }
}

}  // namespace

void register_reduce_kernels() {
  register_kernel("sum", DeviceType::kCPU, reduce<Reducer::kSum>);
  register_kernel("max", DeviceType::kCPU, reduce<Reducer::kMax>);
  register_kernel("min", DeviceType::kCPU, reduce<Reducer::kMin>);
  register_kernel("norm", DeviceType::kCPU, norm);
}

}  // namespace nanomx::ops::cpu
