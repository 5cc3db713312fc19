// Operators that move elements: slice (copies), slice_axis, _slice_assign(_scalar), broadcast_to,
// transpose, reverse, Reshape.
#include <algorithm>
#include <cstring>

#include "ops/cpu/kernels.h"
#include "ops/registry.h"

namespace nanomx::ops {
// MXNet's Reshape codes: 0 copy a dim, -1 infer, -2 copy the rest, -3 merge two, -4 split one.
Shape infer_reshape(const std::vector<int64_t>& spec_in, const Shape& src_shape, bool reverse) {
  std::vector<int64_t> spec = spec_in, src = src_shape.to_vector();
  if (reverse) {
    std::reverse(spec.begin(), spec.end());
    std::reverse(src.begin(), src.end());
  }
  auto fail = [&](const std::string& why) {
    NANOMX_THROW() << "Reshape: cannot reshape 'data' of shape " << src_shape << " with shape "
                   << Shape(spec_in) << ": " << why;
  };
  std::vector<int64_t> out;
  int infer = -1;
  size_t i = 0;
  auto next_src = [&]() -> int64_t {
    if (i >= src.size()) fail("more input dimensions referenced than exist");
    return src[i++];
  };
  for (size_t j = 0; j < spec.size(); ++j) {
    const int64_t v = spec[j];
    if (v > 0) {
      out.push_back(v);
      ++i;
    } else if (v == 0) {
      out.push_back(next_src());
    } else if (v == -1) {
      if (infer >= 0) fail("more than one -1");
      infer = static_cast<int>(out.size());
      out.push_back(1);
      ++i;
    } else if (v == -2) {
      while (i < src.size()) out.push_back(src[i++]);
    } else if (v == -3) {
      const int64_t a = next_src();
      out.push_back(a * next_src());
    } else if (v == -4) {
      if (j + 2 >= spec.size()) fail("-4 needs two following values");
      const int64_t d = next_src();
      int64_t d1 = spec[j + 1], d2 = spec[j + 2];
      j += 2;
      if (reverse) std::swap(d1, d2);
      if (d1 == -1 && d2 > 0) d1 = d % d2 == 0 ? d / d2 : -2;
      if (d2 == -1 && d1 > 0) d2 = d % d1 == 0 ? d / d1 : -2;
      if (d1 < 0 || d2 < 0 || d1 * d2 != d) fail("-4 split does not match the dimension");
      if (reverse) std::swap(d1, d2);
      out.push_back(d1);
      out.push_back(d2);
    } else {
      fail("invalid value " + std::to_string(v));
    }
  }
  if (infer >= 0) {
    int64_t known = 1;
    for (size_t k = 0; k < out.size(); ++k) {
      if (static_cast<int>(k) != infer) known *= out[k];
    }
    const int64_t total = src_shape.size();
    if (known == 0 || total % known != 0) fail("the size cannot be inferred");
    out[static_cast<size_t>(infer)] = total / known;
  }
  if (reverse) std::reverse(out.begin(), out.end());
  Shape result(out);
  if (result.size() != src_shape.size()) {
    fail("the result " + result.str() + " has " + std::to_string(result.size()) +
         " elements, not " + std::to_string(src_shape.size()));
  }
  return result;
}

namespace {

using cpu::for_each_row;

// A strided region of an array: per axis the first index, the step and the count.
struct Region {
  std::vector<int64_t> begin, step, count;
  Shape shape() const { return Shape(count); }
};

Region full_region(const Shape& shape) {
  Region r;
  for (int64_t d : shape.dims()) {
    r.begin.push_back(0);
    r.step.push_back(1);
    r.count.push_back(d);
  }
  return r;
}

// Python slicing on one axis; nullopt bounds mean the full range in the step's direction.
void slice_axis_range(const std::string& op, int axis, int64_t dim, std::optional<int64_t> b,
                      std::optional<int64_t> e, int64_t step, Region& r) {
  NANOMX_CHECK(step != 0) << op << ": step is 0 on axis " << axis;
  int64_t begin, end, count;
  if (step > 0) {
    begin = b ? (*b < 0 ? *b + dim : *b) : 0;
    end = e ? (*e < 0 ? *e + dim : *e) : dim;
    begin = std::clamp<int64_t>(begin, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    count = end > begin ? (end - begin + step - 1) / step : 0;
  } else {
    begin = b ? (*b < 0 ? *b + dim : *b) : dim - 1;
    end = e ? (*e < 0 ? *e + dim : *e) : -1;
    begin = std::clamp<int64_t>(begin, -1, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    count = begin > end ? (begin - end + (-step) - 1) / (-step) : 0;
  }
  r.begin[static_cast<size_t>(axis)] = count ? begin : 0;
  r.step[static_cast<size_t>(axis)] = step;
  r.count[static_cast<size_t>(axis)] = count;
}

// begin / end / step attributes (MXNet's slice): tuples no longer than ndim, None = full range.
Region slice_region(const Params& p, const Shape& shape, const char* arg) {
  auto begin = p.get_tuple("begin");
  auto end = p.get_tuple("end");
  NANOMX_CHECK(begin && end) << p.op() << ": attributes 'begin' and 'end' are required";
  auto step = p.get_tuple("step");
  NANOMX_CHECK(begin->size() == end->size())
      << p.op() << ": 'begin' has " << begin->size() << " entries but 'end' has " << end->size();
  NANOMX_CHECK(!step || step->empty() || step->size() == begin->size())
      << p.op() << ": 'step' has " << step->size() << " entries but 'begin' has " << begin->size();
  NANOMX_CHECK(static_cast<int>(begin->size()) <= shape.ndim())
      << p.op() << ": " << begin->size() << " slice entries for '" << arg << "' of shape " << shape;
  Region r = full_region(shape);
  for (size_t i = 0; i < begin->size(); ++i) {
    const int64_t st = step && !step->empty() && (*step)[i] ? *(*step)[i] : 1;
    slice_axis_range(p.op(), static_cast<int>(i), shape[static_cast<int>(i)], (*begin)[i],
                     (*end)[i], st, r);
  }
  return r;
}

// Element strides of `shape` walked through `region`, and the offset of its first element.
std::pair<std::vector<int64_t>, int64_t> region_strides(const Shape& shape, const Region& r) {
  auto strides = shape.strides();
  int64_t base = 0;
  for (size_t i = 0; i < strides.size(); ++i) {
    base += r.begin[i] * strides[i];
    strides[i] *= r.step[i];
  }
  return {strides, base};
}

// out (contiguous, shape `out_shape`) = src walked with src_strides from src_base.
void gather(const NDArray& src, const std::vector<int64_t>& src_strides, int64_t src_base,
            const NDArray& out) {
  cpu::dispatch_size(dtype_size(out.dtype()), [&](auto tag) {
    using E = decltype(tag);
    const E* s = static_cast<const E*>(src.data());
    E* o = static_cast<E*>(out.data());
    const std::array<std::vector<int64_t>, 2> strides = {out.shape().strides(), src_strides};
    for_each_row<2>(
        out.shape().dims(), strides, {0, src_base},
        [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
          E* po = o + off[0];
          const E* ps = s + off[1];
          if (st[1] == 1) {
            std::memcpy(po, ps, static_cast<size_t>(len) * sizeof(E));
          } else {
            for (int64_t i = 0; i < len; ++i) po[i] = ps[i * st[1]];
          }
        });
  });
}

// A plan whose kernel copies the input, read through `strides` from `base` (elements), into
// a fresh output of `shape`: slices, broadcast_to, transpose and reverse are all this.
Plan gather_plan(const NDArray& input, Shape shape, std::vector<int64_t> strides, int64_t base) {
  Plan plan;
  plan.shape = std::move(shape);
  plan.dtype = input.dtype();
  plan.kernel = [strides = std::move(strides), base](std::span<const NDArray> in,
                                                     const NDArray& out) {
    gather(in[0], strides, base, out);
  };
  return plan;
}

Plan plan_slice(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const Region r = slice_region(p, in[0].shape(), "data");
  auto [strides, base] = region_strides(in[0].shape(), r);
  return gather_plan(in[0], r.shape(), std::move(strides), base);
}

Plan plan_slice_axis(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const Shape& shape = in[0].shape();
  const int axis = normalize_axis(p.get_int("axis"), shape.ndim(), "slice_axis");
  auto begin = p.get_tuple("begin");
  auto end = p.get_tuple("end");
  NANOMX_CHECK(begin && begin->size() == 1 && (*begin)[0])
      << "slice_axis: attribute 'begin' must be an integer";
  NANOMX_CHECK(!end || end->size() == 1)
      << "slice_axis: attribute 'end' must be an integer or None";
  Region r = full_region(shape);
  slice_axis_range("slice_axis", axis, shape[axis], (*begin)[0], end ? (*end)[0] : std::nullopt, 1,
                   r);
  auto [strides, base] = region_strides(in[0].shape(), r);
  return gather_plan(in[0], r.shape(), std::move(strides), base);
}

void copy_if_distinct(const NDArray& src, const NDArray& out) {
  if (out.data() != src.data() && out.nbytes()) std::memmove(out.data(), src.data(), out.nbytes());
}

// _slice_assign(lhs, rhs, begin, end, step): a copy of lhs (or lhs itself, with out=lhs) whose
// region is replaced by rhs (exactly the region's shape).
Plan plan_slice_assign(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const Region r = slice_region(p, in[0].shape(), "lhs");
  NANOMX_CHECK(in[1].shape() == r.shape())
      << "_slice_assign: 'rhs' has shape " << in[1].shape() << " but the slice of 'lhs' "
      << in[0].shape() << " has shape " << r.shape();
  NANOMX_CHECK(in[1].dtype() == in[0].dtype())
      << "_slice_assign: 'rhs' has dtype " << dtype_name(in[1].dtype()) << " but 'lhs' has "
      << dtype_name(in[0].dtype());
  Plan plan;
  plan.shape = in[0].shape();
  plan.dtype = in[0].dtype();
  plan.kernel = [r](std::span<const NDArray> in, const NDArray& out) {
    copy_if_distinct(in[0], out);
    auto [strides, base] = region_strides(out.shape(), r);
    // Named captures: clang 14 cannot capture a structured binding implicitly.
    cpu::dispatch_size(dtype_size(out.dtype()), [&, &strides = strides, base = base](auto tag) {
      using E = decltype(tag);
      E* o = static_cast<E*>(out.data());
      const E* s = static_cast<const E*>(in[1].data());
      const std::array<std::vector<int64_t>, 2> st2 = {strides, in[1].shape().strides()};
      for_each_row<2>(
          r.count, st2, {base, 0},
          [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
            for (int64_t i = 0; i < len; ++i) o[off[0] + i * st[0]] = s[off[1] + i];
          });
    });
  };
  return plan;
}

Plan plan_slice_assign_scalar(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const Region r = slice_region(p, in[0].shape(), "data");
  const double scalar = p.get_float("scalar", 0.0);
  Plan plan;
  plan.shape = in[0].shape();
  plan.dtype = in[0].dtype();
  plan.kernel = [r, scalar](std::span<const NDArray> in, const NDArray& out) {
    copy_if_distinct(in[0], out);
    auto [strides, base] = region_strides(out.shape(), r);
    dispatch_dtype(out.dtype(), [&, &strides = strides, base = base](auto tag) {
      using T = decltype(tag);
      const T v = from_double<T>(scalar);
      T* o = out.data_as<T>();
      const std::array<std::vector<int64_t>, 1> st1 = {strides};
      for_each_row<1>(
          r.count, st1, {base},
          [&](const std::array<int64_t, 1>& off, int64_t len, const std::array<int64_t, 1>& st) {
            for (int64_t i = 0; i < len; ++i) o[off[0] + i * st[0]] = v;
          });
    });
  };
  return plan;
}

Plan plan_broadcast_to(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const Shape& src = in[0].shape();
  auto target = p.get_ints("shape");
  NANOMX_CHECK(target) << "broadcast_to: required attribute 'shape' is missing";
  NANOMX_CHECK(static_cast<int>(target->size()) == src.ndim())
      << "broadcast_to: cannot broadcast 'data' of shape " << src << " to " << Shape(*target)
      << ": the number of dimensions differs";
  Shape out(*target);
  std::vector<int64_t> strides = src.strides();
  for (int i = 0; i < src.ndim(); ++i) {
    if (out[i] == 0) out[i] = src[i];  // 0 keeps the input's dimension
    NANOMX_CHECK(out[i] == src[i] || src[i] == 1)
        << "broadcast_to: cannot broadcast 'data' of shape " << src << " to " << Shape(*target)
        << " (axis " << i << ": " << src[i] << " is neither " << out[i] << " nor 1)";
    NANOMX_CHECK(out[i] >= 0) << "broadcast_to: negative dimension in " << Shape(*target);
    if (src[i] != out[i]) strides[static_cast<size_t>(i)] = 0;
  }
  return gather_plan(in[0], out, std::move(strides), 0);
}

Plan plan_transpose(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const Shape& src = in[0].shape();
  const int nd = src.ndim();
  std::vector<int64_t> axes;
  auto given = p.get_ints("axes");
  if (!given || given->empty()) {
    for (int i = nd - 1; i >= 0; --i) axes.push_back(i);
  } else {
    NANOMX_CHECK(static_cast<int>(given->size()) == nd)
        << "transpose: 'axes' " << Shape(*given) << " does not match 'data' of shape " << src;
    std::vector<bool> seen(static_cast<size_t>(nd), false);
    for (int64_t a : *given) {
      const int n = normalize_axis(a, nd, "transpose");
      NANOMX_CHECK(!seen[static_cast<size_t>(n)])
          << "transpose: 'axes' " << Shape(*given) << " is not a permutation";
      seen[static_cast<size_t>(n)] = true;
      axes.push_back(n);
    }
  }
  const auto in_strides = src.strides();
  std::vector<int64_t> strides, dims;
  for (int64_t a : axes) {
    dims.push_back(src[static_cast<int>(a)]);
    strides.push_back(in_strides[static_cast<size_t>(a)]);
  }
  return gather_plan(in[0], Shape(dims), std::move(strides), 0);
}

Plan plan_reverse(const Params& p, std::span<const NDArray> in, const NDArray*) {
  const Shape& src = in[0].shape();
  auto axes = p.get_ints("axis");
  NANOMX_CHECK(axes) << "reverse: required attribute 'axis' is missing";
  std::vector<int64_t> strides = src.strides();
  int64_t base = 0;
  std::vector<bool> seen(static_cast<size_t>(src.ndim()), false);
  for (int64_t a : *axes) {
    const int n = normalize_axis(a, src.ndim(), "reverse");
    NANOMX_CHECK(!seen[static_cast<size_t>(n)]) << "reverse: axis " << a << " given twice";
    seen[static_cast<size_t>(n)] = true;
    if (src[n] > 0) base += (src[n] - 1) * strides[static_cast<size_t>(n)];
    strides[static_cast<size_t>(n)] = -strides[static_cast<size_t>(n)];
  }
  return gather_plan(in[0], src, std::move(strides), base);
}

Plan plan_reshape(const Params& p, std::span<const NDArray> in, const NDArray*) {
  auto spec = p.get_ints("shape");
  NANOMX_CHECK(spec) << "Reshape: required attribute 'shape' is missing";
  Plan plan;
  plan.shape = infer_reshape(*spec, in[0].shape(), p.get_bool("reverse", false));
  plan.dtype = in[0].dtype();
  plan.kernel = [](std::span<const NDArray> in, const NDArray& out) {
    copy_if_distinct(in[0], out);
  };
  return plan;
}

}  // namespace

void register_layout_ops(Registry& r) {
  r.add({.name = "slice", .inputs = {"data"}, .keys = {"begin", "end", "step"}, .plan = plan_slice},
        {"crop"});
  r.add({.name = "slice_axis",
         .inputs = {"data"},
         .keys = {"axis", "begin", "end"},
         .plan = plan_slice_axis});
  r.add({.name = "_slice_assign",
         .inputs = {"lhs", "rhs"},
         .keys = {"begin", "end", "step"},
         .plan = plan_slice_assign,
         .engine_name = {},
         .inplace_ok = true},
        {"_crop_assign"});
  r.add({.name = "_slice_assign_scalar",
         .inputs = {"data"},
         .keys = {"scalar", "begin", "end", "step"},
         .plan = plan_slice_assign_scalar,
         .engine_name = {},
         .inplace_ok = true},
        {"_crop_assign_scalar"});
  r.add({.name = "broadcast_to", .inputs = {"data"}, .keys = {"shape"}, .plan = plan_broadcast_to});
  r.add({.name = "transpose", .inputs = {"data"}, .keys = {"axes"}, .plan = plan_transpose});
  r.add({.name = "reverse", .inputs = {"data"}, .keys = {"axis"}, .plan = plan_reverse}, {"flip"});
  r.add({.name = "Reshape",
         .inputs = {"data"},
         .keys = {"shape", "reverse"},
         .plan = plan_reshape,
         .engine_name = {},
         .inplace_ok = true},
        {"reshape"});
}

}  // namespace nanomx::ops
