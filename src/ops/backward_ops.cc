// The backward operators the gradient rules (gradient_rules.cc) add, with MXNet 1.x's names
// (they appear in profiles): _backward_FullyConnected, _backward_Activation,
// _backward_SoftmaxOutput, _backward_linear_reg_out, _backward_dot, _backward_batch_dot,
// _backward_softmax / _backward_log_softmax / _backward_softmin, the elementwise and broadcast
// binary backwards, the unary math backwards, _backward_sum / _backward_mean,
// _broadcast_backward, _backward_copy, _backward_reshape and _backward_cast. Each takes its
// forward operator's attributes (a rule copies them) and infers every shape from its own inputs,
// so a gradient graph is planned like any other. CPU kernels: backends/cpu/kernels/backward.cc; the
// formulas are MXNet's (docs/mxnet-compat.md, docs/symbolic.md#gradients).
#include "ops/backward_ops.h"

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "ops/nn.h"
#include "ops/op_params.h"
#include "ops/registry.h"
#include "ops/unary_math.h"

namespace nanomx::ops {

std::span<const UnaryGrad> unary_grads() {
  using std::numbers::pi;
  using unary_math::kLn10, unary_math::kLn2, unary_math::kPi;
  // clang-format off
  static const UnaryGrad kTable[] = {
      // The unary math operators with a derivative (ops/unary_math.h).
#define MATH(f) std::f
#define NANOMX_UNARY_GRAD_ROW(name, Enum, integers, value, grad, derivative)                 \
  NANOMX_UNARY_IF_DERIVATIVE(grad, {#name, "_backward_" #name,                                \
                                    unary_math::grad == unary_math::kFromOutput, false,       \
                                    []([[maybe_unused]] double v, double) { return double(derivative); }}, )
      NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_GRAD_ROW)
#undef NANOMX_UNARY_GRAD_ROW
#undef MATH
      // clang-format on
      {"sqrt", "_backward_sqrt", true, false, [](double y, double) { return 0.5 / y; }},
      {"square", "_backward_square", false, false, [](double x, double) { return 2 * x; }},
      // d(s / x) = -s / x^2.
      {"_rdiv_scalar", "_backward_rdiv_scalar", false, true,
       [](double x, double s) { return -s / (x * x); }},
      {"_power_scalar", "_backward_power_scalar", false, true,
       [](double x, double s) { return s * std::pow(x, s - 1); }},
      // d(s^x) = s^x ln s (from the input: the operator's declared needs).
      {"_rpower_scalar", "_backward_rpower_scalar", false, true,
       [](double x, double s) { return std::pow(s, x) * std::log(s); }},
      {"_maximum_scalar", "_backward_maximum_scalar", false, true,
       [](double x, double s) { return x >= s ? 1.0 : 0.0; }},
      {"_minimum_scalar", "_backward_minimum_scalar", false, true,
       [](double x, double s) { return x <= s ? 1.0 : 0.0; }},
      {"_hypot_scalar", "_backward_hypot_scalar", false, true,
       [](double x, double s) { return x / std::hypot(x, s); }},
      {"_mod_scalar", "_backward_mod_scalar", false, true, [](double, double) { return 1.0; }},
      {"_rmod_scalar", "_backward_rmod_scalar", false, true,
       [](double x, double s) { return -std::floor(s / x); }},
  };
  return kTable;
}

namespace {

void add_d(double, double, double& dl, double& dr) { dl = 1, dr = 1; }
void sub_d(double, double, double& dl, double& dr) { dl = 1, dr = -1; }
void mul_d(double l, double r, double& dl, double& dr) { dl = r, dr = l; }
void div_d(double l, double r, double& dl, double& dr) { dl = 1 / r, dr = -l / (r * r); }
void power_d(double l, double r, double& dl, double& dr) {
  dl = r * std::pow(l, r - 1);
  dr = std::pow(l, r) * std::log(l);
}
void maximum_d(double l, double r, double& dl, double& dr) {
  dl = l >= r ? 1 : 0;
  dr = l >= r ? 0 : 1;
}
void minimum_d(double l, double r, double& dl, double& dr) {
  dl = l <= r ? 1 : 0;
  dr = l <= r ? 0 : 1;
}
void hypot_d(double l, double r, double& dl, double& dr) {
  const double h = std::hypot(l, r);
  dl = l / h;
  dr = r / h;
}
void mod_d(double l, double r, double& dl, double& dr) {
  dl = 1;
  dr = -std::floor(l / r);
}

}  // namespace

