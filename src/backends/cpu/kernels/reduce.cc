// CPU kernels of the reductions (definitions in ops/reduce.cc).
#include <cmath>
#include <limits>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"

namespace nanomx::ops::cpu {
namespace {

enum class Reducer { kSum, kMax, kMin, kNorm1, kNorm2, kProd, kNanSum, kNanProd, kMean };

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
  static constexpr bool kSumLike =
      R == Reducer::kSum || R == Reducer::kNanSum || R == Reducer::kMean;
  static constexpr bool kProdLike = R == Reducer::kProd || R == Reducer::kNanProd;
  static constexpr bool kIntegerExtreme =
      (R == Reducer::kMax || R == Reducer::kMin) && std::is_integral_v<T>;
  // Integer sums and products wrap modulo 2^64 (then to T's width, as numpy); integer max and
  // min in the integer type (in double, int64's beyond 2^53 would merge and INT64_MAX come back
  // as INT64_MIN); everything else in double.
  using type = std::conditional_t<(kSumLike || kProdLike) && std::is_integral_v<T>, uint64_t,
                                  std::conditional_t<kIntegerExtreme, T, double>>;
  static type init() {
    if constexpr (kIntegerExtreme) {
      return R == Reducer::kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    } else if constexpr (R == Reducer::kMax) {
      return -std::numeric_limits<double>::infinity();
    } else if constexpr (R == Reducer::kMin) {
      return std::numeric_limits<double>::infinity();
    } else {
      return kProdLike ? 1 : 0;
    }
  }
  static void add(type& acc, T x) {
    if constexpr (kSumLike || kProdLike) {
      if constexpr (std::is_integral_v<T>) {
        const auto v = static_cast<uint64_t>(static_cast<int64_t>(x));
        if constexpr (kSumLike) {
          acc += v;
        } else {
          acc *= v;
        }
      } else {
        const double v = to_double(x);
        // nansum / nanprod skip NaN.
        if constexpr (R == Reducer::kNanSum || R == Reducer::kNanProd) {
          if (std::isnan(v)) return;
        }
        if constexpr (kSumLike) {
          acc += v;
        } else {
          acc *= v;
        }
      }
    } else if constexpr (kIntegerExtreme) {
      if (R == Reducer::kMax ? x > acc : x < acc) acc = x;
    } else if constexpr (R == Reducer::kMax) {
      // A NaN anywhere is the result, as numpy: it replaces the maximum and nothing replaces it
      // (`!(v <= acc)` alone let a later number replace a NaN: max([nan, 1, 2]) was 2).
      const double v = to_double(x);
      if (!(v <= acc) && acc == acc) acc = v;
    } else if constexpr (R == Reducer::kMin) {
      const double v = to_double(x);
      if (!(v >= acc) && acc == acc) acc = v;
    } else if constexpr (R == Reducer::kNorm1) {
      acc += std::fabs(to_double(x));
    } else {
      const double v = to_double(x);
      acc += v * v;
    }
  }
  // `count`: the elements reduced into one output (mean divides by it).
  static T finish(type acc, int64_t count) {
    if constexpr (R == Reducer::kMean) {
      if constexpr (std::is_integral_v<T>) {
        // MXNet: the integer sum in T's width, divided by the count (truncating).
        const auto sum = static_cast<int64_t>(static_cast<T>(acc));
        return count == 0 ? T(0) : static_cast<T>(sum / count);
      } else {
        return from_double<T>(acc / static_cast<double>(count));
      }
    } else if constexpr (((kSumLike || kProdLike) && std::is_integral_v<T>) || kIntegerExtreme) {
      return static_cast<T>(acc);
    } else if constexpr (R == Reducer::kNorm2) {
      return from_double<T>(std::sqrt(acc));
    } else {
      return from_double<T>(acc);
    }
  }
};

// O: the output's element type; another than T only for norm's out_dtype (the norm in double,
// converted once).
template <Reducer R, typename T, typename O = T>
void reduce_kernel(const NDArray& in, const NDArray& out, const ReduceSpec& spec) {
  using A = Accum<R, T>;
  using Acc = typename A::type;
  static_assert(std::is_same_v<O, T> || R == Reducer::kNorm1 || R == Reducer::kNorm2);
  const T* x = in.data_as<T>();
  O* o = out.data_as<O>();
  const int64_t n_out = out.size();
  const int64_t n_in = in.size();
  if (n_out == 0) return;
  if constexpr (R == Reducer::kMax || R == Reducer::kMin) {
    NANOMX_CHECK(n_in > 0) << (R == Reducer::kMax ? "max" : "min") << ": zero-size reduction of "
                           << in.shape() << " has no identity";
  }
  // Fast path: every axis reduced, contiguous float sum (or mean).
  if constexpr ((R == Reducer::kSum || R == Reducer::kMean) &&
                (std::is_same_v<T, float> || std::is_same_v<T, double>)&&std::is_same_v<O, T>) {
    if (n_out == 1) {
      const double sum = sum_contiguous(x, n_in);
      o[0] = static_cast<T>(R == Reducer::kMean ? sum / static_cast<double>(n_in) : sum);
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
  const int64_t count = n_in / n_out;
  for (int64_t i = 0; i < n_out; ++i) {
    if constexpr (std::is_same_v<O, T>) {
      o[i] = A::finish(acc[static_cast<size_t>(i)], count);
    } else {
      const double a = acc[static_cast<size_t>(i)];
      o[i] = from_double<O>(R == Reducer::kNorm2 ? std::sqrt(a) : a);
    }
  }
}

template <Reducer R>
void reduce(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& r = p.get<ReduceParams>();
  const ReduceSpec spec = reduce_spec(p.op(), r.axis, r.keepdims, r.exclude, in[0].shape());
  dispatch_dtype(out[0].dtype(),
                 [&](auto tag) { reduce_kernel<R, decltype(tag)>(in[0], out[0], spec); });
}

void norm(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& r = p.get<ReduceParams>();
  if (in[0].dtype() == out[0].dtype()) {
    if (r.ord == 1) {
      reduce<Reducer::kNorm1>(p, in, out);
    } else {
      reduce<Reducer::kNorm2>(p, in, out);
    }
    return;
  }
  // out_dtype: read the input's type, write the output's.
  const ReduceSpec spec = reduce_spec(p.op(), r.axis, r.keepdims, r.exclude, in[0].shape());
  dispatch_dtype(in[0].dtype(), [&](auto in_tag) {
    using T = decltype(in_tag);
    dispatch_dtype(out[0].dtype(), [&](auto out_tag) {
      using O = decltype(out_tag);
      if (r.ord == 1) {
        reduce_kernel<Reducer::kNorm1, T, O>(in[0], out[0], spec);
      } else {
        reduce_kernel<Reducer::kNorm2, T, O>(in[0], out[0], spec);
      }
    });
  });
}

// argmax / argmin: the index of the first extreme element (NaN counts as the extreme, as in
// numpy), written in the output's dtype (the input's, as MXNet).
template <bool kMax, typename T>
void arg_reduce_typed(const NDArray& in, const NDArray& out, std::optional<int64_t> axis_attr) {
  const Shape& shape = in.shape();
  // Without an axis, the array flattened: one row of every element.
  const AxisSplit split =
      axis_attr ? split_at_axis(
                      shape, normalize_axis(*axis_attr, shape.ndim(), kMax ? "argmax" : "argmin"))
                : AxisSplit{.len = in.size()};
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  using C = compute_t<T>;
  const T* x = in.data_as<T>();
  T* o = out.data_as<T>();
  // Walks each slab of `len` x `inner` elements in memory order, keeping the best value and its
  // index per inner position. The first NaN wins and then stays (nothing compares above it).
  auto better = [](C v, C cur) {
    bool nan_first = false;
    if constexpr (std::is_floating_point_v<C>) nan_first = std::isnan(v) && !std::isnan(cur);
    return (kMax ? v > cur : v < cur) || nan_first;
  };
  if (inner == 1) {  // contiguous rows: the best so far in registers
    for (int64_t a = 0; a < outer; ++a) {
      const T* row = x + a * len;
      C cur = to_compute(row[0]);
      int64_t at = 0;
      for (int64_t k = 1; k < len; ++k) {
        const C v = to_compute(row[k]);
        if (better(v, cur)) {
          cur = v;
          at = k;
        }
      }
      o[a] = from_double<T>(static_cast<double>(at));
    }
    return;
  }
  std::vector<C> best(static_cast<size_t>(inner));
  std::vector<int64_t> index(static_cast<size_t>(inner));
  for (int64_t a = 0; a < outer; ++a) {
    const T* slab = x + a * len * inner;
    for (int64_t b = 0; b < inner; ++b) {
      best[static_cast<size_t>(b)] = to_compute(slab[b]);
      index[static_cast<size_t>(b)] = 0;
    }
    for (int64_t k = 1; k < len; ++k) {
      const T* row = slab + k * inner;
      for (int64_t b = 0; b < inner; ++b) {
        const C v = to_compute(row[b]);
        C& cur = best[static_cast<size_t>(b)];
        if (better(v, cur)) {
          cur = v;
          index[static_cast<size_t>(b)] = k;
        }
      }
    }
    for (int64_t b = 0; b < inner; ++b) {
      o[a * inner + b] = from_double<T>(static_cast<double>(index[static_cast<size_t>(b)]));
    }
  }
}

template <bool kMax>
void arg_reduce(const ParsedParams& p, std::span<const NDArray> in, std::span<const NDArray> out) {
  const auto& a = p.get<ArgReduceParams>();
  if (out[0].size() == 0) return;
  dispatch_dtype(in[0].dtype(),
                 [&](auto tag) { arg_reduce_typed<kMax, decltype(tag)>(in[0], out[0], a.axis); });
}

}  // namespace

void register_reduce_kernels() {
  register_kernel("sum", DeviceType::kCPU, reduce<Reducer::kSum>);
  register_kernel("max", DeviceType::kCPU, reduce<Reducer::kMax>);
  register_kernel("min", DeviceType::kCPU, reduce<Reducer::kMin>);
  register_kernel("norm", DeviceType::kCPU, norm);
  register_kernel("mean", DeviceType::kCPU, reduce<Reducer::kMean>);
  register_kernel("prod", DeviceType::kCPU, reduce<Reducer::kProd>);
  register_kernel("nansum", DeviceType::kCPU, reduce<Reducer::kNanSum>);
  register_kernel("nanprod", DeviceType::kCPU, reduce<Reducer::kNanProd>);
  register_kernel("argmax", DeviceType::kCPU, arg_reduce<true>);
  register_kernel("argmin", DeviceType::kCPU, arg_reduce<false>);
  register_kernel("argmax_channel", DeviceType::kCPU, arg_reduce<true>);
}

}  // namespace nanomx::ops::cpu
