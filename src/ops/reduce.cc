// Reduction definitions: sum, mean, prod, nansum, nanprod, max, min, norm over an axis tuple,
// with keepdims / exclude, and MXNet 1.x's (1,) result shape for a reduction over every axis;
// argmax, argmin, argmax_channel (indices in the input dtype). CPU kernels: cpu/reduce.cc.
#include "ops/op_params.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

ReduceParams parse_reduce(const Params& p) {
  ReduceParams r;
  r.axis = p.get_ints("axis");
  r.keepdims = p.get_bool("keepdims", false);
  r.exclude = p.has("exclude") && p.get_bool("exclude", false);
  if (p.has("out_dtype") && p.get_string("out_dtype") != "None") {
    const DType d = p.get_dtype("out_dtype", DType::kFloat32);
    NANOMX_CHECK(d != DType::kUint8)
        << p.op() << ": attribute 'out_dtype' = 'uint8' is not supported (valid: float16, "
        << "float32, float64, int64, int32, int8)";
    r.out_dtype = d;
  }
  if (p.has("ord")) {
    r.ord = static_cast<int>(p.get_int("ord", 2));
    NANOMX_CHECK(r.ord == 1 || r.ord == 2)
        << "norm: attribute 'ord' = " << p.get_int("ord", 2) << " (valid: 1, 2)";
  }
  return r;
}

void infer_reduce(const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out,
                  bool needs_identity) {
  if (!in[0].rank_known()) return;
  const auto& r = p.get<ReduceParams>();
  // The axes depend on the rank only; unknown kept dims stay unknown.
  const int nd = in[0].ndim();
  const ReduceSpec spec = reduce_spec(p.op(), r.axis, r.keepdims, r.exclude,
                                      Shape(std::vector<int64_t>(static_cast<size_t>(nd), 1)));
  PartialShape result;
  if (in[0].known()) {
    const ReduceSpec full = reduce_spec(p.op(), r.axis, r.keepdims, r.exclude, in[0].shape());
    NANOMX_CHECK(!needs_identity || in[0].shape().size() > 0 || full.out.size() == 0)
        << p.op() << ": zero-size reduction of 'data' of shape " << in[0] << " has no identity";
    result = full.out;
  } else {
    std::vector<int64_t> dims;
    for (int i = 0; i < nd; ++i) {
      const bool red = spec.reduced[static_cast<size_t>(i)];
      if (!red || r.keepdims) dims.push_back(red ? 1 : in[0][i]);
    }
    if (dims.empty()) dims.push_back(1);
    result = Shape(dims);
  }
  out[0] = result;
}

// argmax / argmin: `axis` None flattens (output (1,), or ndim ones with keepdims); a 1-D input
// always gives (1,); otherwise the axis is removed, or kept as 1 with keepdims.
ArgReduceParams parse_arg_reduce(const Params& p) {
  ArgReduceParams a;
  if (p.has("axis") && p.get_string("axis") != "None") a.axis = p.get_int("axis");
  a.keepdims = p.get_bool("keepdims", false);
  return a;
}

void infer_arg_reduce(const ParsedParams& p, std::span<PartialShape> in,
                      std::span<PartialShape> out) {
  if (!in[0].rank_known()) return;
  const auto& a = p.get<ArgReduceParams>();
  const int nd = in[0].ndim();
  if (in[0].known()) {
    const Shape& s = in[0].shape();
    NANOMX_CHECK(s.size() > 0 ||
                 (a.axis && nd > 1 && s[normalize_axis(*a.axis, nd, p.op().c_str())] > 0))
        << p.op() << ": cannot search 'data' of shape " << s
        << (a.axis ? " along axis " + std::to_string(*a.axis) : std::string(" (flattened)"))
        << ": the sequence is empty";
  }
  if (!a.axis) {
    out[0] = Shape(std::vector<int64_t>(a.keepdims && nd > 0 ? static_cast<size_t>(nd) : 1, 1));
    return;
  }
  const int axis = normalize_axis(*a.axis, nd, p.op().c_str());
  if (nd == 1) {
    out[0] = Shape{1};
    return;
  }
  PartialShape result = PartialShape::of_rank(a.keepdims ? nd : nd - 1);
  for (int i = 0, j = 0; i < nd; ++i) {
    if (i == axis) {
      if (a.keepdims) result[j++] = 1;
    } else {
      result[j++] = in[0][i];
    }
  }
  out[0] = result;
}

}  // namespace

void register_reduce_ops(Registry& r) {
  const std::vector<std::string> keys = {"axis", "keepdims", "exclude"};
  auto add = [&](const char* name, std::vector<std::string> k, bool identity, BackwardNeeds needs,
                 std::vector<std::string> aliases) -> Op& {
    return r.add(
        {.name = name,
         .inputs = {"data"},
         .keys = std::move(k),
         .parse = parser(parse_reduce),
         .infer_shape = [identity](
                            const ParsedParams& p, std::span<PartialShape> in,
                            std::span<PartialShape> out) { infer_reduce(p, in, out, identity); },
         .backward = std::move(needs)},
        std::move(aliases));
  };
  // Their gradients spread dy over the input's shape: the input is read for its shape.
  add("sum", keys, false, {.inputs = {0}}, {"sum_axis"});
  add("mean", keys, false, {.inputs = {0}}, {});
  add("prod", keys, false, {.inputs = {0}, .outputs = {0}}, {});
  add("nansum", keys, false, {.inputs = {0}}, {});
  add("nanprod", keys, false, {.inputs = {0}, .outputs = {0}}, {});
  add("max", keys, true, {.inputs = {0}, .outputs = {0}}, {"max_axis"});
  add("min", keys, true, {.inputs = {0}, .outputs = {0}}, {"min_axis"});
  Op& norm = add("norm", {"ord", "axis", "out_dtype", "keepdims"}, false,
                 {.inputs = {0}, .outputs = {0}}, {});
  // norm's output dtype: out_dtype when given, else the input's.
  norm.infer_type = [](const ParsedParams& p, std::span<PartialDType> in,
                       std::span<PartialDType> out) {
    const auto& out_dtype = p.get<ReduceParams>().out_dtype;
    if (out_dtype) {
      out[0] = out_dtype;
    } else if (in[0]) {
      out[0] = in[0];
    } else if (out[0]) {
      in[0] = out[0];
    }
  };
  for (const char* name : {"argmax", "argmin"}) {
    r.add({.name = name,
           .inputs = {"data"},
           .keys = {"axis", "keepdims"},
           .parse = parser(parse_arg_reduce),
           .infer_shape = infer_arg_reduce,
           .backward = {.differentiable = false}});
  }
  // argmax along axis 1 (MXNet's parser fixes the axis; it takes no attributes).
  r.add({.name = "argmax_channel",
         .inputs = {"data"},
         .keys = {},
         .parse = parser(+[](const Params&) {
           return ArgReduceParams{1, false};
         }),
         .infer_shape = infer_arg_reduce,
         .backward = {.differentiable = false}});
}

}  // namespace nanomx::ops
