// Indexing and ordering operator definitions: pick (choose_element_0index),
// fill_element_0index, _onehot_encode, take, batch_take, one_hot, where, gather_nd, scatter_nd,
// _scatter_set_nd, sort, argsort, topk. Index arrays may have any dtype. Names, parameters,
// defaults and output dtypes are MXNet 1.9.1's (docs/mxnet-compat.md#operators). CPU kernels:
// backends/cpu/kernels/index.cc.
#include <cstdio>
#include <string>
#include <string_view>

#include "ops/backward_ops.h"
#include "ops/op_params.h"
#include "ops/registry.h"

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

void check_same_dtype(const char* op, const char* a, const char* b, const PartialDType& x,
                      const PartialDType& y) {
  NANOMX_CHECK(!x || !y || *x == *y) << op << ": '" << a << "' has dtype " << dtype_name(*x)
                                     << " but '" << b << "' has " << dtype_name(*y);
}

DType index_dtype(const Params& p, DType fallback) {
  const DType d = p.get_dtype("dtype", fallback);
  return d;
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

void register_index_ops(Registry& r) {
  r.add({.name = "pick",
         .inputs = {"data", "index"},
         .keys = {"axis", "keepdims", "mode"},
         .parse = parser(+[](const Params& p) {
           const std::string mode = p.get_string("mode", "clip");
           NANOMX_CHECK(mode == "clip" || mode == "wrap")
               << "pick: attribute 'mode' = '" << mode << "' (valid: clip, wrap)";
           return PickParams{p.get_int("axis", -1), p.get_bool("keepdims", false), mode == "wrap"};
         }),
         .infer_shape =
             [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (!in[0].known() || !in[1].known()) return;
               const Shape &data = in[0].shape(), &index = in[1].shape();
               NANOMX_CHECK(data.ndim() >= 1) << "pick: 'data' of shape " << data << " has no axis";
               const auto& pp = p.get<PickParams>();
               const int axis = normalize_axis(pp.axis, data.ndim(), "pick");
               std::vector<int64_t> removed, kept;
               for (int i = 0; i < data.ndim(); ++i) {
                 if (i != axis) removed.push_back(data[i]);
                 kept.push_back(i == axis ? 1 : data[i]);
               }
               NANOMX_CHECK(index == Shape(removed) || index == Shape(kept))
                   << "pick: 'index' has shape " << index << " but 'data' " << data
                   << " along axis " << axis << " needs " << Shape(removed) << " (or "
                   << Shape(kept) << ")";
               out[0] = Shape(pp.keepdims ? kept : removed);
             },
         .infer_type = [](const ParsedParams&, std::span<PartialDType> in,
                          std::span<PartialDType> out) { out[0] = in[0]; },
         // data for its shape, index for the positions.
         .backward = {.inputs = {0, 1}}},
        {"choose_element_0index"});
  // (dY, data, index) -> d(data): dY scattered to the picked positions, zero elsewhere. The
  // index keeps its own dtype (integer or float), as pick's does.
  r.add(with_attrs_of(
      fwd_op("pick"),
      {.name = "_backward_pick",
       .inputs = {"out_grad", "data", "index"},
       .infer_shape = [](const ParsedParams&, std::span<PartialShape> in,
                         std::span<PartialShape> out) { out[0] = in[1]; },
       .infer_type =
           [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
             const PartialDType t = in[0] ? in[0] : in[1] ? in[1] : out[0];
             if (!t) return;
             NANOMX_CHECK(is_float_dtype(*t))
                 << "_backward_pick: gradients are computed for floating-point data, got "
                 << dtype_name(*t);
             in[0] = t;
             in[1] = t;
             out[0] = t;
           },
       .backward = {.differentiable = false}}));
  r.add({.name = "fill_element_0index",
         .inputs = {"lhs", "mhs", "rhs"},
         .keys = {},
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (in[0].known() && in[1].known() && in[2].known()) {
                 const Shape &lhs = in[0].shape(), &mhs = in[1].shape(), &rhs = in[2].shape();
                 NANOMX_CHECK(lhs.ndim() == 2 && mhs.ndim() == 1 && rhs.ndim() == 1 &&
                              mhs[0] == lhs[0] && rhs[0] == lhs[0])
                     << "fill_element_0index: expected 'lhs' (N, M), 'mhs' (N,) and 'rhs' (N,), "
                        "got 'lhs' "
                     << lhs << ", 'mhs' " << mhs << ", 'rhs' " << rhs;
               }
               out[0] = in[0];
             },
         .infer_type =
             [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
               NANOMX_CHECK(!in[0] || !in[1] || in[0] == in[1])
                   << "fill_element_0index: 'mhs' has dtype " << dtype_name(*in[1])
                   << " but 'lhs' has " << dtype_name(*in[0]);
               out[0] = in[0];
             },
         .backward = {.inputs = {2}},
         .engine_name = "TernaryOp"});
  r.add({.name = "_onehot_encode",
         .inputs = {"lhs", "rhs"},
         .keys = {},
         // Said once per call, on the calling thread (as MXNet's).
         .parse =
             [](const Params&, ParsedParams&) {
               std::fprintf(stderr,
                            "The operator onehot_encode is deprecated; use one_hot instead.\n");
             },
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (in[0].known() && in[1].known()) {
                 const Shape &idx = in[0].shape(), &o = in[1].shape();
                 NANOMX_CHECK(idx.ndim() == 1 && o.ndim() == 2 && idx[0] == o[0])
                     << "_onehot_encode: expected 'lhs' (indices) of shape (N,) and 'rhs' (out) "
                        "of shape (N, M), got "
                     << idx << " and " << o;
               }
               out[0] = in[1];
             },
         .infer_type = [](const ParsedParams&, std::span<PartialDType> in,
                          std::span<PartialDType> out) { out[0] = in[1]; },
         .inplace = {{1, 0}},
         .backward = {.differentiable = false},
         .engine_name = "BinaryOp"});
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
  r.add(sort_op("sort", {"axis", "is_ascend"}));
  r.add(sort_op("argsort", {"axis", "is_ascend", "dtype"}));
  r.add(sort_op("topk", {"axis", "k", "ret_typ", "is_ascend", "dtype"}));
}

}  // namespace nanomx::ops