std::span<const BinaryGrad> binary_grads() {
  static const BinaryGrad kTable[] = {
      {"elemwise_sub", "_backward_sub", false, false, sub_d},
      {"elemwise_mul", "_backward_mul", false, true, mul_d},
      {"elemwise_div", "_backward_div", false, true, div_d},
      {"_power", "_backward_power", false, true, power_d},
      {"_maximum", "_backward_maximum", false, true, maximum_d},
      {"_minimum", "_backward_minimum", false, true, minimum_d},
      {"_hypot", "_backward_hypot", false, true, hypot_d},
      {"_mod", "_backward_mod", false, true, mod_d},
      {"broadcast_add", "_backward_broadcast_add", true, true, add_d},
      {"broadcast_sub", "_backward_broadcast_sub", true, true, sub_d},
      {"broadcast_mul", "_backward_broadcast_mul", true, true, mul_d},
      {"broadcast_div", "_backward_broadcast_div", true, true, div_d},
      {"broadcast_power", "_backward_broadcast_power", true, true, power_d},
      {"broadcast_maximum", "_backward_broadcast_maximum", true, true, maximum_d},
      {"broadcast_minimum", "_backward_broadcast_minimum", true, true, minimum_d},
      {"broadcast_hypot", "_backward_broadcast_hypot", true, true, hypot_d},
      {"broadcast_mod", "_backward_broadcast_mod", true, true, mod_d},
  };
  return kTable;
}

// Merges every slot in `slots` into one shape; a disagreement names the operator, both
// arguments and their shapes.
void merge_all(const std::string& op, std::span<PartialShape* const> slots,
               std::span<const std::string> names) {
  PartialShape merged;
  size_t first = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i]->rank_known()) continue;
    if (!merged.rank_known()) first = i;
    NANOMX_CHECK(merge_shape(merged, *slots[i]))
        << op << ": shapes of '" << names[first] << "' " << *slots[first] << " and '" << names[i]
        << "' " << *slots[i] << " differ";
  }
  for (PartialShape* s : slots) *s = merged;
}

// Output j takes input like[j]'s shape (both ways); the rest of the inputs are free.
void outputs_like(const std::string& op, const std::vector<std::string>& in_names,
                  std::span<PartialShape> in, std::span<PartialShape> out,
                  const std::vector<int>& like) {
  for (size_t j = 0; j < out.size() && j < like.size(); ++j) {
    const auto i = static_cast<size_t>(like[j]);
    PartialShape* slots[] = {&in[i], &out[j]};
    const std::string names[] = {in_names[i], in_names[i] + "'s gradient"};
    merge_all(op, slots, names);
  }
}

// The incoming gradient must have the shape the forward operator gives for `fwd_in` (filled in
// when unknown). Names the backward operator, the forward one and every shape involved.
void check_out_grad(const Op& fwd, const ParsedParams& p, std::vector<PartialShape> fwd_in,
                    PartialShape& dy, const std::string& bwd) {
  for (const PartialShape& s : fwd_in) {
    if (!s.known()) return;
  }
  std::vector<PartialShape> fwd_out(static_cast<size_t>(fwd.outputs_of(p)));
  fwd.infer_shape(p, fwd_in, fwd_out);
  if (!fwd_out[0].rank_known()) return;
  if (!dy.rank_known()) {
    dy = fwd_out[0];
    return;
  }
  PartialShape merged = dy;
  NANOMX_CHECK(merge_shape(merged, fwd_out[0]))
      << bwd << ": 'out_grad' has shape " << dy << ", but " << fwd.name << " of inputs "
      << shape_list(std::span<const PartialShape>(fwd_in)) << " gives " << fwd_out[0];
  dy = merged;
}

// Every input and output of one floating-point dtype (float16, float32, float64): the gradient
// kernels' dtypes, refused at inference, before anything runs. A device's kernel may refuse
// more (the CPU's matrix-product gradients take no float16), naming the dtype.
InferTypeFn float_types(const std::string& op) {
  return [op](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
    PartialDType t;
    for (const PartialDType& d : in) {
      if (!d) continue;
      if (!t) t = d;
      NANOMX_CHECK(*t == *d) << op << ": inputs have dtypes " << dtype_name(*t) << " and "
                             << dtype_name(*d) << "; they must agree";
    }
    for (size_t j = 0; j < out.size() && !t; ++j) t = out[j];
    if (!t) return;
    NANOMX_CHECK(*t == DType::kFloat32 || *t == DType::kFloat64 || *t == DType::kFloat16)
        << op << ": gradients are computed for float16, float32 and float64, got "
        << dtype_name(*t);
    for (PartialDType& d : in) d = t;
    for (PartialDType& d : out) d = t;
  };
}

