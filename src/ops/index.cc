// Indexing operator definitions: pick (choose_element_0index), fill_element_0index,
// _onehot_encode. Index arrays may have any dtype. CPU kernels: cpu/index.cc.
#include <cstdio>

#include "ops/op_params.h"
#include "ops/registry.h"

namespace nanomx::ops {

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
         .backward = {.inputs = {1}}},
        {"choose_element_0index"});
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
}

}  // namespace nanomx::ops
