// Layout and shape operator definitions: the operators that move elements or only change a
// shape: slice, slice_axis, _slice_assign(_scalar), broadcast_to, transpose, reverse, Reshape,
// SliceChannel, expand_dims, squeeze, Flatten, SwapAxis, tile, repeat, Pad, Concat, stack,
// slice_like and diag. Names, parameters and defaults are MXNet 1.9.1's
// (docs/mxnet-compat.md#operators); unlike MXNet's legacy mode, zero-size dimensions are real
// dimensions here. CPU kernels: backends/cpu/kernels/layout.cc.
#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>

#include "ops/op_params.h"
#include "ops/registry.h"

namespace nanomx::ops {

std::vector<int64_t> transpose_axes(const std::vector<int64_t>& given, const Shape& src) {
  const int nd = src.ndim();
  std::vector<int64_t> axes;
  if (given.empty()) {
    for (int i = nd - 1; i >= 0; --i) axes.push_back(i);
    return axes;
  }
  NANOMX_CHECK(static_cast<int>(given.size()) == nd)
      << "transpose: 'axes' " << Shape(given) << " does not match 'data' of shape " << src;
  std::vector<bool> seen(static_cast<size_t>(nd), false);
  for (int64_t a : given) {
    const int n = normalize_axis(a, nd, "transpose");
    NANOMX_CHECK(!seen[static_cast<size_t>(n)])
        << "transpose: 'axes' " << Shape(given) << " is not a permutation";
    seen[static_cast<size_t>(n)] = true;
    axes.push_back(n);
  }
  return axes;
}

LayoutWalk transpose_walk(const Shape& src, const std::vector<int64_t>& axes) {
  const auto in_strides = src.strides();
  LayoutWalk w;
  for (int64_t a : transpose_axes(axes, src)) {
    w.space.push_back(src[static_cast<int>(a)]);
    w.strides.push_back(in_strides[static_cast<size_t>(a)]);
  }
  return w;
}

LayoutWalk reverse_walk(const Shape& src, const std::vector<int64_t>& axes) {
  LayoutWalk w{src.to_vector(), src.strides(), 0};
  for (int64_t a : axes) {
    const auto d = static_cast<size_t>(normalize_axis(a, src.ndim(), "reverse"));
    if (w.space[d] > 0) w.base += (w.space[d] - 1) * w.strides[d];
    w.strides[d] = -w.strides[d];
  }
  return w;
}

LayoutWalk broadcast_to_walk(const Shape& src, const Shape& out) {
  LayoutWalk w{out.to_vector(), src.strides(), 0};
  for (int d = 0; d < src.ndim(); ++d) {
    if (src[d] != out[d]) w.strides[static_cast<size_t>(d)] = 0;
  }
  return w;
}

LayoutWalk swapaxis_walk(const Shape& src, int64_t dim1, int64_t dim2) {
  const auto d1 = static_cast<size_t>(normalize_axis(dim1, src.ndim(), "SwapAxis"));
  const auto d2 = static_cast<size_t>(normalize_axis(dim2, src.ndim(), "SwapAxis"));
  LayoutWalk w{src.to_vector(), src.strides(), 0};
  std::swap(w.space[d1], w.space[d2]);
  std::swap(w.strides[d1], w.strides[d2]);
  return w;
}

LayoutWalk tile_walk(const Shape& src, const std::vector<int64_t>& reps) {
  const size_t n = std::max(static_cast<size_t>(src.ndim()), reps.size());
  std::vector<int64_t> d(n, 1), r(n, 1);
  std::copy(src.begin(), src.end(), d.begin() + static_cast<ptrdiff_t>(n - src.ndim()));
  std::copy(reps.begin(), reps.end(), r.begin() + static_cast<ptrdiff_t>(n - reps.size()));
  const std::vector<int64_t> st = Shape(d).strides();
  LayoutWalk w;
  for (size_t i = 0; i < n; ++i) {
    w.space.insert(w.space.end(), {r[i], d[i]});
    w.strides.insert(w.strides.end(), {0, st[i]});
  }
  return w;
}

LayoutWalk repeat_walk(const Shape& src, int64_t count, std::optional<int64_t> axis) {
  if (!axis) return {{src.size(), count}, {1, 0}, 0};
  const int a = normalize_axis(*axis, src.ndim(), "repeat");
  LayoutWalk w{src.to_vector(), src.strides(), 0};
  w.space.insert(w.space.begin() + a + 1, count);
  w.strides.insert(w.strides.begin() + a + 1, 0);
  return w;
}

namespace {

SliceParams parse_slice(const Params& p) {
  auto begin = p.get_tuple("begin");
  auto end = p.get_tuple("end");
  NANOMX_CHECK(begin && end) << p.op() << ": attributes 'begin' and 'end' are required";
  auto step = p.get_tuple("step");
  NANOMX_CHECK(begin->size() == end->size())
      << p.op() << ": 'begin' has " << begin->size() << " entries but 'end' has " << end->size();
  NANOMX_CHECK(!step || step->empty() || step->size() == begin->size())
      << p.op() << ": 'step' has " << step->size() << " entries but 'begin' has " << begin->size();
  SliceParams s;
  s.begin = std::move(*begin);
  s.end = std::move(*end);
  s.step = std::move(step);
  if (p.has("scalar")) s.scalar = p.get_float("scalar", 0.0);
  return s;
}

Region region_of(const ParsedParams& p, const Shape& shape, const char* arg) {
  const auto& s = p.get<SliceParams>();
  return slice_region(p.op(), s.begin, s.end, s.step, shape, arg);
}

// Output shape = a function of the first input's known shape (nothing inferred before that).
template <typename F>
InferShapeFn from_data(F f) {
  return [f](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
    if (in[0].known()) out[0] = f(p, in[0].shape());
  };
}

void same_as_first(const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
  PartialShape merged = in[0];
  merge_shape(merged, out[0]);
  in[0] = merged;
  out[0] = merged;
}

std::optional<int64_t> opt_int(const Params& p, const char* key) {
  auto t = p.get_tuple(key);
  if (!t) return std::nullopt;
  NANOMX_CHECK(t->size() == 1) << p.op() << ": attribute '" << key << "' must be an integer";
  return (*t)[0];
}

AxisParams axis_params(int64_t axis, int64_t axis2 = 0) {
  AxisParams a;
  a.axis = axis;
  a.axis2 = axis2;
  return a;
}

std::vector<int64_t> expand_dims_shape(const Shape& s, int64_t axis) {
  const int nd = s.ndim();
  NANOMX_CHECK(axis >= -nd - 1 && axis <= nd)
      << "expand_dims: axis must be in the range [" << -nd - 1 << ", " << nd << "] (" << axis
      << " provided) for 'data' of shape " << s;
  const int a = static_cast<int>(axis < 0 ? axis + nd + 1 : axis);
  std::vector<int64_t> out = s.to_vector();
  out.insert(out.begin() + a, 1);
  return out;
}

std::vector<int64_t> squeeze_shape(const std::optional<std::vector<int64_t>>& axes,
                                   const Shape& s) {
  std::vector<bool> drop(static_cast<size_t>(s.ndim()), false);
  if (axes) {
    for (int64_t a : *axes) {
      NANOMX_CHECK(a >= -s.ndim() && a < s.ndim())
          << "squeeze: axis " << a << " is out of bounds for array of dimension " << s.ndim();
      const int n = static_cast<int>(a < 0 ? a + s.ndim() : a);
      NANOMX_CHECK(!drop[static_cast<size_t>(n)]) << "squeeze: duplicate value in axis " << a;
      NANOMX_CHECK(s[n] == 1) << "squeeze: cannot select an axis to squeeze out which has size="
                              << s[n] << " not equal to one (axis " << a << " of " << s << ")";
      drop[static_cast<size_t>(n)] = true;
    }
  } else {
    for (int i = 0; i < s.ndim(); ++i) drop[static_cast<size_t>(i)] = s[i] == 1;
  }
  std::vector<int64_t> out;
  for (int i = 0; i < s.ndim(); ++i) {
    if (!drop[static_cast<size_t>(i)]) out.push_back(s[i]);
  }
  if (out.empty()) out.push_back(1);  // MXNet: squeezing everything gives (1,)
  return out;
}

// Both tile shapes left-padded to one rank.
void tile_dims(const Shape& s, const std::vector<int64_t>& reps, std::vector<int64_t>& d,
               std::vector<int64_t>& r) {
  const size_t n = std::max(static_cast<size_t>(s.ndim()), reps.size());
  d.assign(n, 1);
  r.assign(n, 1);
  std::copy(s.begin(), s.end(), d.begin() + static_cast<ptrdiff_t>(n - s.ndim()));
  std::copy(reps.begin(), reps.end(), r.begin() + static_cast<ptrdiff_t>(n - reps.size()));
  for (int64_t v : reps) {
    NANOMX_CHECK(v >= 0) << "tile: 'reps' " << Shape(reps) << " has a negative entry";
  }
}

Shape concat_shape(const char* op, int64_t dim, std::span<const Shape> in) {
  NANOMX_CHECK(in[0].ndim() > 0) << op << ": zero-dimensional arrays cannot be concatenated";
  const int axis = normalize_axis(dim, in[0].ndim(), op);
  Shape out = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    bool ok = in[i].ndim() == out.ndim();
    for (int d = 0; ok && d < out.ndim(); ++d) ok = d == axis || in[i][d] == out[d];
    NANOMX_CHECK(ok) << op << ": Incompatible input shape: input " << i << " has shape " << in[i]
                     << " but input 0 has " << in[0] << " (they may differ only on axis " << axis
                     << ")";
    out[axis] += in[i][axis];
  }
  return out;
}

// Concat on partial shapes: the dims off the axis are one dim across inputs (each input learns
// what another knows); the axis is the sum once every input's is known.
void concat_infer(const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
  for (const PartialShape& s : in) {
    if (!s.rank_known()) return;
  }
  const bool all_known =
      std::all_of(in.begin(), in.end(), [](const PartialShape& s) { return s.known(); });
  if (all_known) {
    std::vector<Shape> shapes;
    for (const PartialShape& s : in) shapes.push_back(s.shape());
    out[0] = concat_shape("Concat", p.get<AxisParams>().axis, shapes);
    return;
  }
  const int nd = in[0].ndim();
  NANOMX_CHECK(nd > 0) << "Concat: zero-dimensional arrays cannot be concatenated";
  const int axis = normalize_axis(p.get<AxisParams>().axis, nd, "Concat");
  PartialShape o = PartialShape::of_rank(nd);
  int64_t sum = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    NANOMX_CHECK(in[i].ndim() == nd) << "Concat: Incompatible input shape: input " << i << " has "
                                     << in[i] << " but input 0 has " << in[0];
    for (int d = 0; d < nd; ++d) {
      if (d == axis || !in[i].dim_known(d)) continue;
      NANOMX_CHECK(!o.dim_known(d) || o[d] == in[i][d])
          << "Concat: Incompatible input shape: input " << i << " has " << in[i]
          << " (they may differ only on axis " << axis << ")";
      o[d] = in[i][d];
    }
    sum = sum == PartialShape::kUnknownDim || !in[i].dim_known(axis) ? PartialShape::kUnknownDim
                                                                     : sum + in[i][axis];
  }
  o[axis] = sum;
  for (PartialShape& s : in) {
    for (int d = 0; d < nd; ++d) {
      if (d != axis) s[d] = o[d];
    }
  }
  out[0] = o;
}