// Registers a backward op whose values all share one floating-point dtype.
void add_float(Registry& r, Op op) {
  op.infer_type = float_types(op.name);
  r.add(std::move(op));
}

const Op& fwd_op(const char* name) {
  const Op* op = find_op(name);
  NANOMX_CHECK(op != nullptr) << "backward operators: forward operator '" << name
                              << "' is not registered";
  return *op;
}

// A backward op that takes its forward op's attributes.
Op with_attrs_of(const Op& fwd, Op op) {
  op.keys = fwd.keys;
  op.parse = fwd.parse;
  return op;
}

namespace {

void register_unary_backward(Registry& r) {
  for (const UnaryGrad& u : unary_grads()) {
    const std::string name = u.backward;
    const bool from_output = u.from_output;
    Op op{.name = name,
          .inputs = {"out_grad", u.from_output ? "output" : "data"},
          .infer_shape =
              [name, from_output](const ParsedParams&, std::span<PartialShape> in,
                                  std::span<PartialShape> out) {
                PartialShape* slots[] = {&in[0], &in[1], &out[0]};
                const std::string names[] = {"out_grad", from_output ? "output" : "data",
                                             "data_grad"};
                merge_all(name, slots, names);
              },
          .inplace = {{0, 0}, {1, 0}},
          .backward = {.differentiable = false}};
    if (u.scalar) {
      op.keys = {"scalar"};
      op.parse = parser(+[](const Params& p) { return ScalarParams{p.get_float("scalar")}; });
    }
    add_float(r, std::move(op));
  }
}

void register_binary_backward(Registry& r) {
  for (const BinaryGrad& g : binary_grads()) {
    const std::string name = g.backward;
    const bool broadcast = g.broadcast;
    if (!g.needs_inputs) {
      // _backward_sub: (dy) -> (dy, -dy), equal shapes.
      add_float(r, {.name = name,
                    .inputs = {"out_grad"},
                    .infer_shape =
                        [name](const ParsedParams&, std::span<PartialShape> in,
                               std::span<PartialShape> out) {
                          PartialShape* slots[] = {&in[0], &out[0], &out[1]};
                          const std::string names[] = {"out_grad", "lhs_grad", "rhs_grad"};
                          merge_all(name, slots, names);
                        },
                    .num_outputs = [](const ParsedParams&) { return 2; },
                    .output_names =
                        [](const ParsedParams&) {
                          return std::vector<std::string>{"lhs_grad", "rhs_grad"};
                        },
                    .inplace = {{0, 0}},
                    .backward = {.differentiable = false}});
      continue;
    }
    add_float(r,
              {.name = name,
               .inputs = {"out_grad", "lhs", "rhs"},
               .infer_shape =
                   [name, broadcast](const ParsedParams&, std::span<PartialShape> in,
                                     std::span<PartialShape> out) {
                     if (broadcast) {
                       if (in[1].rank_known() && in[2].rank_known()) {
                         const PartialShape b = broadcast_shapes(name, in[1], in[2]);
                         PartialShape merged = in[0].rank_known() ? in[0] : b;
                         NANOMX_CHECK(merge_shape(merged, b))
                             << name << ": 'out_grad' has shape " << in[0] << ", but 'lhs' "
                             << in[1] << " and 'rhs' " << in[2] << " broadcast to " << b;
                         in[0] = merged;
                       }
                       out[0] = in[1];
                       out[1] = in[2];
                       return;
                     }
                     PartialShape* slots[] = {&in[0], &in[1], &in[2], &out[0], &out[1]};
                     const std::string names[] = {"out_grad", "lhs", "rhs", "lhs_grad", "rhs_grad"};
                     merge_all(name, slots, names);
                   },
               .num_outputs = [](const ParsedParams&) { return 2; },
               .output_names =
                   [](const ParsedParams&) {
                     return std::vector<std::string>{"lhs_grad", "rhs_grad"};
                   },
               .backward = {.differentiable = false}});
  }
}

}  // namespace

