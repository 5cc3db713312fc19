// Elementwise arithmetic definitions: broadcast and elementwise +, -, *, /, scalar arithmetic,
// negative, sqrt, square, clip, casts, copies and add_n. CPU kernels:
// backends/cpu/kernels/elemwise.cc.
#include <sstream>

#include "ops/op_params.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

// Every input and output has one shape: what any of them knows fills the others (backward
// inference included); a disagreement names the operator and both shapes.
void same_shape(const std::string& op, const std::vector<std::string>& inputs, bool variadic,
                std::span<PartialShape> in, std::span<PartialShape> out) {
  // The common case first (the eager call path): inputs known and alike.
  if (!in.empty() && in[0].known()) {
    bool alike = true;
    for (size_t i = 1; i < in.size() && alike; ++i) alike = in[i] == in[0];
    for (size_t j = 0; j < out.size() && alike; ++j) {
      alike = !out[j].rank_known() || out[j] == in[0];
    }
    if (alike) {
      for (PartialShape& o : out) o = in[0];
      return;
    }
  }
  PartialShape merged;
  auto name = [&](size_t i) {
    if (i >= in.size()) return std::string("the output");
    if (variadic) return "'" + inputs[0] + "[" + std::to_string(i) + "]'";
    return "'" + inputs[i] + "'";
  };
  size_t first = 0;
  const size_t n = in.size() + out.size();
  auto slot = [&](size_t i) -> PartialShape& { return i < in.size() ? in[i] : out[i - in.size()]; };
  for (size_t i = 0; i < n; ++i) {
    if (!slot(i).rank_known()) continue;
    if (!merged.rank_known()) first = i;
    NANOMX_CHECK(merge_shape(merged, slot(i)))
        << op << ": shapes of " << name(first) << " " << slot(first) << " and " << name(i) << " "
        << slot(i) << " differ";
  }
  for (size_t i = 0; i < n; ++i) slot(i) = merged;
}

// same_shape's common case on known shapes: every input alike, each output that shape.
bool same_shape_known(const ParsedParams&, std::span<const Shape* const> in, std::span<Shape> out) {
  if (in.empty()) return false;
  const Shape& first = *in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    if (!(*in[i] == first)) return false;
  }
  for (Shape& o : out) o = first;
  return true;
}

bool broadcast_known_2(const ParsedParams&, std::span<const Shape* const> in,
                       std::span<Shape> out) {
  return broadcast_known(*in[0], *in[1], out[0]);
}

}  // namespace

void register_same_shape(Registry& r, Op op, std::vector<std::string> aliases) {
  op.infer_shape_known = &same_shape_known;
  op.infer_shape = [name = op.name, inputs = op.inputs, variadic = op.variadic()](
                       const ParsedParams&, std::span<PartialShape> in,
                       std::span<PartialShape> out) {
    same_shape(name, inputs, variadic, in, out);
  };
  r.add(std::move(op), std::move(aliases));
}