Shape diag_shape(const DiagParams& d, const Shape& s) {
  NANOMX_CHECK(s.ndim() >= 1) << "diag: 'data' must have at least one dimension, got " << s;
  if (s.ndim() == 1) {
    const int64_t n = s[0] + (d.k < 0 ? -d.k : d.k);
    return Shape{n, n};
  }
  const int a1 = normalize_axis(d.axis1, s.ndim(), "diag"),
            a2 = normalize_axis(d.axis2, s.ndim(), "diag");
  NANOMX_CHECK(a1 != a2) << "diag: axis1 and axis2 cannot refer to the same axis " << a1;
  const int64_t len = d.k >= 0 ? std::min(s[a1], s[a2] - d.k) : std::min(s[a1] + d.k, s[a2]);
  NANOMX_CHECK(len > 0 || s[a1] == 0 || s[a2] == 0)
      << "diag: Diagonal does not exist (k=" << d.k << " for 'data' of shape " << s << ")";
  std::vector<int64_t> out;
  for (int i = 0; i < s.ndim(); ++i) {
    if (i != a1 && i != a2) out.push_back(s[i]);
  }
  out.push_back(std::max<int64_t>(len, 0));
  return Shape(out);
}

}  // namespace

LayoutWalk split_walk(const SplitParams& s, const Shape& src, int64_t k) {
  const int axis = normalize_axis(s.axis, src.ndim(), "SliceChannel");
  const int64_t part = src[axis] / s.num_outputs;
  Region r = full_region(src);
  r.count[static_cast<size_t>(axis)] = part;
  r.begin[static_cast<size_t>(axis)] = k * part;
  LayoutWalk w;
  std::tie(w.strides, w.base) = region_strides(src, r);
  w.space.assign(src.dims().begin(), src.dims().end());
  w.space[static_cast<size_t>(axis)] = part;
  if (s.squeeze_axis) {
    w.strides.erase(w.strides.begin() + axis);
    w.space.erase(w.space.begin() + axis);
  }
  return w;
}

