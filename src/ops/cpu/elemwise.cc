// Elementwise operators: broadcast arithmetic, scalar arithmetic, unary math, clip, casts, fills.
#include <cmath>
#include <cstring>

#include "ops/cpu/kernels.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

using cpu::for_each_row;

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

// Applies F in T's compute type (float for half).
template <typename F, typename T>
inline T apply(T a, T b) {
  if constexpr (std::is_same_v<T, half>) {
    return half(F::f(static_cast<float>(a), static_cast<float>(b)));
  } else {
    return F::f(a, b);
  }
}

Shape broadcast_shape(const std::string& op, const Shape& a, const Shape& b) {
  const int nd = std::max(a.ndim(), b.ndim());
  Shape out;
  for (int i = 0; i < nd; ++i) {
    const int ia = i - (nd - a.ndim()), ib = i - (nd - b.ndim());
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    NANOMX_CHECK(da == db || da == 1 || db == 1)
        << op << ": shapes of 'lhs' " << a << " and 'rhs' " << b
        << " cannot be broadcast together (axis " << i << ": " << da << " vs " << db << ")";
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

// Strides of `in` (right-aligned) over the broadcast output shape; 0 on broadcast axes.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(static_cast<size_t>(out.ndim()), 0);
  const auto in_strides = in.strides();
  for (int i = 0; i < in.ndim(); ++i) {
    const int o = i + out.ndim() - in.ndim();
    s[static_cast<size_t>(o)] = in[i] == 1 && out[o] != 1 ? 0 : in_strides[static_cast<size_t>(i)];
  }
  return s;
}

template <typename F>
Plan plan_binary(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const NDArray &a = in[0], &b = in[1];
  NANOMX_CHECK(a.dtype() == b.dtype())
      << p.op() << ": 'lhs' has dtype " << dtype_name(a.dtype()) << " but 'rhs' has "
      << dtype_name(b.dtype()) << " (shapes " << a.shape() << ", " << b.shape() << ")";
  Plan plan;
  plan.shape = broadcast_shape(p.op(), a.shape(), b.shape());
  plan.dtype = a.dtype();
  plan.kernel = [](std::span<const NDArray> in, const NDArray& out) {
    dispatch_dtype(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* x = in[0].data_as<T>();
      const T* y = in[1].data_as<T>();
      T* o = out.data_as<T>();
      if (in[0].shape() == out.shape() && in[1].shape() == out.shape()) {
        const int64_t n = out.size();
        for (int64_t i = 0; i < n; ++i) o[i] = apply<F>(x[i], y[i]);
        return;
      }
      const std::array<std::vector<int64_t>, 3> strides = {
          out.shape().strides(), broadcast_strides(in[0].shape(), out.shape()),
          broadcast_strides(in[1].shape(), out.shape())};
      for_each_row<3>(
          out.shape().dims(), strides, {0, 0, 0},
          [&](const std::array<int64_t, 3>& off, int64_t len, const std::array<int64_t, 3>& st) {
            T* po = o + off[0];
            const T* px = x + off[1];
            const T* py = y + off[2];
            for (int64_t i = 0; i < len; ++i) {
              po[i] = apply<F>(px[i * st[1]], py[i * st[2]]);
            }
          });
    });
  };
  return plan;
}

// Scalar ops: the scalar is cast to the array's dtype first (as MXNet). `reversed`: s op x.
template <typename F, bool reversed>
Plan plan_scalar(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const double scalar = p.get_float("scalar");
  Plan plan;
  plan.shape = in[0].shape();
  plan.dtype = in[0].dtype();
  plan.kernel = [scalar](std::span<const NDArray> in, const NDArray& out) {
    dispatch_dtype(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T s = from_double<T>(scalar);
      const T* x = in[0].data_as<T>();
      T* o = out.data_as<T>();
      const int64_t n = out.size();
      for (int64_t i = 0; i < n; ++i) o[i] = reversed ? apply<F>(s, x[i]) : apply<F>(x[i], s);
    });
  };
  return plan;
}

enum class Unary { kNegative, kSqrt, kSquare };

template <Unary U>
Plan plan_unary(const Params&, std::span<const NDArray> in, const NDArray*) {
  Plan plan;
  plan.shape = in[0].shape();
  plan.dtype = in[0].dtype();
  plan.kernel = [](std::span<const NDArray> in, const NDArray& out) {
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
  };
  return plan;
}

Plan plan_clip(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const double lo = p.get_float("a_min"), hi = p.get_float("a_max");
  NANOMX_CHECK(!(lo > hi)) << "clip: a_min (" << lo << ") is greater than a_max (" << hi << ")";
  Plan plan;
  plan.shape = in[0].shape();
  plan.dtype = in[0].dtype();
  plan.kernel = [lo, hi](std::span<const NDArray> in, const NDArray& out) {
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
  };
  return plan;
}

