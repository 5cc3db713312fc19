// Indexing operators: pick (choose_element_0index), fill_element_0index, _onehot_encode.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "ops/cpu/kernels.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

// An index element as an integer (floats truncate toward zero).
template <typename T>
int64_t index_value(T v) {
  const double d = to_double(v);
  return std::isfinite(d) ? static_cast<int64_t>(d) : INT64_MIN;
}

Plan plan_pick(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const Shape &data = in[0].shape(), &index = in[1].shape();
  NANOMX_CHECK(data.ndim() >= 1) << "pick: 'data' of shape " << data << " has no axis";
  const int axis = normalize_axis(p.get_int("axis", -1), data.ndim(), "pick");
  const bool keepdims = p.get_bool("keepdims", false);
  const std::string mode = p.get_string("mode", "clip");
  NANOMX_CHECK(mode == "clip" || mode == "wrap")
      << "pick: attribute 'mode' = '" << mode << "' (valid: clip, wrap)";
  std::vector<int64_t> removed, kept;
  for (int i = 0; i < data.ndim(); ++i) {
    if (i != axis) removed.push_back(data[i]);
    kept.push_back(i == axis ? 1 : data[i]);
  }
  NANOMX_CHECK(index == Shape(removed) || index == Shape(kept))
      << "pick: 'index' has shape " << index << " but 'data' " << data << " along axis " << axis
      << " needs " << Shape(removed) << " (or " << Shape(kept) << ")";
  Plan plan;
  plan.shape = Shape(keepdims ? kept : removed);
  plan.dtype = in[0].dtype();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= data[i];
  for (int i = axis + 1; i < data.ndim(); ++i) inner *= data[i];
  const int64_t len = data[axis];
  const bool wrap = mode == "wrap";
  plan.kernel = [outer, inner, len, wrap](std::span<const NDArray> in, const NDArray& out) {
    if (out.size() == 0) return;
    NANOMX_CHECK(len > 0) << "pick: cannot pick from an empty axis";
    dispatch_dtype(in[1].dtype(), [&](auto itag) {
      using I = decltype(itag);
      const I* idx = in[1].data_as<I>();
      cpu::dispatch_size(dtype_size(out.dtype()), [&](auto tag) {
        using E = decltype(tag);
        const E* x = static_cast<const E*>(in[0].data());
        E* o = static_cast<E*>(out.data());
        for (int64_t a = 0; a < outer; ++a) {
          for (int64_t i = 0; i < inner; ++i) {
            int64_t j = index_value(idx[a * inner + i]);
            j = wrap ? ((j % len) + len) % len : std::clamp<int64_t>(j, 0, len - 1);
            o[a * inner + i] = x[(a * len + j) * inner + i];
          }
        }
      });
    });
  };
  return plan;
}

Plan plan_fill_element(const Params&, std::span<const NDArray> in, const NDArray*) {
  const Shape &lhs = in[0].shape(), &mhs = in[1].shape(), &rhs = in[2].shape();
  NANOMX_CHECK(lhs.ndim() == 2 && mhs.ndim() == 1 && rhs.ndim() == 1 && mhs[0] == lhs[0] &&
               rhs[0] == lhs[0])
      << "fill_element_0index: expected 'lhs' (N, M), 'mhs' (N,) and 'rhs' (N,), got 'lhs' " << lhs
      << ", 'mhs' " << mhs << ", 'rhs' " << rhs;
  NANOMX_CHECK(in[1].dtype() == in[0].dtype())
      << "fill_element_0index: 'mhs' has dtype " << dtype_name(in[1].dtype()) << " but 'lhs' has "
      << dtype_name(in[0].dtype());
  Plan plan;
  plan.shape = lhs;
  plan.dtype = in[0].dtype();
  plan.kernel = [](std::span<const NDArray> in, const NDArray& out) {
    const int64_t rows = in[0].shape()[0], cols = in[0].shape()[1];
    if (out.data() != in[0].data() && out.nbytes()) {
      std::memmove(out.data(), in[0].data(), out.nbytes());
    }
    dispatch_dtype(in[2].dtype(), [&](auto itag) {
      using I = decltype(itag);
      const I* idx = in[2].data_as<I>();
      cpu::dispatch_size(dtype_size(out.dtype()), [&](auto tag) {
        using E = decltype(tag);
        const E* val = static_cast<const E*>(in[1].data());
        E* o = static_cast<E*>(out.data());
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t j = index_value(idx[i]);
          NANOMX_CHECK(0 <= j && j < cols)
              << "fill_element_0index: index " << to_double(idx[i]) << " in row " << i
              << " out of range [0, " << cols << ")";
          o[i * cols + j] = val[i];
        }
      });
    });
  };
  return plan;
}

Plan plan_onehot(const Params&, std::span<const NDArray> in, const NDArray*) {
  const Shape &idx = in[0].shape(), &out = in[1].shape();
  NANOMX_CHECK(idx.ndim() == 1 && out.ndim() == 2 && idx[0] == out[0])
      << "_onehot_encode: expected 'lhs' (indices) of shape (N,) and 'rhs' (out) of shape (N, M), "
         "got "
      << idx << " and " << out;
  std::fprintf(stderr, "The operator onehot_encode is deprecated; use one_hot instead.\n");
  Plan plan;
  plan.shape = out;
  plan.dtype = in[1].dtype();
  plan.kernel = [](std::span<const NDArray> in, const NDArray& out) {
    const int64_t rows = out.shape()[0], cols = out.shape()[1];
    dispatch_dtype(in[0].dtype(), [&](auto itag) {
      using I = decltype(itag);
      const I* idx = in[0].data_as<I>();
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t j = index_value(idx[i]);
        NANOMX_CHECK(0 <= j && j < cols) << "_onehot_encode: index " << to_double(idx[i])
                                         << " in row " << i << " out of range [0, " << cols << ")";
      }
      dispatch_dtype(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* o = out.data_as<T>();
        const T zero = from_double<T>(0), one = from_double<T>(1);
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t j = index_value(idx[i]);
          for (int64_t c = 0; c < cols; ++c) o[i * cols + c] = c == j ? one : zero;
        }
      });
    });
  };
  return plan;
}

}  // namespace

void register_index_ops(Registry& r) {
  r.add({.name = "pick",
         .inputs = {"data", "index"},
         .keys = {"axis", "keepdims", "mode"},
         .plan = plan_pick},
        {"choose_element_0index"});
  r.add({.name = "fill_element_0index",
         .inputs = {"lhs", "mhs", "rhs"},
         .keys = {},
         .plan = plan_fill_element,
         .engine_name = "TernaryOp"});
  r.add({.name = "_onehot_encode",
         .inputs = {"lhs", "rhs"},
         .keys = {},
         .plan = plan_onehot,
         .engine_name = "BinaryOp",
         .inplace_ok = true});
}

}  // namespace nanomx::ops