LayoutWalk diag_walk(const Shape& src, int64_t k, int64_t axis1, int64_t axis2) {
  LayoutWalk w;
  w.space = diag_shape(DiagParams{k, axis1, axis2}, src).to_vector();
  const int a1 = normalize_axis(axis1, src.ndim(), "diag"),
            a2 = normalize_axis(axis2, src.ndim(), "diag");
  const std::vector<int64_t> st = src.strides();
  for (int i = 0; i < src.ndim(); ++i) {
    if (i != a1 && i != a2) w.strides.push_back(st[static_cast<size_t>(i)]);
  }
  w.strides.push_back(st[static_cast<size_t>(a1)] + st[static_cast<size_t>(a2)]);
  w.base = k >= 0 ? k * st[static_cast<size_t>(a2)] : -k * st[static_cast<size_t>(a1)];
  return w;
}

void register_layout_ops(Registry& r) {
  r.add({.name = "slice",
         .inputs = {"data"},
         .keys = {"begin", "end", "step"},
         .parse = parser(parse_slice),
         .infer_shape = from_data(
             [](const ParsedParams& p, const Shape& s) { return region_of(p, s, "data").shape(); }),
         // The gradient places dy into zeros of the input's shape.
         .backward = {.inputs = {0}}},
        {"crop"});
  r.add({.name = "slice_axis",
         .inputs = {"data"},
         .keys = {"axis", "begin", "end"},
         .parse = parser(+[](const Params& p) {
           auto begin = p.get_tuple("begin");
           auto end = p.get_tuple("end");
           NANOMX_CHECK(begin && begin->size() == 1 && (*begin)[0])
               << "slice_axis: attribute 'begin' must be an integer";
           NANOMX_CHECK(!end || end->size() == 1)
               << "slice_axis: attribute 'end' must be an integer or None";
           return SliceAxisParams{p.get_int("axis"), (*begin)[0], end ? (*end)[0] : std::nullopt};
         }),
         .infer_shape = from_data([](const ParsedParams& p, const Shape& shape) {
           const auto& s = p.get<SliceAxisParams>();
           const int axis = normalize_axis(s.axis, shape.ndim(), "slice_axis");
           Region r = full_region(shape);
           slice_axis_range("slice_axis", axis, shape[axis], s.begin, s.end, 1, r);
           return r.shape();
         })});
  // _slice_assign(lhs, rhs, begin, end, step): a copy of lhs (or lhs itself, with out=lhs) whose
  // region is replaced by rhs (exactly the region's shape).
  r.add({.name = "_slice_assign",
         .inputs = {"lhs", "rhs"},
         .keys = {"begin", "end", "step"},
         .parse = parser(parse_slice),
         .infer_shape =
             [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (in[0].known() && in[1].known()) {
                 const Region reg = region_of(p, in[0].shape(), "lhs");
                 NANOMX_CHECK(in[1].shape() == reg.shape())
                     << "_slice_assign: 'rhs' has shape " << in[1] << " but the slice of 'lhs' "
                     << in[0] << " has shape " << reg.shape();
               }
               out[0] = in[0];
             },
         .inplace = {{0, 0}}},
        {"_crop_assign"});
  r.add({.name = "_slice_assign_scalar",
         .inputs = {"data"},
         .keys = {"scalar", "begin", "end", "step"},
         .parse = parser(parse_slice),
         .infer_shape =
             [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (in[0].known()) region_of(p, in[0].shape(), "data");  // validates
               out[0] = in[0];
             },
         .inplace = {{0, 0}}},
        {"_crop_assign_scalar"});
  r.add({.name = "broadcast_to",
         .inputs = {"data"},
         .keys = {"shape"},
         .parse = parser(+[](const Params& p) {
           auto target = p.get_ints("shape");
           NANOMX_CHECK(target) << "broadcast_to: required attribute 'shape' is missing";
           return AxesParams{*target};
         }),
         .infer_shape = from_data([](const ParsedParams& p, const Shape& src) {
           const auto& target = p.get<AxesParams>().values;
           NANOMX_CHECK(static_cast<int>(target.size()) == src.ndim())
               << "broadcast_to: cannot broadcast 'data' of shape " << src << " to "
               << Shape(target) << ": the number of dimensions differs";
           Shape out(target);
           for (int i = 0; i < src.ndim(); ++i) {
             if (out[i] == 0) out[i] = src[i];  // 0 keeps the input's dimension
             NANOMX_CHECK(out[i] == src[i] || src[i] == 1)
                 << "broadcast_to: cannot broadcast 'data' of shape " << src << " to "
                 << Shape(target) << " (axis " << i << ": " << src[i] << " is neither " << out[i]
                 << " nor 1)";
             NANOMX_CHECK(out[i] >= 0) << "broadcast_to: negative dimension in " << Shape(target);
           }
           return out;
         }),
         .backward = {.inputs = {0}}});
  r.add({.name = "transpose",
         .inputs = {"data"},
         .keys = {"axes"},
         .parse = parser(+[](const Params& p) {
           auto given = p.get_ints("axes");
           return AxesParams{given ? *given : std::vector<int64_t>{}};
         }),
         // Dims move with their axes, known or not: only the rank is needed.
         .infer_shape = [](const ParsedParams& p, std::span<PartialShape> in,
                           std::span<PartialShape> out) {
           if (!in[0].rank_known()) return;
           const auto axes =
               transpose_axes(p.get<AxesParams>().values,
                              Shape(std::vector<int64_t>(static_cast<size_t>(in[0].ndim()), 1)));
           PartialShape s = PartialShape::of_rank(in[0].ndim());
           for (size_t i = 0; i < axes.size(); ++i) {
             s[static_cast<int>(i)] = in[0][static_cast<int>(axes[i])];
           }
           out[0] = s;
         }});
  r.add({.name = "reverse",
         .inputs = {"data"},
         .keys = {"axis"},
         .parse = parser(+[](const Params& p) {
           auto axes = p.get_ints("axis");
           NANOMX_CHECK(axes) << "reverse: required attribute 'axis' is missing";
           return AxesParams{*axes};
         }),
         .infer_shape =
             [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (in[0].rank_known()) {
                 std::vector<bool> seen(static_cast<size_t>(in[0].ndim()), false);
                 for (int64_t a : p.get<AxesParams>().values) {
                   const int n = normalize_axis(a, in[0].ndim(), "reverse");
                   NANOMX_CHECK(!seen[static_cast<size_t>(n)])
                       << "reverse: axis " << a << " given twice";
                   seen[static_cast<size_t>(n)] = true;
                 }
               }
               same_as_first(p, in, out);
             }},
        {"flip"});
  r.add({.name = "Reshape",
         .inputs = {"data"},
         .keys = {"shape", "reverse"},
         .parse = parser(+[](const Params& p) {
           auto spec = p.get_ints("shape");
           NANOMX_CHECK(spec) << "Reshape: required attribute 'shape' is missing";
           return ReshapeParams{*spec, p.get_bool("reverse", false)};
         }),
         .infer_shape =
             [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
               const auto& s = p.get<ReshapeParams>();
               if (in[0].known()) {
                 out[0] = infer_reshape(s.shape, in[0].shape(), s.reverse);
               } else if (in[0].rank_known()) {
                 out[0] = infer_reshape_partial(s.shape, in[0], s.reverse);
               }
             },
         .inplace = {{0, 0}},
         .backward = {.inputs = {0}}},
        {"reshape"});
  // SliceChannel(data, num_outputs, axis=1, squeeze_axis=False): equal parts along an axis.
  r.add({.name = "SliceChannel",
         .inputs = {"data"},
         .keys = {"num_outputs", "axis", "squeeze_axis"},
         .parse = parser(+[](const Params& p) {
           const int64_t n = p.get_int("num_outputs");
           NANOMX_CHECK(n >= 1) << p.op() << ": attribute 'num_outputs' = " << n
                                << " must be at least 1";
           return SplitParams{static_cast<int>(n), p.get_int("axis", 1),
                              p.get_bool("squeeze_axis", false)};
         }),
         .infer_shape =
             [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
               const auto& s = p.get<SplitParams>();
               if (!in[0].rank_known()) return;
               const int nd = in[0].ndim();
               const int axis = normalize_axis(s.axis, nd, "SliceChannel");
               const int64_t dim = in[0][axis];
               PartialShape part = PartialShape::of_rank(s.squeeze_axis ? nd - 1 : nd);
               for (int i = 0, o = 0; i < nd; ++i) {
                 if (i == axis) {
                   if (!s.squeeze_axis) {
                     part[o++] = dim == PartialShape::kUnknownDim ? dim : dim / s.num_outputs;
                   }
                   continue;
                 }
                 part[o++] = in[0][i];
               }
               if (dim != PartialShape::kUnknownDim) {
                 NANOMX_CHECK(dim % s.num_outputs == 0)
                     << p.op() << ": You are trying to split the " << axis
                     << "-th axis of input tensor with shape " << in[0]
                     << " into num_outputs=" << s.num_outputs
                     << " evenly sized chunks, but this is not possible because " << s.num_outputs
                     << " does not evenly divide " << dim;
                 NANOMX_CHECK(!s.squeeze_axis || dim == s.num_outputs)
                     << p.op() << ": squeeze_axis needs axis " << axis << " of 'data' " << in[0]
                     << " to equal num_outputs=" << s.num_outputs;
               }
               for (PartialShape& o : out) o = part;
             },
         .num_outputs = [](const ParsedParams& p) { return p.get<SplitParams>().num_outputs; },
         .backward = {}},
        {"split"});
  r.add({.name = "expand_dims",
         .inputs = {"data"},
         .keys = {"axis"},
         .parse = parser(+[](const Params& p) { return axis_params(p.get_int("axis")); }),
         // Only the rank is needed: unknown dims move with their axes.
         .infer_shape =
             [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (!in[0].rank_known()) return;
               const int nd = in[0].ndim();
               const int64_t a = p.get<AxisParams>().axis;
               expand_dims_shape(Shape(std::vector<int64_t>(static_cast<size_t>(nd), 1)), a);
               const int at = static_cast<int>(a < 0 ? a + nd + 1 : a);
               PartialShape s = PartialShape::of_rank(nd + 1);
               for (int i = 0, j = 0; i < nd + 1; ++i) s[i] = i == at ? 1 : in[0][j++];
               out[0] = s;
             },
         .inplace = {{0, 0}},
         .backward = {.inputs = {0}}});
  r.add({.name = "squeeze",
         .inputs = {"data"},
         .keys = {"axis"},
         .parse = parser(+[](const Params& p) {
           if (p.has("axis") && p.get_string("axis") == "None") return AxisListParams{};
           return AxisListParams{p.get_ints("axis")};
         }),
         .infer_shape = when_known([](const ParsedParams& p, const std::vector<Shape>& in) {
           return Shape(squeeze_shape(p.get<AxisListParams>().axes, in[0]));
         }),
         .inplace = {{0, 0}},
         .backward = {.inputs = {0}}});
  r.add({.name = "Flatten",
         .inputs = {"data"},
         .keys = {},
         // (d0, d1*...*dn): the first dim may be unknown, the rest must be known for the second.
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (!in[0].rank_known()) return;
               NANOMX_CHECK(in[0].ndim() >= 1)
                   << "Flatten: 'data' must have at least one dimension, got " << in[0];
               PartialShape s = PartialShape::of_rank(2);
               s[0] = in[0][0];
               int64_t rest = 1;
               for (int i = 1; i < in[0].ndim(); ++i) {
                 if (!in[0].dim_known(i)) {
                   rest = PartialShape::kUnknownDim;
                   break;
                 }
                 rest *= in[0][i];
               }
               s[1] = rest;
               out[0] = s;
             },
         .inplace = {{0, 0}},
         .backward = {.inputs = {0}}},
        {"flatten"});
  r.add({.name = "SwapAxis",
         .inputs = {"data"},
         .keys = {"dim1", "dim2"},
         .parse = parser(+[](const Params& p) {
           return axis_params(p.get_int("dim1", 0), p.get_int("dim2", 0));
         }),
         .infer_shape =
             [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (!in[0].rank_known()) return;
               const auto& a = p.get<AxisParams>();
               const int d1 = normalize_axis(a.axis, in[0].ndim(), "SwapAxis: dim1");
               const int d2 = normalize_axis(a.axis2, in[0].ndim(), "SwapAxis: dim2");
               PartialShape s = in[0];
               std::swap(s[d1], s[d2]);
               out[0] = s;
             }},
        {"swapaxes"});
  r.add({.name = "tile",
         .inputs = {"data"},
         .keys = {"reps"},
         .parse = parser(+[](const Params& p) {
           auto reps = p.get_ints("reps");
           NANOMX_CHECK(reps) << "tile: required attribute 'reps' is missing";
           return AxisListParams{reps};
         }),
         .infer_shape = when_known([](const ParsedParams& p, const std::vector<Shape>& in) {
           std::vector<int64_t> d, r;
           tile_dims(in[0], *p.get<AxisListParams>().axes, d, r);
           for (size_t i = 0; i < d.size(); ++i) d[i] *= r[i];
           return Shape(d);
         })});
  r.add({.name = "repeat",
         .inputs = {"data"},
         .keys = {"repeats", "axis"},
         .parse = parser(+[](const Params& p) {
           AxisParams a;
           a.count = p.get_int("repeats");
           NANOMX_CHECK(a.count >= 0)
               << "repeat: repeats cannot be a negative number (" << a.count << ")";
           a.opt_axis = opt_int(p, "axis");
           return a;
         }),
         .infer_shape = when_known([](const ParsedParams& p, const std::vector<Shape>& in) {
           const auto& a = p.get<AxisParams>();
           if (!a.opt_axis) return Shape{in[0].size() * a.count};
           NANOMX_CHECK(*a.opt_axis >= -in[0].ndim() && *a.opt_axis < in[0].ndim())
               << "repeat: axis = " << *a.opt_axis << " out of bounds for 'data' of shape "
               << in[0];
           Shape out = in[0];
           out[normalize_axis(*a.opt_axis, in[0].ndim(), "repeat")] *= a.count;
           return out;
         })});
  r.add(
      {.name = "Pad",
       .inputs = {"data"},
       .keys = {"mode", "pad_width", "constant_value"},
       .parse = parser(+[](const Params& p) {
         PadParams pp;
         const std::string mode = p.get_string("mode");
         if (mode == "constant") {
           pp.mode = PadParams::kConstant;
         } else if (mode == "edge") {
           pp.mode = PadParams::kEdge;
         } else if (mode == "reflect") {
           pp.mode = PadParams::kReflect;
         } else {
           NANOMX_THROW() << "Pad: attribute 'mode' = '" << mode
                          << "' (valid: constant, edge, reflect)";
         }
         auto w = p.get_ints("pad_width");
         NANOMX_CHECK(w) << "Pad: required attribute 'pad_width' is missing";
         pp.width = *w;
         pp.value = p.get_float("constant_value", 0.0);
         return pp;
       }),
       .infer_shape = when_known([](const ParsedParams& p, const std::vector<Shape>& in) {
         const auto& pp = p.get<PadParams>();
         const Shape& s = in[0];
         NANOMX_CHECK(s.ndim() == 4 || s.ndim() == 5)
             << "Pad: Current implementation only supports 4-D or 5-D input (got 'data' of "
                "shape "
             << s << ")";
         NANOMX_CHECK(static_cast<int>(pp.width.size()) == 2 * s.ndim())
             << "Pad: Input shape vs padding spec mismatch: 'pad_width' " << Shape(pp.width)
             << " needs " << 2 * s.ndim() << " entries for 'data' " << s;
         NANOMX_CHECK(pp.width[0] == 0 && pp.width[1] == 0 && pp.width[2] == 0 && pp.width[3] == 0)
             << "Pad: Current implementation expects padding on the first two axes to be zero "
                "(pad_width "
             << Shape(pp.width) << ")";
         Shape out = s;
         for (int i = 0; i < s.ndim(); ++i) {
           const int64_t b = pp.width[2 * static_cast<size_t>(i)],
                         a = pp.width[2 * static_cast<size_t>(i) + 1];
           NANOMX_CHECK(b >= 0 && a >= 0) << "Pad: negative padding in " << Shape(pp.width);
           NANOMX_CHECK(pp.mode != PadParams::kReflect || (b < s[i] && a < s[i]))
               << "Pad: Current implementation of reflection padding only supports padding "
                  "sizes smaller than the input size (axis "
               << i << " of " << s << ", pad_width " << Shape(pp.width) << ")";
           NANOMX_CHECK(pp.mode == PadParams::kConstant || s[i] > 0 || (a == 0 && b == 0))
               << "Pad: cannot pad an empty axis " << i << " in mode edge or reflect";
           out[i] = s[i] + a + b;
         }
         return out;
       })},
      {"pad"});
  r.add({.name = "Concat",
         .inputs = {"data"},
         .keys = {"dim", "num_args"},
         .num_inputs_key = "num_args",
         .parse = parser(+[](const Params& p) { return axis_params(p.get_int("dim", 1)); }),
         .infer_shape = concat_infer,
         .infer_type =
             [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
               PartialDType d = out[0];
               for (size_t i = 0; i < in.size(); ++i) {
                 if (!in[i]) continue;
                 NANOMX_CHECK(!d || *d == *in[i])
                     << "Concat: Non-uniform data type in Concat, expected data type "
                     << dtype_name(*d) << ", got data type " << dtype_name(*in[i]) << " for input "
                     << i;
                 d = in[i];
               }
               for (PartialDType& t : in) t = d;
               out[0] = d;
             },
         // The inputs, for their sizes along the axis.
         .backward = {.all_inputs = true}},
        {"concat"});
  r.add({.name = "stack",
         .inputs = {"data"},
         .keys = {"axis", "num_args"},
         .num_inputs_key = "num_args",
         .parse = parser(+[](const Params& p) { return axis_params(p.get_int("axis", 0)); }),
         // Every input has one shape: what any of them knows, all of them know.
         .infer_shape = [](const ParsedParams& p, std::span<PartialShape> in,
                           std::span<PartialShape> out) {
           PartialShape merged;
           for (size_t i = 0; i < in.size(); ++i) {
             NANOMX_CHECK(merge_shape(merged, in[i]))
                 << "stack: every input must have the same shape: input " << i << " has " << in[i]
                 << ", the inputs before it " << merged;
           }
           if (!merged.rank_known()) return;
           for (PartialShape& s : in) s = merged;
           const int nd = merged.ndim();
           const int64_t a = p.get<AxisParams>().axis;
           expand_dims_shape(Shape(std::vector<int64_t>(static_cast<size_t>(nd), 1)), a);
           const int at = static_cast<int>(a < 0 ? a + nd + 1 : a);
           PartialShape o = PartialShape::of_rank(nd + 1);
           for (int i = 0, j = 0; i < nd + 1; ++i) {
             o[i] = i == at ? static_cast<int64_t>(in.size()) : merged[j++];
           }
           out[0] = o;
         }});
  r.add({.name = "slice_like",
         .inputs = {"data", "shape_like"},
         .keys = {"axes"},
         .parse = parser(+[](const Params& p) {
           auto axes = p.get_ints("axes");
           return AxisListParams{axes ? *axes : std::vector<int64_t>{}};
         }),
         .infer_shape = when_known([](const ParsedParams& p, const std::vector<Shape>& in) {
           const Shape &data = in[0], &like = in[1];
           const auto& axes = *p.get<AxisListParams>().axes;
           Shape out = data;
           auto limit = [&](int a, int64_t n) {
             NANOMX_CHECK(n <= data[a]) << "slice_like: Slice axis " << a << " with size " << n
                                        << " exceeds limit of input with size " << data[a];
             out[a] = n;
           };
           if (axes.empty()) {
             NANOMX_CHECK(data.ndim() == like.ndim())
                 << "slice_like: 'data' " << data << " and 'shape_like' " << like
                 << " must have the same number of dimensions when 'axes' is empty";
             for (int a = 0; a < data.ndim(); ++a) limit(a, like[a]);
           } else {
             for (int64_t a : axes) {
               const int n = normalize_axis(a, data.ndim(), "slice_like");
               NANOMX_CHECK(n < like.ndim()) << "slice_like: axis " << a << " is out of range for "
                                             << "'shape_like' of shape " << like;
               limit(n, like[n]);
             }
           }
           return out;
         }),
         .infer_type = first_type});
  r.add({.name = "diag",
         .inputs = {"data"},
         .keys = {"k", "axis1", "axis2"},
         .parse = parser(+[](const Params& p) {
           return DiagParams{p.get_int("k", 0), p.get_int("axis1", 0), p.get_int("axis2", 1)};
         }),
         .infer_shape = when_known([](const ParsedParams& p, const std::vector<Shape>& in) {
           return diag_shape(p.get<DiagParams>(), in[0]);
         })});
}

}  // namespace nanomx::ops
