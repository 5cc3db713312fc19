// Math operator definitions with MXNet 1.x's names: unary math (exp, log, trigonometric and
// hyperbolic functions, rounding, erf, gamma, sigmoid, relu, logical_not), the binary math and
// comparison operators in their broadcast_*, elementwise (_power, _equal, ...) and scalar
// (_power_scalar, _equal_scalar, ...) forms, and softmax / log_softmax / softmin. Every one
// keeps the input dtype (comparisons give 1 and 0 in it), as docs/mxnet-compat.md#operators
// says. The unary ones are generated from ops/unary_math.h. CPU kernels:
// backends/cpu/kernels/math.cc.
#include <string>
#include <vector>

#include "ops/math_params.h"
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

SoftmaxParams parse_softmax(const Params& p) {
  SoftmaxParams s;
  s.axis = p.get_int("axis", -1);
  if (p.has("temperature") && p.get_string("temperature") != "None") {
    s.temperature = p.get_float("temperature");
    NANOMX_CHECK(s.temperature != 0) << p.op() << ": attribute 'temperature' must not be 0";
  }
  if (p.has("dtype") && p.get_string("dtype") != "None") {
    s.dtype = p.get_dtype("dtype", DType::kFloat32);
    NANOMX_CHECK(is_float_dtype(*s.dtype))
        << p.op() << ": attribute 'dtype' = '" << dtype_name(*s.dtype)
        << "' is not a floating-point type (valid: float16, float32, float64)";
  }
  NANOMX_CHECK(!p.get_bool("use_length", false))
      << p.op() << ": use_length=True is not supported (nanomx's " << p.op()
      << " takes no 'length' input)";
  return s;
}

// The output has the input's shape; the axis is checked as soon as the rank is known (on the
// calling thread, not in the kernel).
void infer_softmax_shape(const ParsedParams& p, std::span<PartialShape> in,
                         std::span<PartialShape> out) {
  PartialShape merged = in[0];
  NANOMX_CHECK(merge_shape(merged, out[0]))
      << p.op() << ": shapes of 'data' " << in[0] << " and the output " << out[0] << " differ";
  if (merged.rank_known()) {
    normalize_axis(p.get<SoftmaxParams>().axis, merged.ndim(), p.op().c_str());
  }
  in[0] = merged;
  out[0] = merged;
}

void infer_softmax_type(const ParsedParams& p, std::span<PartialDType> in,
                        std::span<PartialDType> out) {
  const auto& s = p.get<SoftmaxParams>();
  if (in[0]) {
    NANOMX_CHECK(is_float_dtype(*in[0])) << p.op() << ": 'data' has dtype " << dtype_name(*in[0])
                                         << "; it takes float16, float32 or float64";
  }
  if (s.dtype) {
    out[0] = s.dtype;
  } else if (in[0]) {
    out[0] = in[0];
  } else if (out[0]) {
    in[0] = out[0];
  }
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

  for (const char* name : {"softmax", "log_softmax", "softmin"}) {
    r.add({.name = name,
           .inputs = {"data"},
           .keys = {"axis", "temperature", "dtype", "use_length"},
           .parse = parser(parse_softmax),
           .infer_shape = infer_softmax_shape,
           .infer_type = infer_softmax_type,
           // The input only for its dtype, when the call gives an output dtype.
           .backward = {.inputs = {0}, .outputs = {0}}});
  }
}

}  // namespace nanomx::ops
