// Creation operator definitions: _zeros, _ones, _full, _zeros_without_dtype, _arange,
// _linspace, _eye, zeros_like and ones_like, with MXNet 1.9.1's parameters and defaults
// (docs/mxnet-compat.md#operators). CPU kernels: backends/cpu/kernels/init.cc.
#include <cmath>

#include "ops/op_params.h"
#include "ops/registry.h"

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

FillParams parse_fill(const Params& p, double value) {
  FillParams f;
  if (p.has("shape")) f.shape = p.get_shape("shape");
  if (p.has("dtype")) {
    const DType d = p.get_dtype("dtype", DType::kFloat32);
    if (p.get_string("dtype") != "None") f.dtype = d;
  }
  f.value = value;
  f.ctx = parse_ctx(p);
  return f;
}

// `keep_out_dtype`: without a dtype attribute a known output dtype stays (else float32).
void register_fill(Registry& r, const char* name, std::vector<std::string> keys,
                   FillParams (*parse)(const Params&), bool keep_out_dtype = false) {
  r.add({.name = name,
         .inputs = {},
         .keys = std::move(keys),
         .parse = parser(parse),
         .infer_shape = shape_from_attribute<FillParams>,
         .infer_type =
             [keep_out_dtype](const ParsedParams& p, std::span<PartialDType>,
                              std::span<PartialDType> out) {
               const auto& f = p.get<FillParams>();
               if (f.dtype) {
                 out[0] = f.dtype;
               } else if ((f.shape && !keep_out_dtype) || !out[0]) {
                 out[0] = DType::kFloat32;
               }
             },
         .backward = {.differentiable = false},
         .default_context = [](const ParsedParams& p) { return p.get<FillParams>().ctx; }});
}

}  // namespace

void register_init_ops(Registry& r) {
  register_fill(
      r, "_full", {"shape", "dtype", "value", "ctx"},
      +[](const Params& p) { return parse_fill(p, p.get_float("value")); });
  register_fill(
      r, "_zeros", {"shape", "dtype", "ctx"}, +[](const Params& p) { return parse_fill(p, 0.0); });
  register_fill(
      r, "_ones", {"shape", "dtype", "ctx"}, +[](const Params& p) { return parse_fill(p, 1.0); });
  // Zeros whose dtype, when not given (or MXNet's -1), comes from the graph (the output slot)
  // rather than a float32 default: a gradient graph's "no gradient at all" entry.
  register_fill(
      r, "_zeros_without_dtype", {"shape", "dtype", "ctx"},
      +[](const Params& p) {
        if (p.has("dtype") && p.get_string("dtype") == "-1") {
          FillParams f;
          if (p.has("shape")) f.shape = p.get_shape("shape");
          f.ctx = parse_ctx(p);
          return f;
        }
        return parse_fill(p, 0.0);
      },
      true);
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