Kernel convert_kernel() {
  return [](std::span<const NDArray> in, const NDArray& out) {
    if (in[0].dtype() == out.dtype()) {
      if (out.nbytes()) std::memmove(out.data(), in[0].data(), out.nbytes());
      return;
    }
    dispatch_dtype(in[0].dtype(), [&](auto from_tag) {
      using From = decltype(from_tag);
      dispatch_dtype(out.dtype(), [&](auto to_tag) {
        using To = decltype(to_tag);
        const From* x = in[0].data_as<From>();
        To* o = out.data_as<To>();
        const int64_t n = out.size();
        for (int64_t i = 0; i < n; ++i) o[i] = cpu::convert<To>(x[i]);
      });
    });
  };
}

Plan plan_cast(const Params& p, std::span<const NDArray> in, const NDArray*) {
  NANOMX_CHECK(p.has("dtype")) << "Cast: required attribute 'dtype' is missing";
  Plan plan;
  plan.shape = in[0].shape();
  plan.dtype = p.get_dtype("dtype", in[0].dtype());
  plan.kernel = convert_kernel();
  return plan;
}

// _copyto: into the given output (converting the dtype) or a new array of the same dtype.
Plan plan_copyto(const Params&, std::span<const NDArray> in, const NDArray* out) {
  Plan plan;
  plan.shape = in[0].shape();
  plan.dtype = out ? out->dtype() : in[0].dtype();
  if (out) {
    NANOMX_CHECK(out->shape() == in[0].shape())
        << "_copyto: source shape " << in[0].shape() << " does not match destination shape "
        << out->shape();
  }
  plan.kernel = convert_kernel();
  return plan;
}

// Without a 'shape' attribute, an output array given by the caller sets shape and dtype.
Plan plan_fill(const Params& p, double value, const NDArray* out) {
  Plan plan;
  plan.shape = p.has("shape") || !out ? p.get_shape("shape") : out->shape();
  plan.dtype = p.get_dtype("dtype", out && !p.has("shape") ? out->dtype() : DType::kFloat32);
  plan.ctx = parse_ctx(p);
  plan.kernel = [value](std::span<const NDArray>, const NDArray& out) {
    dispatch_dtype(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T v = from_double<T>(value);
      T* o = out.data_as<T>();
      const int64_t n = out.size();
      for (int64_t i = 0; i < n; ++i) o[i] = v;
    });
  };
  return plan;
}

}  // namespace

void register_elemwise_ops(Registry& r) {
  auto binary = [&](const char* name, PlanFn fn) {
    r.add({.name = name, .inputs = {"lhs", "rhs"}, .keys = {}, .plan = fn, .inplace_ok = true});
  };
  binary("broadcast_add", plan_binary<Add>);
  binary("broadcast_sub", plan_binary<Sub>);
  binary("broadcast_mul", plan_binary<Mul>);
  binary("broadcast_div", plan_binary<Div>);

  auto scalar = [&](const char* name, PlanFn fn) {
    r.add({.name = name, .inputs = {"data"}, .keys = {"scalar"}, .plan = fn, .inplace_ok = true});
  };
  scalar("_plus_scalar", plan_scalar<Add, false>);
  scalar("_minus_scalar", plan_scalar<Sub, false>);
  scalar("_rminus_scalar", plan_scalar<Sub, true>);
  scalar("_mul_scalar", plan_scalar<Mul, false>);
  scalar("_div_scalar", plan_scalar<Div, false>);
  scalar("_rdiv_scalar", plan_scalar<Div, true>);

  auto unary = [&](const char* name, PlanFn fn) {
    r.add({.name = name, .inputs = {"data"}, .keys = {}, .plan = fn, .inplace_ok = true});
  };
  unary("negative", plan_unary<Unary::kNegative>);
  unary("sqrt", plan_unary<Unary::kSqrt>);
  unary("square", plan_unary<Unary::kSquare>);
  r.add({.name = "clip",
         .inputs = {"data"},
         .keys = {"a_min", "a_max"},
         .plan = plan_clip,
         .inplace_ok = true});
  r.add({.name = "Cast", .inputs = {"data"}, .keys = {"dtype"}, .plan = plan_cast}, {"cast"});
  r.add({.name = "_copyto", .inputs = {"data"}, .keys = {}, .plan = plan_copyto});
  r.add({.name = "_full",
         .inputs = {},
         .keys = {"shape", "dtype", "value", "ctx"},
         .plan = [](const Params& p, std::span<const NDArray>, const NDArray* out) {
           return plan_fill(p, p.get_float("value"), out);
         }});
  r.add({.name = "_zeros",
         .inputs = {},
         .keys = {"shape", "dtype", "ctx"},
         .plan = [](const Params& p, std::span<const NDArray>, const NDArray* out) {
           return plan_fill(p, 0.0, out);
         }});
  r.add({.name = "_ones",
         .inputs = {},
         .keys = {"shape", "dtype", "ctx"},
         .plan = [](const Params& p, std::span<const NDArray>, const NDArray* out) {
           return plan_fill(p, 1.0, out);
         }});
}

}  // namespace nanomx::ops
