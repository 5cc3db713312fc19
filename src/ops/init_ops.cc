// Definitions of the creation operators added for MXNet parity: _arange, _linspace, _eye,
// zeros_like and ones_like, with MXNet 1.9.1's parameters and defaults
// (docs/mxnet-compat.md#operators). CPU kernels: cpu/init_ops.cc.
#include <cmath>

#include "ops/registry.h"
#include "ops/shape_params.h"

namespace nanomx::ops {
namespace {

void common_init(const Params& p, RangeParams& r) {
  r.dtype = p.get_dtype("dtype", DType::kFloat32);
  r.ctx = parse_ctx(p);
}

// The length of MXNet's range: ceil((stop - start) / step) * repeat; empty ranges are errors
// (as in MXNet, whose legacy mode has no zero-size dimension).
int64_t arange_length(const RangeParams& r) {
  const double start = r.stop ? r.start : 0, stop = r.stop ? *r.stop : r.start;
  const double n = std::ceil((stop - start) / r.step);
  NANOMX_CHECK(n > 0 && std::isfinite(n)) << "_arange: Invalid range (start, stop, step) = ("
                                          << start << "," << stop << "," << r.step << ")";
  return static_cast<int64_t>(n) * r.repeat;
}

template <typename F>
Op creation_op(const char* name, std::vector<std::string> keys, RangeParams (*parse)(const Params&),
               F shape_of) {
  return {
      .name = name,
      .inputs = {},
      .keys = std::move(keys),
      .parse = parser(parse),
      .infer_shape =
          [shape_of](const ParsedParams& p, std::span<PartialShape>, std::span<PartialShape> out) {
            const auto& r = p.get<RangeParams>();
            out[0] = shape_of(r, out[0]);
          },
      .infer_type = [](const ParsedParams& p, std::span<PartialDType>,
                       std::span<PartialDType> out) { out[0] = p.get<RangeParams>().dtype; },
      .backward = {.differentiable = false},
      .default_context = [](const ParsedParams& p) { return p.get<RangeParams>().ctx; }};
}

Op like_op(const char* name) {
  return {.name = name,
          .inputs = {"data"},
          .keys = {},
          .infer_shape =
              [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
                PartialShape merged = in[0];
                merge_shape(merged, out[0]);
                in[0] = merged;
                out[0] = merged;
              },
          .backward = {.differentiable = false}};
}

}  // namespace

void register_init_ops(Registry& r) {
  r.add(creation_op(
      "_arange", {"start", "stop", "step", "repeat", "infer_range", "ctx", "dtype"},
      +[](const Params& p) {
        RangeParams a;
        a.start = p.get_float("start");
        if (p.has("stop") && p.get_string("stop") != "None") a.stop = p.get_float("stop");
        a.step = p.get_float("step", 1.0);
        a.repeat = p.get_int("repeat", 1);
        a.infer_range = p.get_bool("infer_range", false);
        NANOMX_CHECK(a.step != 0) << "_arange: Range does not support step=0, received 0";
        NANOMX_CHECK(a.repeat > 0)
            << "_arange: Range only supports repeat > 0, received " << a.repeat;
        common_init(p, a);
        return a;
      },
      [](const RangeParams& a, const PartialShape& given) -> PartialShape {
        // infer_range without stop: the length comes from the output the caller gives.
        if (a.infer_range && !a.stop && given.rank_known()) return given;
        return Shape{arange_length(a)};
      }));
  r.add(creation_op(
      "_linspace", {"start", "stop", "num", "endpoint", "ctx", "dtype"},
      +[](const Params& p) {
        RangeParams a;
        a.start = p.get_float("start");
        a.stop = p.get_float("stop");
        a.num = p.get_int("num");
        NANOMX_CHECK(a.num >= 0) << "_linspace: Number of sequence should be non-negative, "
                                    "received "
                                 << a.num;
        a.endpoint = p.get_bool("endpoint", true);
        common_init(p, a);
        return a;
      },
      [](const RangeParams& a, const PartialShape&) -> PartialShape { return Shape{a.num}; }));
  r.add(creation_op(
      "_eye", {"N", "M", "k", "ctx", "dtype"},
      +[](const Params& p) {
        RangeParams a;
        a.n = p.get_int("N");
        a.m = p.get_int("M", 0);
        a.k = p.get_int("k", 0);
        NANOMX_CHECK(a.n >= 0 && a.m >= 0)
            << "_eye: 'N' (" << a.n << ") and 'M' (" << a.m << ") must be non-negative";
        common_init(p, a);
        return a;
      },
      [](const RangeParams& a, const PartialShape&) -> PartialShape {
        return Shape{a.n, a.m ? a.m : a.n};
      }));
  r.add(like_op("zeros_like"));
  r.add(like_op("ones_like"));
}

}  // namespace nanomx::ops
