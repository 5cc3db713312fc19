// dot's definition: lhs (..., K) or, with transpose_a, (K, ...); rhs (K, ...) or, with
// transpose_b, (..., K). The result has lhs's other dims then rhs's; two 1-D vectors give (1,)
// (MXNet 1.x); batch_dot. CPU kernels: backends/cpu/kernels/linalg.cc.
#include <cstdint>
#include <string>

#include "ops/op_params.h"
#include "ops/registry.h"

namespace nanomx::ops {

DotDims dot_dims(const DotParams& p, const Shape& sa, const Shape& sb, Shape* out_shape) {
  const bool ta = p.transpose_a, tb = p.transpose_b;
  NANOMX_CHECK(sa.ndim() >= 1 && sb.ndim() >= 1)
      << "dot: 'lhs' " << sa << " and 'rhs' " << sb << " must have at least one dimension";
  DotDims d{1, 0, 1, ta, tb};
  std::vector<int64_t> out;
  // lhs: K is its last dim (first with transpose_a); the rest is M.
  d.k = ta ? sa[0] : sa[sa.ndim() - 1];
  for (int i = 0; i < sa.ndim(); ++i) {
    if (i == (ta ? 0 : sa.ndim() - 1)) continue;
    d.m *= sa[i];
    out.push_back(sa[i]);
  }
  const int64_t kb = tb ? sb[sb.ndim() - 1] : sb[0];
  NANOMX_CHECK(d.k == kb) << "dot: shapes of 'lhs' " << sa << " and 'rhs' " << sb
                          << " do not match (transpose_a=" << ta << ", transpose_b=" << tb
                          << "): " << d.k << " vs " << kb;
  for (int i = 0; i < sb.ndim(); ++i) {
    if (i == (tb ? sb.ndim() - 1 : 0)) continue;
    d.n *= sb[i];
    out.push_back(sb[i]);
  }
  if (out.empty()) out.push_back(1);
  NANOMX_CHECK(d.m <= INT32_MAX && d.n <= INT32_MAX && d.k <= INT32_MAX)
      << "dot: matrix dimensions of " << sa << " x " << sb << " exceed the BLAS int range";
  if (out_shape) *out_shape = Shape(out);
  return d;
}

DotDims batch_dot_dims(const DotParams& p, const Shape& sa, const Shape& sb, Shape* out_shape,
                       int64_t* batch) {
  const int nd = sa.ndim();
  NANOMX_CHECK(nd >= 3 && sb.ndim() == nd)
      << "batch_dot: batch_dot currently only support N-D*N-D array (N >= 3), got 'lhs' " << sa
      << " and 'rhs' " << sb;
  int64_t b = 1;
  std::vector<int64_t> out;
  for (int i = 0; i < nd - 2; ++i) {
    NANOMX_CHECK(sa[i] == sb[i])
        << "batch_dot: batch_dot shape error (the leading batch dimensions must be equal): " << sa
        << " X " << sb;
    b *= sa[i];
    out.push_back(sa[i]);
  }
  DotDims d{p.transpose_a ? sa[nd - 1] : sa[nd - 2], p.transpose_a ? sa[nd - 2] : sa[nd - 1],
            p.transpose_b ? sb[nd - 2] : sb[nd - 1], p.transpose_a, p.transpose_b};
  const int64_t kb = p.transpose_b ? sb[nd - 1] : sb[nd - 2];
  NANOMX_CHECK(d.k == kb) << "batch_dot: batch_dot shape error (shape mismatch): " << sa << " X "
                          << sb << " (transpose_a=" << d.ta << ", transpose_b=" << d.tb << ")";
  out.push_back(d.m);
  out.push_back(d.n);
  if (out_shape) *out_shape = Shape(out);
  if (batch) *batch = b;
  return d;
}

void register_linalg_ops(Registry& r) {
  r.add({.name = "dot",
         .inputs = {"lhs", "rhs"},
         .keys = {"transpose_a", "transpose_b"},
         .parse = parser(+[](const Params& p) {
           return DotParams{p.get_bool("transpose_a", false), p.get_bool("transpose_b", false)};
         }),
         .infer_shape =
             [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (!in[0].known() || !in[1].known()) return;
               Shape s;
               dot_dims(p.get<DotParams>(), in[0].shape(), in[1].shape(), &s);
               out[0] = s;
             },
         .infer_type =
             [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
               NANOMX_CHECK(!in[0] || !in[1] || in[0] == in[1])
                   << "dot: 'lhs' has dtype " << dtype_name(*in[0]) << " but 'rhs' has "
                   << dtype_name(*in[1]);
               out[0] = in[0] ? in[0] : in[1];
             },
         .backward = {.inputs = {0, 1}}});
  // batch_dot: lhs (B..., M, K) (transpose_a: (B..., K, M)) and rhs (B..., K, N) (transpose_b:
  // (B..., N, K)), equal leading dims, N-D x N-D with N >= 3; out (B..., M, N).
  r.add({.name = "batch_dot",
         .inputs = {"lhs", "rhs"},
         .keys = {"transpose_a", "transpose_b", "forward_stype"},
         .parse = parser(+[](const Params& p) {
           const std::string stype = p.get_string("forward_stype", "None");
           NANOMX_CHECK(stype == "None" || stype == "default")
               << "batch_dot: attribute 'forward_stype' = '" << stype
               << "' (only default storage is supported)";
           return DotParams{p.get_bool("transpose_a", false), p.get_bool("transpose_b", false)};
         }),
         .infer_shape =
             [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (!in[0].known() || !in[1].known()) return;
               Shape s;
               batch_dot_dims(p.get<DotParams>(), in[0].shape(), in[1].shape(), &s, nullptr);
               out[0] = s;
             },
         .infer_type =
             [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
               NANOMX_CHECK(!in[0] || !in[1] || in[0] == in[1])
                   << "batch_dot: 'lhs' has dtype " << dtype_name(*in[0]) << " but 'rhs' has "
                   << dtype_name(*in[1]);
               out[0] = in[0] ? in[0] : in[1];
             },
         .backward = {.inputs = {0, 1}}});
}

}  // namespace nanomx::ops
