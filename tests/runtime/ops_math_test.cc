// The math operators (src/ops/math.cc, reduce.cc): shape and dtype inference on partial shapes
// without arrays, their errors, and a few kernels whose MXNet rules numpy does not share
// (mod's sign, rint's ties, integer power, indices in the input dtype).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "nanomx/ops.h"
#include "ops/op.h"
#include "ops/registry.h"
#include "test_util.h"

namespace nanomx::ops {
namespace {

using test::error_of;
using test::make;
using test::values_of;
constexpr int64_t kU = PartialShape::kUnknownDim;

struct Inferred {
  std::vector<PartialShape> in, out;
  std::vector<PartialDType> in_types, out_types;
};

Inferred infer(const std::string& name, std::vector<PartialShape> in,
               std::vector<PartialDType> in_types = {}, const Attrs& attrs = {},
               std::vector<PartialShape> out = {}, std::vector<PartialDType> out_types = {}) {
  const Op& op = get_op(name);
  const ParsedParams p = parse_attrs(op, attrs, in.size());
  const size_t n_out = static_cast<size_t>(op.outputs_of(p));
  out.resize(n_out);
  out_types.resize(n_out);
  if (in_types.empty()) in_types.assign(in.size(), DType::kFloat32);
  infer_shapes(op, p, in, out);
  infer_types(op, p, in_types, out_types);
  return {in, out, in_types, out_types};
}

PartialShape dims(std::initializer_list<int64_t> d) { return Shape(d); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(MathInference, UnaryKeepsShapeAndDtypeBothWays) {
  for (const char* name : {"exp", "log", "abs", "sign", "rint", "gammaln", "logical_not"}) {
    auto r = infer(name, {dims({2, kU})}, {DType::kInt8}, {}, {dims({kU, 3})});
    EXPECT_EQ(r.in[0], dims({2, 3})) << name;
    EXPECT_EQ(r.out[0], dims({2, 3})) << name;
    EXPECT_EQ(r.out_types[0], DType::kInt8) << name;
    EXPECT_NE(get_op(name).infer_shape_known, nullptr) << name;
  }
}

TEST(MathInference, BinaryBroadcastElementwiseAndScalarForms) {
  auto r = infer("broadcast_power", {dims({kU, 1, 3}), dims({4, kU})});
  EXPECT_EQ(r.out[0], dims({kU, 4, 3}));
  r = infer("broadcast_greater", {dims({2, 3}), dims({3})}, {DType::kInt32, DType::kInt32});
  EXPECT_EQ(r.out[0], dims({2, 3}));
  EXPECT_EQ(r.out_types[0], DType::kInt32);  // comparisons give 1 / 0 in the input dtype
  EXPECT_FALSE(infer("broadcast_mod", {PartialShape(), dims({3})}).out[0].rank_known());
  std::string msg = error_of([] { infer("broadcast_maximum", {dims({2, 3}), dims({4, 3})}); });
  EXPECT_TRUE(contains(msg, "broadcast_maximum: shapes of 'lhs' (2,3) and 'rhs' (4,3)")) << msg;
  msg = error_of([] {
    infer("broadcast_equal", {dims({2}), dims({2})}, {DType::kFloat32, DType::kFloat64});
  });
  EXPECT_TRUE(contains(msg, "broadcast_equal")) << msg;
  EXPECT_TRUE(contains(msg, "float64")) << msg;
  // The elementwise twin fills unknown dims from the other input and does not broadcast.
  r = infer("_hypot", {dims({kU, 3}), dims({2, kU})});
  EXPECT_EQ(r.out[0], dims({2, 3}));
  msg = error_of([] { infer("_Equal", {dims({2, 3}), dims({1, 3})}); });
  EXPECT_TRUE(contains(msg, "_equal")) << msg;
  r = infer("_rpower_scalar", {dims({kU, 5})}, {DType::kFloat16}, {{"scalar", "2.0"}});
  EXPECT_EQ(r.out[0], dims({kU, 5}));
  EXPECT_EQ(r.out_types[0], DType::kFloat16);
  msg = error_of([] { infer("_lesser_scalar", {dims({2})}); });
  EXPECT_TRUE(contains(msg, "_lesser_scalar: required attribute 'scalar' is missing")) << msg;
  EXPECT_FALSE(get_op("_greater_scalar").backward.differentiable);
  EXPECT_TRUE(get_op("_power_scalar").backward.differentiable);
}

TEST(MathInference, SoftmaxDtypeAndAxis) {
  auto r = infer("softmax", {dims({2, kU})}, {DType::kFloat16}, {{"dtype", "float64"}});
  EXPECT_EQ(r.out[0], dims({2, kU}));
  EXPECT_EQ(r.out_types[0], DType::kFloat64);
  r = infer("log_softmax", {dims({2, 3})}, {DType::kFloat32},
            {{"axis", "0"}, {"temperature", "None"}, {"dtype", "None"}});
  EXPECT_EQ(r.out_types[0], DType::kFloat32);
  // The output's dtype flows back to an unknown input.
  r = infer("softmin", {dims({3})}, {std::nullopt}, {}, {}, {DType::kFloat64});
  EXPECT_EQ(r.in_types[0], DType::kFloat64);
  std::string msg = error_of([] { infer("softmax", {dims({2, 3})}, {DType::kInt32}); });
  EXPECT_TRUE(contains(msg, "softmax: 'data' has dtype int32")) << msg;
  msg = error_of([] { infer("softmax", {dims({2, 3})}, {}, {{"axis", "2"}}); });
  EXPECT_TRUE(contains(msg, "softmax: axis 2 out of range")) << msg;
  msg = error_of([] { infer("softmax", {dims({2})}, {}, {{"dtype", "int32"}}); });
  EXPECT_TRUE(contains(msg, "not a floating-point type")) << msg;
  msg = error_of([] { infer("softmax", {dims({2})}, {}, {{"dtype", "bfloat16"}}); });
  EXPECT_TRUE(contains(msg, "unknown dtype 'bfloat16' (valid: float32")) << msg;
}

TEST(MathInference, ValueReductions) {
  for (const char* name : {"mean", "prod", "nansum", "nanprod"}) {
    EXPECT_EQ(infer(name, {dims({kU, 3, 4})}, {}, {{"axis", "1"}}).out[0], dims({kU, 4})) << name;
    EXPECT_EQ(infer(name, {dims({2, 3, 4})}, {}, {{"axis", "(0, 2)"}, {"keepdims", "True"}}).out[0],
              dims({1, 3, 1}))
        << name;
    // exclude keeps only the listed axes; without axes it reduces everything (MXNet 1.x).
    EXPECT_EQ(infer(name, {dims({2, 3, 4})}, {}, {{"axis", "1"}, {"exclude", "True"}}).out[0],
              dims({3}))
        << name;
    EXPECT_EQ(infer(name, {dims({2, 3, 4})}, {}, {{"exclude", "True"}}).out[0], dims({1})) << name;
  }
  EXPECT_EQ(infer("max", {dims({2, 3})}, {}, {{"axis", "()"}, {"exclude", "1"}}).out[0], dims({1}));
  const std::string msg = error_of([] { infer("mean", {dims({2, 3})}, {}, {{"axis", "(1, 1)"}}); });
  EXPECT_TRUE(contains(msg, "mean: axis 1 appears twice")) << msg;
}

TEST(MathInference, IndexReductions) {
  EXPECT_EQ(infer("argmax", {dims({2, kU, 4})}, {}, {{"axis", "1"}}).out[0], dims({2, 4}));
  EXPECT_EQ(infer("argmin", {dims({2, kU, 4})}, {}, {{"axis", "-1"}, {"keepdims", "True"}}).out[0],
            dims({2, kU, 1}));
  EXPECT_EQ(infer("argmax", {dims({2, 3})}).out[0], dims({1}));  // flattened
  EXPECT_EQ(infer("argmax", {dims({2, 3})}, {}, {{"axis", "None"}, {"keepdims", "1"}}).out[0],
            dims({1, 1}));
  EXPECT_EQ(infer("argmax", {dims({7})}, {}, {{"axis", "0"}, {"keepdims", "1"}}).out[0], dims({1}));
  EXPECT_EQ(infer("argmax_channel", {dims({kU, 5, 2})}).out[0], dims({kU, 2}));
  // Indices in the input dtype, as MXNet.
  EXPECT_EQ(infer("argmax", {dims({4})}, {DType::kFloat16}).out_types[0], DType::kFloat16);
  EXPECT_FALSE(infer("argmax", {PartialShape()}).out[0].rank_known());
  std::string msg = error_of([] { infer("argmax", {dims({0, 3})}); });
  EXPECT_TRUE(contains(msg, "argmax: cannot search 'data' of shape (0,3)")) << msg;
  msg = error_of([] { infer("argmin", {dims({2, 3})}, {}, {{"axis", "2"}}); });
  EXPECT_TRUE(contains(msg, "argmin: axis 2 out of range")) << msg;
  // Along an axis that has elements the other empty axes give an empty result.
  EXPECT_EQ(infer("argmax", {dims({0, 3})}, {}, {{"axis", "1"}}).out[0], dims({0}));
}

TEST(MathKernels, RulesNumpyDoesNotShare) {
  const NDArray a = make<float>(Shape{5}, {7, -7, 7, -7, 5});
  const NDArray b = make<float>(Shape{5}, {3, 3, -3, -3, 0});
  EXPECT_EQ(values_of<float>(invoke_one(get_op("broadcast_mod"), std::vector{a, b}, {})),
            (std::vector<float>{1, 2, -2, -1, 0}));
  const NDArray halves = make<float>(Shape{4}, {1.5f, 2.5f, -1.5f, -2.5f});
  EXPECT_EQ(values_of<float>(invoke_one(get_op("rint"), std::vector{halves}, {})),
            (std::vector<float>{1, 2, -2, -3}));
  EXPECT_EQ(values_of<float>(invoke_one(get_op("round"), std::vector{halves}, {})),
            (std::vector<float>{2, 3, -2, -3}));
  const NDArray ints = make<int32_t>(Shape{3}, {3, -2, 2});
  EXPECT_EQ(values_of<int32_t>(
                invoke_one(get_op("_power_scalar"), std::vector{ints}, {{"scalar", "19"}})),
            (std::vector<int32_t>{1162261467, -524288, 524288}));
  EXPECT_EQ(values_of<int32_t>(invoke_one(get_op("_greater_scalar"), std::vector{ints},
                                          {{"scalar", "2.5"}})),  // compares with 2
            (std::vector<int32_t>{1, 0, 0}));
  const NDArray m = make<double>(Shape{2, 3}, {1, 9, 9, 4, 2, 4});
  EXPECT_EQ(values_of<double>(invoke_one(get_op("argmax"), std::vector{m}, {{"axis", "1"}})),
            (std::vector<double>{1, 0}));
  EXPECT_EQ(values_of<double>(
                invoke_one(get_op("mean"), std::vector{m}, {{"axis", "0"}, {"exclude", "True"}})),
            (std::vector<double>{19.0 / 3, 10.0 / 3}));
  const NDArray small = make<int8_t>(Shape{3}, {100, 100, 101});
  // MXNet's integer mean: the sum in the dtype's width (301 wraps to 45), then divided.
  EXPECT_EQ(values_of<int8_t>(invoke_one(get_op("mean"), std::vector{small}, {})),
            (std::vector<int8_t>{15}));
}

// Every math kernel on every dtype with the values that trap or overflow (the minimum, -1, 0,
// the maximum, NaN, infinities): under the sanitizers this finds undefined behaviour (INT_MIN
// % -1, signed overflow, shifts); here it checks that each runs and keeps shape and dtype.
template <typename T>
NDArray extremes() {
  double lowest = 0, highest = 0;
  if constexpr (std::is_same_v<T, half>) {
    lowest = -65504;
    highest = 65504;
  } else {
    lowest = static_cast<double>(std::numeric_limits<T>::lowest());
    highest = static_cast<double>(std::numeric_limits<T>::max());
  }
  std::vector<double> v = {lowest, -1, 0, 1, 2, highest};
  if constexpr (!std::is_integral_v<T>) {
    v.insert(v.end(), {NAN, INFINITY, -INFINITY, 0.5, -2.5, 100, -100});
  }
  std::vector<T> values;
  for (double d : v) values.push_back(from_double<T>(d));
  return make<T>(Shape{static_cast<int64_t>(values.size())}, values);
}

const char* const kUnary[] = {
    "exp",     "expm1",   "log",     "log1p",      "log2",    "log10",      "abs",     "sign",
    "rsqrt",   "cbrt",    "rcbrt",   "reciprocal", "sin",     "cos",        "tan",     "arcsin",
    "arccos",  "arctan",  "sinh",    "cosh",       "tanh",    "arcsinh",    "arccosh", "arctanh",
    "degrees", "radians", "sigmoid", "relu",       "floor",   "ceil",       "round",   "rint",
    "fix",     "trunc",   "erf",     "gamma",      "gammaln", "logical_not"};
const char* const kBinary[] = {"power",         "maximum",    "minimum",      "mod",
                               "hypot",         "equal",      "not_equal",    "greater",
                               "greater_equal", "lesser",     "lesser_equal", "logical_and",
                               "logical_or",    "logical_xor"};

template <typename T>
void run_everything() {
  const NDArray x = extremes<T>();
  std::vector<NDArray> results;
  for (const char* name : kUnary) results.push_back(invoke_one(get_op(name), std::vector{x}, {}));
  // Every pair of the extreme values.
  const std::vector<T> v = values_of<T>(x);
  std::vector<T> a, b;
  for (T p : v) {
    for (T q : v) {
      a.push_back(p);
      b.push_back(q);
    }
  }
  const auto n = static_cast<int64_t>(a.size());
  const std::vector<NDArray> pair = {make<T>(Shape{n}, a), make<T>(Shape{n}, b)};
  for (const std::string op : kBinary) {
    results.push_back(invoke_one(get_op("broadcast_" + op), pair, {}));
    results.push_back(invoke_one(get_op("_" + op), pair, {}));
    for (const std::string& scalar_op : {"_" + op + "_scalar", "_r" + op + "_scalar"}) {
      if (find_op(scalar_op) == nullptr) continue;
      for (const char* s : {"-1", "0", "2.5", "-1e300", "nan"}) {
        results.push_back(invoke_one(get_op(scalar_op), std::vector{x}, {{"scalar", s}}));
      }
    }
  }
  for (const char* name : {"mean", "prod", "nansum", "nanprod", "argmax", "argmin", "norm"}) {
    results.push_back(invoke_one(get_op(name), std::vector{x}, {}));
  }
  for (const NDArray& r : results) {
    r.wait_to_read();
    EXPECT_EQ(r.dtype(), x.dtype());
  }
  EXPECT_GT(results.size(), 100u);
}

TEST(MathKernels, EveryKernelOnEveryDtypeWithExtremeValues) {
  run_everything<float>();
  run_everything<double>();
  run_everything<half>();
  run_everything<uint8_t>();
  run_everything<int32_t>();
  run_everything<int8_t>();
  run_everything<int64_t>();
}

}  // namespace
}  // namespace nanomx::ops
