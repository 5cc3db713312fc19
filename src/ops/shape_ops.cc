// Definitions of the shape, indexing and sorting operators added for MXNet parity: expand_dims,
// squeeze, Flatten, SwapAxis, tile, repeat, Pad, Concat, stack, slice_like, take, batch_take,
// one_hot, where, gather_nd, scatter_nd, _scatter_set_nd, diag, sort, argsort, topk. Names,
// parameters, defaults and output dtypes are MXNet 1.9.1's (docs/mxnet-compat.md#operators);
// unlike MXNet's legacy mode, zero-size dimensions are real dimensions here. CPU kernels:
// cpu/shape_ops.cc.
#include <algorithm>
#include <string>
#include <string_view>

#include "ops/op_params.h"
#include "ops/registry.h"
#include "ops/shape_params.h"

namespace nanomx::ops {

SortLayout sort_layout(const SortParams& p, const Shape& in, const char* op) {
  SortLayout l;
  std::vector<int64_t> out;
  int axis = -1;
  if (!p.axis) {
    l.len = in.size();
    out.push_back(l.len);
  } else {
    NANOMX_CHECK(in.ndim() >= 1) << op << ": 'data' of shape " << in << " has no axis to sort";
    axis = normalize_axis(*p.axis, in.ndim(), op);
    for (int i = 0; i < axis; ++i) l.outer *= in[i];
    for (int i = axis + 1; i < in.ndim(); ++i) l.inner *= in[i];
    l.len = in[axis];
    out = in.to_vector();
  }
  l.k = l.len;
  if (std::string_view(op) == "topk") {
    NANOMX_CHECK(p.k <= l.len) << "topk: k must be smaller than " << l.len << ", get k = " << p.k
                               << " (data of shape " << in << ")";
    if (p.k > 0) l.k = p.k;
    if (p.ret == SortParams::kMask) {
      out = in.to_vector();  // the input's shape, 1 at the top k
    } else {
      out[axis < 0 ? 0 : static_cast<size_t>(axis)] = l.k;
    }
  }
  l.out = Shape(out);
  return l;
}

namespace {

// Output shape = f(parsed attributes, known input shapes), once every input shape is known.
template <typename F>
InferShapeFn when_known(F f) {
  return [f](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
    for (const PartialShape& s : in) {
      if (!s.known()) return;
    }
    std::vector<Shape> shapes;
    for (const PartialShape& s : in) shapes.push_back(s.shape());
    out[0] = f(p, shapes);
  };
}

std::optional<int64_t> opt_int(const Params& p, const char* key) {
  auto t = p.get_tuple(key);
  if (!t) return std::nullopt;
  NANOMX_CHECK(t->size() == 1) << p.op() << ": attribute '" << key << "' must be an integer";
  return (*t)[0];
}

void check_same_dtype(const char* op, const char* a, const char* b, const PartialDType& x,
                      const PartialDType& y) {
  NANOMX_CHECK(!x || !y || *x == *y) << op << ": '" << a << "' has dtype " << dtype_name(*x)
                                     << " but '" << b << "' has " << dtype_name(*y);
}

// The dtype of the first input, the other inputs free (indices, conditions).
void first_type(const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
  for (PartialDType& o : out) o = in[0];
}

AxisParams axis_params(int64_t axis, int64_t axis2 = 0) {
  AxisParams a;
  a.axis = axis;
  a.axis2 = axis2;
  return a;
}

DType index_dtype(const Params& p, DType fallback) {
  const DType d = p.get_dtype("dtype", fallback);
  return d;
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

Shape take_shape(const TakeParams& t, const Shape& a, const Shape& idx) {
  NANOMX_CHECK(a.ndim() >= 1) << "take: 'a' of shape " << a << " has no axis";
  NANOMX_CHECK(t.axis >= -a.ndim() && t.axis < a.ndim())
      << "take: Axis should be in the range of [" << -a.ndim() << ", " << a.ndim() - 1 << "] where "
      << a.ndim() << " is the rank of input tensor (axis=" << t.axis << ")";
  const int axis = static_cast<int>(t.axis < 0 ? t.axis + a.ndim() : t.axis);
  std::vector<int64_t> out(a.begin(), a.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), a.begin() + axis + 1, a.end());
  return Shape(out);
}

// gather_nd's output shape; also checks scatter_nd's (data, indices, shape) combination.
Shape gather_nd_shape(const char* op, const Shape& data, const Shape& idx) {
  NANOMX_CHECK(idx.ndim() >= 2) << op
                                << ": gather_nd requires index tensor to have at least 2 "
                                   "dimensions, got 'indices' of shape "
                                << idx;
  NANOMX_CHECK(idx[0] <= data.ndim() && idx[0] <= 10)
      << op << ": 'indices' of shape " << idx << " indexes " << idx[0]
      << " axes, but the data of shape " << data << " has " << data.ndim()
      << " (at most 10 are supported)";
  std::vector<int64_t> out(idx.begin() + 1, idx.end());
  out.insert(out.end(), data.begin() + idx[0], data.end());
  return Shape(out);
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

namespace {

SortParams parse_sort(const Params& p, const char* op) {
  SortParams s;
  s.axis = p.has("axis") && p.get_string("axis") == "None" ? std::nullopt
                                                           : std::optional(p.get_int("axis", -1));
  const bool is_topk = std::string(op) == "topk";
  s.ascend = p.get_bool("is_ascend", !is_topk);
  if (is_topk) {
    s.k = p.get_int("k", 1);
    const std::string ret = p.get_string("ret_typ", "indices");
    if (ret == "value") {
      s.ret = SortParams::kValue;
    } else if (ret == "indices") {
      s.ret = SortParams::kIndices;
    } else if (ret == "mask") {
      s.ret = SortParams::kMask;
    } else if (ret == "both") {
      s.ret = SortParams::kBoth;
    } else {
      NANOMX_THROW() << "topk: attribute 'ret_typ' = '" << ret
                     << "' (valid: value, indices, mask, both)";
    }
  } else {
    s.ret = std::string(op) == "sort" ? SortParams::kValue : SortParams::kIndices;
  }
  s.dtype = index_dtype(p, DType::kFloat32);
  return s;
}

Op sort_op(const char* name, std::vector<std::string> keys) {
  return {
      .name = name,
      .inputs = {"data"},
      .keys = std::move(keys),
      .parse = [name](const Params& p, ParsedParams& out) { out.emplace(parse_sort(p, name)); },
      .infer_shape =
          [name](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
            if (!in[0].known()) return;
            const Shape s = sort_layout(p.get<SortParams>(), in[0].shape(), name).out;
            for (PartialShape& o : out) o = s;
          },
      .infer_type =
          [](const ParsedParams& p, std::span<PartialDType> in, std::span<PartialDType> out) {
            const auto& s = p.get<SortParams>();
            if (s.ret == SortParams::kIndices) {
              out[0] = s.dtype;
            } else {
              out[0] = in[0];
            }
            if (out.size() > 1) out[1] = s.dtype;
          },
      .num_outputs =
          [](const ParsedParams& p) {
            return p.get<SortParams>().ret == SortParams::kBoth ? 2 : 1;
          },
      .backward = {.differentiable = false}};
}

}  // namespace

void register_shape_ops(Registry& r) {
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
             }},
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
  r.add({.name = "take",
         .inputs = {"a", "indices"},
         .keys = {"axis", "mode"},
         .parse = parser(+[](const Params& p) {
           TakeParams t{p.get_int("axis", 0)};
           const std::string mode = p.get_string("mode", "clip");
           if (mode == "clip") {
             t.mode = TakeParams::kClip;
           } else if (mode == "wrap") {
             t.mode = TakeParams::kWrap;
           } else if (mode == "raise") {
             t.mode = TakeParams::kRaise;
           } else {
             NANOMX_THROW() << "take: attribute 'mode' = '" << mode
                            << "' (valid: clip, wrap, raise)";
           }
           return t;
         }),
         .infer_shape = when_known([](const ParsedParams& p, const std::vector<Shape>& in) {
           return take_shape(p.get<TakeParams>(), in[0], in[1]);
         }),
         .infer_type = first_type,
         .backward = {.inputs = {1}}});
  r.add({.name = "batch_take",
         .inputs = {"a", "indices"},
         .keys = {},
         .infer_shape = when_known([](const ParsedParams&, const std::vector<Shape>& in) {
           NANOMX_CHECK(in[0].ndim() >= 2)
               << "batch_take: 'a' must have at least 2 dimensions, got " << in[0];
           const int64_t rows =
               in[0][in[0].ndim() - 1] ? in[0].size() / in[0][in[0].ndim() - 1] : 0;
           NANOMX_CHECK(in[1].size() == rows)
               << "batch_take: 'indices' of shape " << in[1] << " must hold one index per row of "
               << "'a' " << in[0] << " (" << rows << ")";
           return in[1];
         }),
         .infer_type = first_type,
         .backward = {.inputs = {1}}});
  r.add({.name = "one_hot",
         .inputs = {"indices"},
         .keys = {"depth", "on_value", "off_value", "dtype"},
         .parse = parser(+[](const Params& p) {
           OneHotParams o{p.get_int("depth"), p.get_float("on_value", 1.0),
                          p.get_float("off_value", 0.0), p.get_dtype("dtype", DType::kFloat32)};
           NANOMX_CHECK(o.depth >= 0) << "one_hot: 'depth' = " << o.depth << " must be >= 0";
           return o;
         }),
         .infer_shape = when_known([](const ParsedParams& p, const std::vector<Shape>& in) {
           Shape out = in[0];
           out.push_back(p.get<OneHotParams>().depth);
           return out;
         }),
         .infer_type = [](const ParsedParams& p, std::span<PartialDType>,
                          std::span<PartialDType> out) { out[0] = p.get<OneHotParams>().dtype; },
         .backward = {.differentiable = false}});
  r.add({.name = "where",
         .inputs = {"condition", "x", "y"},
         .keys = {},
         .infer_shape = when_known([](const ParsedParams&, const std::vector<Shape>& in) {
           const Shape &c = in[0], &x = in[1], &y = in[2];
           NANOMX_CHECK(x == y) << "where: 'x' has shape " << x << " but 'y' has " << y;
           NANOMX_CHECK(c == x || (c.ndim() == 1 && x.ndim() >= 1 && c[0] == x[0]))
               << "where: 'condition' of shape " << c << " must have the shape of 'x' " << x
               << " or be 1-D of length x.shape[0]";
           return x;
         }),
         .infer_type =
             [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
               check_same_dtype("where", "x", "y", in[1], in[2]);
               out[0] = in[1] ? in[1] : in[2];
             },
         .backward = {.inputs = {0}}});
  r.add({.name = "gather_nd",
         .inputs = {"data", "indices"},
         .keys = {},
         .infer_shape = when_known([](const ParsedParams&, const std::vector<Shape>& in) {
           return gather_nd_shape("gather_nd", in[0], in[1]);
         }),
         .infer_type = first_type,
         .backward = {.inputs = {1}}});
  r.add({.name = "scatter_nd",
         .inputs = {"data", "indices"},
         .keys = {"shape"},
         .parse = parser(+[](const Params& p) { return ScatterParams{p.get_shape("shape")}; }),
         .infer_shape =
             [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
               const Shape& shape = p.get<ScatterParams>().shape;
               if (in[0].known() && in[1].known()) {
                 const Shape g = gather_nd_shape("scatter_nd", shape, in[1].shape());
                 NANOMX_CHECK(g == in[0].shape())
                     << "scatter_nd: Invalid data, indices, and output shape combination for "
                        "scatter_nd: 'data' "
                     << in[0] << ", 'indices' " << in[1] << ", shape " << shape;
               }
               out[0] = shape;
             },
         .infer_type = first_type,
         .backward = {.inputs = {1}}});
  r.add({.name = "_scatter_set_nd",
         .inputs = {"lhs", "rhs", "indices"},
         .keys = {"shape"},
         .parse = parser(+[](const Params& p) {
           return ScatterParams{p.has("shape") ? p.get_shape("shape") : Shape()};
         }),
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (in[0].known() && in[1].known() && in[2].known()) {
                 const Shape g = gather_nd_shape("_scatter_set_nd", in[0].shape(), in[2].shape());
                 NANOMX_CHECK(g == in[1].shape())
                     << "_scatter_set_nd: 'rhs' has shape " << in[1] << " but 'indices' " << in[2]
                     << " select a region of shape " << g << " of 'lhs' " << in[0];
               }
               out[0] = in[0];
             },
         .infer_type =
             [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
               check_same_dtype("_scatter_set_nd", "lhs", "rhs", in[0], in[1]);
               out[0] = in[0];
             },
         .inplace = {{0, 0}},
         .backward = {.differentiable = false}});
  r.add({.name = "diag",
         .inputs = {"data"},
         .keys = {"k", "axis1", "axis2"},
         .parse = parser(+[](const Params& p) {
           return DiagParams{p.get_int("k", 0), p.get_int("axis1", 0), p.get_int("axis2", 1)};
         }),
         .infer_shape = when_known([](const ParsedParams& p, const std::vector<Shape>& in) {
           return diag_shape(p.get<DiagParams>(), in[0]);
         })});
  r.add(sort_op("sort", {"axis", "is_ascend"}));
  r.add(sort_op("argsort", {"axis", "is_ascend", "dtype"}));
  r.add(sort_op("topk", {"axis", "k", "ret_typ", "is_ascend", "dtype"}));
}

}  // namespace nanomx::ops