void register_elemwise_ops(Registry& r) {
  for (const char* name : {"broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div"}) {
    const std::string n = name;
    // Every gradient is reduced back to its input's shape: both inputs are read.
    r.add({.name = name,
           .inputs = {"lhs", "rhs"},
           .keys = {},
           .infer_shape =
               [n](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
                 out[0] = broadcast_shapes(n, in[0], in[1]);
               },
           .infer_shape_known = &broadcast_known_2,
           .inplace = {{0, 0}, {1, 0}},
           .backward = {.inputs = {0, 1}}});
  }
  for (const char* name : {"_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar",
                           "_div_scalar", "_rdiv_scalar"}) {
    const std::string n = name;
    register_same_shape(
        r,
        {.name = name,
         .inputs = {"data"},
         .keys = {"scalar"},
         .parse = parser(+[](const Params& p) { return ScalarParams{p.get_float("scalar")}; }),
         .inplace = {{0, 0}},
         .backward = {.inputs = n == "_rdiv_scalar" ? std::vector<int>{0} : std::vector<int>{}}});
  }
  register_same_shape(r, {.name = "negative", .inputs = {"data"}, .inplace = {{0, 0}}});
  register_same_shape(
      r, {.name = "sqrt", .inputs = {"data"}, .inplace = {{0, 0}}, .backward = {.outputs = {0}}});
  register_same_shape(
      r, {.name = "square", .inputs = {"data"}, .inplace = {{0, 0}}, .backward = {.inputs = {0}}});
  register_same_shape(r, {.name = "clip",
                          .inputs = {"data"},
                          .keys = {"a_min", "a_max"},
                          .parse = parser(+[](const Params& p) {
                            const double lo = p.get_float("a_min"), hi = p.get_float("a_max");
                            NANOMX_CHECK(!(lo > hi)) << "clip: a_min (" << lo
                                                     << ") is greater than a_max (" << hi << ")";
                            return ClipParams{lo, hi};
                          }),
                          .inplace = {{0, 0}},
                          .backward = {.inputs = {0}}});
  register_same_shape(
      r,
      {.name = "Cast",
       .inputs = {"data"},
       .keys = {"dtype"},
       .parse = parser(+[](const Params& p) {
         NANOMX_CHECK(p.has("dtype")) << "Cast: required attribute 'dtype' is missing";
         return CastParams{p.get_dtype("dtype", DType::kFloat32)};
       }),
       .infer_type = [](const ParsedParams& p, std::span<PartialDType>,
                        std::span<PartialDType> out) { out[0] = p.get<CastParams>().dtype; },
       .backward = {.inputs = {0}}},  // the gradient takes the input's dtype
      {"cast"});
  r.add({.name = "_copyto",
         .inputs = {"data"},
         .keys = {},
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (in[0].known() && out[0].known()) {
                 NANOMX_CHECK(out[0] == in[0]) << "_copyto: source shape " << in[0]
                                               << " does not match destination shape " << out[0];
               }
               PartialShape merged = in[0];
               merge_shape(merged, out[0]);
               in[0] = merged;
               out[0] = merged;
             },
         // Into the given output converting the dtype, or a new array of the same dtype.
         .infer_type =
             [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
               if (!out[0]) out[0] = in[0];
             }});
  // The elementwise twins of broadcast_*: equal shapes, no broadcasting (MXNet's elemwise_*,
  // which symbol arithmetic emits).
  struct Elemwise {
    const char* name;
    std::vector<std::string> aliases;
    bool needs_inputs;
  };
  for (const Elemwise& e : {Elemwise{"elemwise_add", {"_add", "_plus", "_Plus"}, false},
                            Elemwise{"elemwise_sub", {"_sub", "_minus", "_Minus"}, false},
                            Elemwise{"elemwise_mul", {"_mul", "_Mul"}, true},
                            Elemwise{"elemwise_div", {"_div", "_Div"}, true}}) {
    register_same_shape(
        r,
        {.name = e.name,
         .inputs = {"lhs", "rhs"},
         .inplace = {{0, 0}, {1, 0}},
         .backward = {.inputs = e.needs_inputs ? std::vector<int>{0, 1} : std::vector<int>{}}},
        e.aliases);
  }
  // The gradient graph's own sum of two gradients (MXNet's _grad_add).
  register_same_shape(r,
                      {.name = "_grad_add", .inputs = {"lhs", "rhs"}, .inplace = {{0, 0}, {1, 0}}});
  register_same_shape(r, {.name = "_copy", .inputs = {"data"}, .inplace = {{0, 0}}}, {"identity"});
  // lhs passed through with rhs's shape: how a graph ties a head gradient to its output.
  r.add({.name = "_identity_with_attr_like_rhs",
         .inputs = {"lhs", "rhs"},
         .keys = {},
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               same_shape("_identity_with_attr_like_rhs", {"lhs", "rhs"}, false, in, out);
             },
         .infer_type =
             [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
               if (!in[0]) in[0] = out[0] ? out[0] : in[1];
               out[0] = in[0];
             },
         .inplace = {{0, 0}},
         .backward = {.inputs = {}}});
  // add_n(*args, num_args): the elementwise sum of any number of arrays of one shape and dtype.
  register_same_shape(r,
                      {.name = "add_n",
                       .inputs = {"args"},
                       .keys = {"num_args"},
                       .num_inputs_key = "num_args",
                       .inplace = {{0, 0}},
                       .backward = {}},
                      {"ElementWiseSum"});
}

}  // namespace nanomx::ops
