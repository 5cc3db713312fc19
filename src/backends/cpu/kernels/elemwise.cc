// CPU kernels of the elementwise operators (definitions in ops/elemwise.cc).
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "ops/op_params.h"
#include "storage/copy.h"

namespace nanomx::ops::cpu {

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(static_cast<size_t>(out.ndim()), 0);
  const auto in_strides = in.strides();
  for (int i = 0; i < in.ndim(); ++i) {
    const int o = i + out.ndim() - in.ndim();
    s[static_cast<size_t>(o)] = in[i] == 1 && out[o] != 1 ? 0 : in_strides[static_cast<size_t>(i)];
  }
  return s;
}

namespace {

template <typename T>
using Unsigned = std::make_unsigned_t<T>;

// Integer arithmetic wraps like numpy; integer division by zero gives 0 (numpy's result).
struct Add {
  template <typename T>
  static T f(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b));
    } else {
      return a + b;
    }
  }
};
struct Sub {
  template <typename T>
  static T f(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b));
    } else {
      return a - b;
    }
  }
};
struct Mul {
  template <typename T>
  static T f(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Unsigned<T>>(a) * static_cast<Unsigned<T>>(b));
    } else {
      return a * b;
    }
  }
};
struct Div {
  template <typename T>
  static T f(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return Sub::f<T>(0, a);
      }
      return static_cast<T>(a / b);
    } else {
      return a / b;
    }
  }
};

template <typename F>
void binary_kernel(const ParsedParams&, std::span<const NDArray> in,
                   std::span<const NDArray> outs) {
  dispatch_dtype(outs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    broadcast_binary<T>(in[0], in[1], outs[0], [](T a, T b) { return apply<F>(a, b); });
  });
}

// Scalar ops: the scalar is cast to the array's dtype first (as MXNet). `reversed`: s op x.
template <typename F, bool reversed>
void scalar_kernel(const ParsedParams& p, std::span<const NDArray> in,
                   std::span<const NDArray> outs) {
  const double scalar = p.get<ScalarParams>().scalar;
  const NDArray& out = outs[0];
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T s = from_double<T>(scalar);
    const T* x = in[0].data_as<T>();
    T* o = out.data_as<T>();
    scalar_map<F, reversed>(x, o, out.size(), s);
  });
}

enum class Unary { kNegative, kSqrt, kSquare };

template <Unary U>
void unary_kernel(const ParsedParams&, std::span<const NDArray> in, std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].data_as<T>();
    T* o = out.data_as<T>();
    const int64_t n = out.size();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (U == Unary::kNegative) {
        o[i] = apply<Sub>(from_double<T>(0), x[i]);
      } else if constexpr (U == Unary::kSquare) {
        o[i] = apply<Mul>(x[i], x[i]);
      } else if constexpr (std::is_same_v<T, float>) {
        o[i] = std::sqrt(x[i]);
      } else {
        o[i] = from_double<T>(std::sqrt(to_double(x[i])));
      }
    }
  });
}

void clip_kernel(const ParsedParams& p, std::span<const NDArray> in,
                 std::span<const NDArray> outs) {
  const ClipParams& clip = p.get<ClipParams>();
  const double lo = clip.lo, hi = clip.hi;  // named: clang 14 cannot capture bindings
  const NDArray& out = outs[0];
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C a = to_compute(from_double<T>(lo)), b = to_compute(from_double<T>(hi));
    const T* x = in[0].data_as<T>();
    T* o = out.data_as<T>();
    const int64_t n = out.size();
    for (int64_t i = 0; i < n; ++i) {
      const C v = to_compute(x[i]);
      const C r = v > b ? b : (v < a ? a : v);
      if constexpr (std::is_same_v<T, half>) {
        o[i] = half(r);
      } else {
        o[i] = r;
      }
    }
  });
}

// Cast and _copyto: the output's dtype decides.
void convert_kernel(const ParsedParams&, std::span<const NDArray> in,
                    std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  if (in[0].dtype() == out.dtype()) {
    // From a GPU array (_copyto into a CPU one): a device copy (docs/cuda.md).
    if (out.nbytes()) {
      storage::copy_bytes(out.data(), out.ctx(), in[0].data(), in[0].ctx(), out.nbytes());
    }
    return;
  }
  // From a GPU array: its bytes copied here first, then converted.
  std::vector<unsigned char> staged;
  const void* src = in[0].data();
  if (!in[0].ctx().is_cpu()) {
    staged.resize(in[0].nbytes());
    if (!staged.empty()) {
      storage::copy_bytes(staged.data(), Context::cpu(0), in[0].data(), in[0].ctx(), staged.size());
    }
    src = staged.data();
  }
  dispatch_dtype(in[0].dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_dtype(out.dtype(), [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* x = static_cast<const From*>(src);
      To* o = out.data_as<To>();
      const int64_t n = out.size();
      for (int64_t i = 0; i < n; ++i) o[i] = convert<To>(x[i]);
    });
  });
}

// add_n: summed left to right in the dtype's arithmetic (as MXNet's ElementWiseSum).
void add_n_kernel(const ParsedParams&, std::span<const NDArray> in, std::span<const NDArray> outs) {
  const NDArray& out = outs[0];
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data_as<T>();
    const int64_t n = out.size();
    const T* first = in[0].data_as<T>();
    if (o != first) {
      for (int64_t i = 0; i < n; ++i) o[i] = first[i];
    }
    for (size_t k = 1; k < in.size(); ++k) {
      const T* x = in[k].data_as<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = apply<Add>(o[i], x[i]);
    }
  });
}

}  // namespace

void register_elemwise_kernels() {
  constexpr DeviceType kCPU = DeviceType::kCPU;
  register_kernel("broadcast_add", kCPU, binary_kernel<Add>);
  register_kernel("broadcast_sub", kCPU, binary_kernel<Sub>);
  register_kernel("broadcast_mul", kCPU, binary_kernel<Mul>);
  register_kernel("broadcast_div", kCPU, binary_kernel<Div>);
  register_kernel("_plus_scalar", kCPU, scalar_kernel<Add, false>);
  register_kernel("_minus_scalar", kCPU, scalar_kernel<Sub, false>);
  register_kernel("_rminus_scalar", kCPU, scalar_kernel<Sub, true>);
  register_kernel("_mul_scalar", kCPU, scalar_kernel<Mul, false>);
  register_kernel("_div_scalar", kCPU, scalar_kernel<Div, false>);
  register_kernel("_rdiv_scalar", kCPU, scalar_kernel<Div, true>);
  register_kernel("negative", kCPU, unary_kernel<Unary::kNegative>);
  register_kernel("sqrt", kCPU, unary_kernel<Unary::kSqrt>);
  register_kernel("square", kCPU, unary_kernel<Unary::kSquare>);
  register_kernel("clip", kCPU, clip_kernel);
  register_kernel("Cast", kCPU, convert_kernel);
  register_kernel("_copyto", kCPU, convert_kernel);
  register_kernel("add_n", kCPU, add_n_kernel);
  register_kernel("elemwise_add", kCPU, binary_kernel<Add>);
  register_kernel("elemwise_sub", kCPU, binary_kernel<Sub>);
  register_kernel("elemwise_mul", kCPU, binary_kernel<Mul>);
  register_kernel("elemwise_div", kCPU, binary_kernel<Div>);
  register_kernel("_grad_add", kCPU, binary_kernel<Add>);
  register_kernel("_copy", kCPU, convert_kernel);
  register_kernel("_identity_with_attr_like_rhs", kCPU, convert_kernel);
}

}  // namespace nanomx::ops::cpu
