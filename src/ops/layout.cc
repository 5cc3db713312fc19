// Definitions of the operators that move elements: slice, slice_axis, _slice_assign(_scalar),
// broadcast_to, transpose, reverse, Reshape and SliceChannel. CPU kernels: cpu/layout.cc.
#include <algorithm>

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

}  // namespace

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
}

}  // namespace nanomx::ops