void register_backward_ops(Registry& r) {
  // (dY, x0 .. xN-1) -> (dx0 .. dxN-1): dY cut back into the inputs' slabs along the axis (the
  // inputs only for their shapes). num_args counts every input, dY included.
  const Op& concat = fwd_op("Concat");
  r.add({.name = "_backward_Concat",
         .inputs = {"args"},
         .keys = concat.keys,
         .num_inputs_key = "num_args",
         .parse = parser(+[](const Params& p) {
           AxisParams a;
           a.axis = p.get_int("dim", 1);
           a.count = p.get_int("num_args");  // the rule always gives it
           return a;
         }),
         .infer_shape =
             [&concat](const ParsedParams& p, std::span<PartialShape> in,
                       std::span<PartialShape> out) {
               NANOMX_CHECK(in.size() >= 2 && out.size() == in.size() - 1)
                   << "_backward_Concat: takes the output gradient and the forward inputs, got "
                   << in.size() << " input(s)";
               std::vector<PartialShape> fwd_in(in.begin() + 1, in.end());
               check_out_grad(concat, p, fwd_in, in[0], "_backward_Concat");
               for (size_t i = 0; i < out.size(); ++i) out[i] = in[i + 1];
             },
         .num_outputs =
             [](const ParsedParams& p) { return static_cast<int>(p.get<AxisParams>().count) - 1; },
         .backward = {.differentiable = false}});

  const Op& fc = fwd_op("FullyConnected");
  // (dY, X, W) -> (dX, dW[, db]).
  add_float(r, with_attrs_of(
                   fc, {.name = "_backward_FullyConnected",
                        .inputs = {"out_grad", "data", "weight"},
                        .infer_shape =
                            [&fc](const ParsedParams& p, std::span<PartialShape> in,
                                  std::span<PartialShape> out) {
                              const auto& f = p.get<FullyConnectedParams>();
                              const std::string name = "_backward_FullyConnected";
                              std::vector<PartialShape> fwd_in = {in[1], in[2]};
                              if (!f.no_bias) fwd_in.emplace_back(Shape{f.num_hidden});
                              check_out_grad(fc, p, fwd_in, in[0], name);
                              if (in[1].known() && in[2].known()) {
                                // The forward inference also checks the weight against the data.
                                std::vector<PartialShape> o(1);
                                fc.infer_shape(p, fwd_in, o);
                              }
                              const std::vector<std::string> names = {"out_grad", "data", "weight"};
                              outputs_like(name, names, in, out, {1, 2});
                              if (!f.no_bias) out[2] = Shape{f.num_hidden};
                            },
                        .num_outputs =
                            [](const ParsedParams& p) {
                              return p.get<FullyConnectedParams>().no_bias ? 2 : 3;
                            },
                        .output_names =
                            [](const ParsedParams& p) {
                              std::vector<std::string> n = {"data_grad", "weight_grad"};
                              if (!p.get<FullyConnectedParams>().no_bias)
                                n.emplace_back("bias_grad");
                              return n;
                            },
                        // dX is written last, after dW has read X.
                        .inplace = {{1, 0}},
                        .backward = {.differentiable = false}}));

  // relu: (dy, y); the others (dy, y, x).
  add_float(
      r,
      with_attrs_of(
          fwd_op("Activation"),
          {.name = "_backward_Activation",
           .inputs = {"out_grad", "output", "data"},
           .infer_shape =
               [](const ParsedParams& p, std::span<PartialShape> in, std::span<PartialShape> out) {
                 const size_t want = p.get<ActivationParams>().act == ActType::kRelu ? 2 : 3;
                 NANOMX_CHECK(in.size() == want)
                     << "_backward_Activation: expected " << want << " input(s), got " << in.size()
                     << " (relu takes (out_grad, output), the others (out_grad, output, data))";
                 std::vector<PartialShape*> slots;
                 for (PartialShape& s : in) slots.push_back(&s);
                 slots.push_back(&out[0]);
                 const std::string names[] = {"out_grad", "output", "data", "data_grad"};
                 std::vector<std::string> used(names, names + in.size());
                 used.push_back(names[3]);
                 merge_all("_backward_Activation", slots, used);
               },
           .input_names =
               [](const ParsedParams& p) {
                 if (p.get<ActivationParams>().act == ActType::kRelu) {
                   return std::vector<std::string>{"out_grad", "output"};
                 }
                 return std::vector<std::string>{"out_grad", "output", "data"};
               },
           .inplace = {{0, 0}},
           .backward = {.differentiable = false}}));

  const Op& softmax_output = fwd_op("SoftmaxOutput");
  // (output, label) -> (d_data, d_label); the incoming gradient is not an input (MXNet).
  r.add(with_attrs_of(
      softmax_output,
      {.name = "_backward_SoftmaxOutput",
       .inputs = {"output", "label"},
       .infer_shape =
           [&softmax_output](const ParsedParams& p, std::span<PartialShape> in,
                             std::span<PartialShape> out) {
             // The forward inference relates the label to the data (the output's shape).
             std::vector<PartialShape> fin = {in[0], in[1]}, fout = {out[0]};
             softmax_output.infer_shape(p, fin, fout);
             in[0] = fin[0];
             in[1] = fin[1];
             out[0] = fin[0];
             out[1] = fin[1];
           },
       .infer_type =
           [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
             if (!out[0]) out[0] = in[0];
             if (!out[1]) out[1] = in[1] ? in[1] : in[0];
           },
       .num_outputs = [](const ParsedParams&) { return 2; },
       .output_names =
           [](const ParsedParams&) {
             return std::vector<std::string>{"data_grad", "label_grad"};
           },
       .inplace = {{0, 0}},
       .backward = {.differentiable = false}}));

  const Op& linreg = fwd_op("LinearRegressionOutput");
  // (label, output) -> (d_data, d_label), MXNet's input order.
  r.add(with_attrs_of(
      linreg,
      {.name = "_backward_linear_reg_out",
       .inputs = {"label", "output"},
       .infer_shape =
           [&linreg](const ParsedParams& p, std::span<PartialShape> in,
                     std::span<PartialShape> out) {
             std::vector<PartialShape> fin = {in[1], in[0]}, fout = {PartialShape()};
             linreg.infer_shape(p, fin, fout);
             in[1] = fin[0];
             in[0] = fin[1];
             out[0] = fin[0];
             out[1] = fin[1];
           },
       .infer_type =
           [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
             if (!out[0]) out[0] = in[1];
             if (!out[1]) out[1] = in[0] ? in[0] : in[1];
           },
       .num_outputs = [](const ParsedParams&) { return 2; },
       .output_names =
           [](const ParsedParams&) {
             return std::vector<std::string>{"data_grad", "label_grad"};
           },
       .inplace = {{1, 0}},
       .backward = {.differentiable = false}}));

  for (const char* fwd_name : {"dot", "batch_dot"}) {
    const Op& fwd = fwd_op(fwd_name);
    const std::string name = std::string("_backward_") + fwd_name;
    // (dC, A, B) -> (dA, dB).
    add_float(r, with_attrs_of(
                     fwd, {.name = name,
                           .inputs = {"out_grad", "lhs", "rhs"},
                           .infer_shape =
                               [&fwd, name](const ParsedParams& p, std::span<PartialShape> in,
                                            std::span<PartialShape> out) {
                                 check_out_grad(fwd, p, {in[1], in[2]}, in[0], name);
                                 outputs_like(name, {"out_grad", "lhs", "rhs"}, in, out, {1, 2});
                               },
                           .num_outputs = [](const ParsedParams&) { return 2; },
                           .output_names =
                               [](const ParsedParams&) {
                                 return std::vector<std::string>{"lhs_grad", "rhs_grad"};
                               },
                           .backward = {.differentiable = false}}));
  }

  for (const char* fwd_name : {"softmax", "log_softmax", "softmin"}) {
    const std::string name = std::string("_backward_") + fwd_name;
    // (dy, y), or (dy, x, y) when the forward call gave an output dtype (the gradient then
    // takes x's dtype, as MXNet's).
    r.add(with_attrs_of(
        fwd_op(fwd_name),
        {.name = name,
         .inputs = {"out_grad", "data", "output"},
         .infer_shape =
             [name](const ParsedParams& p, std::span<PartialShape> in,
                    std::span<PartialShape> out) {
               const size_t want = p.get<SoftmaxParams>().dtype ? 3 : 2;
               NANOMX_CHECK(in.size() == want)
                   << name << ": expected " << want << " input(s), got " << in.size()
                   << " ((out_grad, output), or (out_grad, data, output) with a dtype)";
               std::vector<PartialShape*> slots;
               for (PartialShape& s : in) slots.push_back(&s);
               slots.push_back(&out[0]);
               std::vector<std::string> names = {"out_grad"};
               if (in.size() == 3) names.emplace_back("data");
               names.emplace_back("output");
               names.emplace_back("data_grad");
               merge_all(name, slots, names);
             },
         .infer_type =
             [name](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
               for (const PartialDType& d : in) {
                 NANOMX_CHECK(!d || is_float_dtype(*d))
                     << name << ": gradients are computed for float16, float32 and float64, got "
                     << dtype_name(*d);
               }
               if (!out[0]) out[0] = in[1];
             },
         .input_names =
             [](const ParsedParams& p) {
               if (p.get<SoftmaxParams>().dtype) {
                 return std::vector<std::string>{"out_grad", "data", "output"};
               }
               return std::vector<std::string>{"out_grad", "output"};
             },
         .inplace = {{0, 0}},
         .backward = {.differentiable = false}}));
  }

  for (const char* fwd_name : {"sum", "mean"}) {
    const Op& fwd = fwd_op(fwd_name);
    const std::string name = std::string("_backward_") + fwd_name;
    // (dy, data) -> d_data: dy spread over the reduced axes (divided by their size for mean).
    add_float(
        r, with_attrs_of(fwd, {.name = name,
                               .inputs = {"out_grad", "data"},
                               .infer_shape =
                                   [&fwd, name](const ParsedParams& p, std::span<PartialShape> in,
                                                std::span<PartialShape> out) {
                                     check_out_grad(fwd, p, {in[1]}, in[0], name);
                                     outputs_like(name, {"out_grad", "data"}, in, out, {1});
                                   },
                               .backward = {.differentiable = false}}));
  }

  // (dy, data) -> dy summed over the axes data was broadcast along (broadcast_to's gradient;
  // data's dims are right-aligned to dy's).
  add_float(r,
            {.name = "_broadcast_backward",
             .inputs = {"out_grad", "data"},
             .keys = fwd_op("broadcast_to").keys,
             .infer_shape =
                 [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
                   if (in[0].rank_known() && in[1].rank_known()) {
                     const PartialShape b = broadcast_shapes("_broadcast_backward", in[0], in[1]);
                     NANOMX_CHECK(b == in[0] || !b.known() || !in[0].known())
                         << "_broadcast_backward: 'data' " << in[1]
                         << " does not broadcast to 'out_grad' " << in[0];
                   }
                   outputs_like("_broadcast_backward", {"out_grad", "data"}, in, out, {1});
                 },
             .backward = {.differentiable = false}});

  r.add({.name = "_backward_copy",
         .inputs = {"out_grad"},
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               outputs_like("_backward_copy", {"out_grad"}, in, out, {0});
             },
         .inplace = {{0, 0}},
         .backward = {.differentiable = false}});

  // (dy, data) -> dy in data's shape (Reshape, Flatten, expand_dims, squeeze).
  r.add({.name = "_backward_reshape",
         .inputs = {"out_grad", "data"},
         .keys = fwd_op("Reshape").keys,
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               if (in[0].known() && in[1].known()) {
                 NANOMX_CHECK(in[0].shape().size() == in[1].shape().size())
                     << "_backward_reshape: 'out_grad' " << in[0] << " has " << in[0].shape().size()
                     << " elements, 'data' " << in[1] << " has " << in[1].shape().size();
               }
               outputs_like("_backward_reshape", {"out_grad", "data"}, in, out, {1});
             },
         .inplace = {{0, 0}},
         .backward = {.differentiable = false}});

  // (dy, data) -> dy cast to data's dtype (Cast's gradient).
  r.add({.name = "_backward_cast",
         .inputs = {"out_grad", "data"},
         .keys = fwd_op("Cast").keys,
         .infer_shape =
             [](const ParsedParams&, std::span<PartialShape> in, std::span<PartialShape> out) {
               PartialShape* slots[] = {&in[0], &in[1], &out[0]};
               const std::string names[] = {"out_grad", "data", "data_grad"};
               merge_all("_backward_cast", slots, names);
             },
         .infer_type =
             [](const ParsedParams&, std::span<PartialDType> in, std::span<PartialDType> out) {
               if (!out[0]) out[0] = in[1];
             },
         .backward = {.differentiable = false}});

  // (dy, x) -> dy where a_min <= x <= a_max, else 0.
  add_float(r, with_attrs_of(fwd_op("clip"),
                             {.name = "_backward_clip",
                              .inputs = {"out_grad", "data"},
                              .infer_shape =
                                  [](const ParsedParams&, std::span<PartialShape> in,
                                     std::span<PartialShape> out) {
                                    PartialShape* slots[] = {&in[0], &in[1], &out[0]};
                                    const std::string names[] = {"out_grad", "data", "data_grad"};
                                    merge_all("_backward_clip", slots, names);
                                  },
                              .inplace = {{0, 0}, {1, 0}},
                              .backward = {.differentiable = false}}));

  register_unary_backward(r);
  register_binary_backward(r);
}

}  // namespace nanomx::ops
