// Math operator definitions with MXNet 1.x's names: unary math (exp, log, trigonometric and
// hyperbolic functions, rounding, erf, gamma, sigmoid, relu, logical_not), the binary math and
// comparison operators in their broadcast_*, elementwise (_power, _equal, ...) and scalar
// (_power_scalar, _equal_scalar, ...) forms. Every one
// keeps the input dtype (comparisons give 1 and 0 in it), as docs/mxnet-compat.md#operators
// says. The unary ones are generated from ops/unary_math.h. CPU kernels:
// backends/cpu/kernels/math.cc.
#include <string>
#include <vector>

#include "ops/op_params.h"
#include "ops/registry.h"
#include "ops/unary_math.h"

namespace nanomx::ops {
namespace {

bool broadcast_known_pair(const ParsedParams&, std::span<const Shape* const> in,
                          std::span<Shape> out) {
  return broadcast_known(*in[0], *in[1], out[0]);
}

// The unary math operators (ops/unary_math.h) and what their gradients read.
struct UnaryMathOp {
  const char* name;
  unary_math::Grad grad;
};
constexpr UnaryMathOp kUnaryMath[] = {
#define NANOMX_UNARY_DEFINITION(name, Enum, integers, value, grad, derivative) \
  {#name, unary_math::grad},
    NANOMX_UNARY_MATH_OPS(NANOMX_UNARY_DEFINITION)
#undef NANOMX_UNARY_DEFINITION
};

BackwardNeeds unary_needs(unary_math::Grad grad) {
  switch (grad) {
    case unary_math::kFromInput:
      return {.inputs = {0}};
    case unary_math::kFromOutput:
    case unary_math::kSpecial:  // exp: dy * y
      return {.outputs = {0}};
    default:
      return {};
  }
}

// The binary operators: MXNet's broadcast name, the elementwise twin's suffix and CamelCase
// alias, the scalar names (with their CamelCase aliases), and whether a gradient flows.
struct BinaryNames {
  const char* op;  // "power": broadcast_power, _power, _power_scalar
  const char* camel;
  const char* scalar_camel;
  bool reversed;  // has an _r<op>_scalar (s op x)
  const char* rscalar_camel;
  bool differentiable;
};
const BinaryNames kBinary[] = {
    {"power", "_Power", "_PowerScalar", true, "_RPowerScalar", true},
    {"maximum", "_Maximum", "_MaximumScalar", false, nullptr, true},
    {"minimum", "_Minimum", "_MinimumScalar", false, nullptr, true},
    {"mod", "_Mod", "_ModScalar", true, "_RModScalar", true},
    {"hypot", "_Hypot", "_HypotScalar", false, nullptr, true},
    {"equal", "_Equal", "_EqualScalar", false, nullptr, false},
    {"not_equal", "_Not_Equal", "_NotEqualScalar", false, nullptr, false},
    {"greater", "_Greater", "_GreaterScalar", false, nullptr, false},
    {"greater_equal", "_Greater_Equal", "_GreaterEqualScalar", false, nullptr, false},
    {"lesser", "_Lesser", "_LesserScalar", false, nullptr, false},
    {"lesser_equal", "_Lesser_Equal", "_LesserEqualScalar", false, nullptr, false},
    {"logical_and", "_Logical_And", "_LogicalAndScalar", false, nullptr, false},
    {"logical_or", "_Logical_Or", "_LogicalOrScalar", false, nullptr, false},
    {"logical_xor", "_Logical_Xor", "_LogicalXorScalar", false, nullptr, false},
};

BackwardNeeds binary_needs(bool differentiable) {
  if (!differentiable) return {.differentiable = false};
  return {.inputs = {0, 1}};
}

void register_scalar(Registry& r, std::string name, const char* camel, bool differentiable) {
  register_same_shape(
      r,
      {.name = std::move(name),
       .inputs = {"data"},
       .keys = {"scalar"},
       .parse = parser(+[](const Params& p) { return ScalarParams{p.get_float("scalar")}; }),
       .inplace = {{0, 0}},
       .backward =
           differentiable ? BackwardNeeds{.inputs = {0}} : BackwardNeeds{.differentiable = false}},
      {camel});
}

}  // namespace

void register_math_ops(Registry& r) {
  for (const UnaryMathOp& u : kUnaryMath) {
    register_same_shape(
        r,
        {.name = u.name, .inputs = {"data"}, .inplace = {{0, 0}}, .backward = unary_needs(u.grad)});
  }

  for (const BinaryNames& b : kBinary) {
    const std::string op = b.op;
    const std::string broadcast = "broadcast_" + op;
    r.add({.name = broadcast,
           .inputs = {"lhs", "rhs"},
           .keys = {},
           .infer_shape =
               [broadcast](const ParsedParams&, std::span<PartialShape> in,
                           std::span<PartialShape> out) {
                 out[0] = broadcast_shapes(broadcast, in[0], in[1]);
               },
           .infer_shape_known = &broadcast_known_pair,
           .inplace = {{0, 0}, {1, 0}},
           .backward = binary_needs(b.differentiable)});
    register_same_shape(r,
                        {.name = "_" + op,
                         .inputs = {"lhs", "rhs"},
                         .inplace = {{0, 0}, {1, 0}},
                         .backward = binary_needs(b.differentiable)},
                        {b.camel});
    register_scalar(r, "_" + op + "_scalar", b.scalar_camel, b.differentiable);
    if (b.reversed) register_scalar(r, "_r" + op + "_scalar", b.rscalar_camel, true);
  }
}

}  // namespace nanomx::ops
