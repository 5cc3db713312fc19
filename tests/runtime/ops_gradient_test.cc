// The gradient seam (ops/gradient.h): rules run eagerly on arrays, and every registered rule
// agrees with float64 central differences of its forward operator.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "ops/gradient.h"
#include "ops/registry.h"

namespace nanomx::ops {
namespace {

NDArray from(std::vector<float> v) {
  NDArray a(Shape({static_cast<int64_t>(v.size())}), Context::cpu(0));
  a.sync_copy_from_cpu(v.data(), v.size() * sizeof(float));
  return a;
}

std::vector<float> values(const NDArray& a) {
  std::vector<float> v(a.shape().size());
  a.sync_copy_to_cpu(v.data(), v.size() * sizeof(float));
  return v;
}

TEST(OpsGradient, ScalarMulRuleRunsEagerly) {
  const Op& mul = get_op("_mul_scalar");
  const Attrs attrs = {{"scalar", "3"}};
  NDArray a = from({1, 2, 3}), g = from({1, 10, 100});
  std::vector<NDArray> in = {a};
  std::vector<NDArray> out = invoke(mul, in, attrs);
  std::vector<NDArray> og = {g};
  std::vector<NDArray> grads = gradient_eager(mul, attrs, in, out, og);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(values(grads[0]), (std::vector<float>{3, 30, 300}));
}

TEST(OpsGradient, PassThroughRuleReturnsTheOutputGradient) {
  const Op& plus = get_op("_plus_scalar");
  const Attrs attrs = {{"scalar", "1"}};
  NDArray a = from({1, 2}), g = from({5, 6});
  std::vector<NDArray> in = {a};
  std::vector<NDArray> out = invoke(plus, in, attrs);
  std::vector<NDArray> og = {g};
  EXPECT_EQ(values(gradient_eager(plus, attrs, in, out, og)[0]), (std::vector<float>{5, 6}));
}

TEST(OpsGradient, MissingOutputGradientIsZeros) {
  const Op& mul = get_op("_mul_scalar");
  const Attrs attrs = {{"scalar", "2"}};
  NDArray a = from({1, 2});
  std::vector<NDArray> in = {a};
  std::vector<NDArray> out = invoke(mul, in, attrs);
  std::vector<NDArray> grads = gradient_eager(mul, attrs, in, out, {});
  EXPECT_EQ(values(grads[0]), (std::vector<float>{0, 0}));
}

TEST(OpsGradient, OperatorWithoutRuleIsNamed) {
  const Op& op = get_op("argmax_channel");
  NDArray a = from({1, 2});
  try {
    gradient_eager(op, {}, {&a, 1}, {&a, 1}, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("argmax_channel"), std::string::npos) << e.what();
  }
}

// ---- numerical gradient checks ------------------------------------------------------------

NDArray f64(const Shape& shape, const std::vector<double>& v) {
  NDArray a(shape, Context::cpu(0), DType::kFloat64);
  a.sync_copy_from_cpu(v.data(), v.size() * sizeof(double));
  return a;
}

std::vector<double> f64_values(const NDArray& a) { return a.to_vector<double>(); }

// One forward call to check: inputs drawn U(lo, hi) in float64 (`fix` may then adjust them,
// for labels), the loss a random projection of the outputs unless `loss` is given (the loss
// layers, whose backward ignores the output gradient and is the gradient of their own loss).
struct GradCase {
  std::string op;
  Attrs attrs;
  std::vector<Shape> shapes;
  double lo = -1, hi = 1;
  std::function<void(std::vector<std::vector<double>>&)> fix = {};
  std::function<double(const std::vector<NDArray>& in, const std::vector<NDArray>& out)> loss = {};
  // With `loss`: the labels, which move that loss but get no gradient.
  std::set<size_t> labels = {};
  std::string label() const {
    std::string s = op;
    for (const auto& [k, v] : attrs) s += " " + k + "=" + v;
    return s;
  }
};

// Central differences of the loss against the rule's gradient, element by element; an input
// the rule gives no gradient must not move the loss either.
void check_gradient(const GradCase& c, uint32_t seed) {
  SCOPED_TRACE(c.label());
  const Op& op = get_op(c.op);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> in_dist(c.lo, c.hi), proj(-1, 1);
  std::vector<std::vector<double>> xs;
  for (const Shape& s : c.shapes) {
    std::vector<double> v(static_cast<size_t>(s.size()));
    for (double& x : v) x = in_dist(rng);
    xs.push_back(std::move(v));
  }
  if (c.fix) c.fix(xs);
  auto arrays = [&](const std::vector<std::vector<double>>& values) {
    std::vector<NDArray> a;
    for (size_t i = 0; i < values.size(); ++i) a.push_back(f64(c.shapes[i], values[i]));
    return a;
  };
  const std::vector<NDArray> inputs = arrays(xs);
  const std::vector<NDArray> outputs = invoke(op, inputs, c.attrs);
  // Hidden outputs (a layer's saved statistics, Dropout's mask) get no gradient: projected by 0.
  const size_t visible =
      static_cast<size_t>(op.visible_outputs_of(parse_attrs(op, c.attrs, inputs.size())));
  std::vector<NDArray> projections;
  std::vector<std::vector<double>> r;
  for (const NDArray& o : outputs) {
    ASSERT_EQ(o.dtype(), DType::kFloat64);
    std::vector<double> v(static_cast<size_t>(o.shape().size()));
    for (double& x : v) x = r.size() < visible ? proj(rng) : 0.0;
    projections.push_back(f64(o.shape(), v));
    r.push_back(std::move(v));
  }
  auto loss_of = [&](const std::vector<std::vector<double>>& values) {
    const std::vector<NDArray> in = arrays(values);
    const std::vector<NDArray> out = invoke(op, in, c.attrs);
    if (c.loss) return c.loss(in, out);
    double l = 0;
    for (size_t j = 0; j < out.size(); ++j) {
      const std::vector<double> y = f64_values(out[j]);
      for (size_t e = 0; e < y.size(); ++e) l += r[j][e] * y[e];
    }
    return l;
  };
  const std::vector<NDArray> grads = gradient_eager(op, c.attrs, inputs, outputs, projections);
  ASSERT_EQ(grads.size(), inputs.size());
  const double eps = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (c.labels.count(i)) {
      EXPECT_TRUE(grads[i].is_none()) << "a label got a gradient";
      continue;
    }
    std::vector<double> analytic;
    if (!grads[i].is_none()) {
      ASSERT_EQ(grads[i].shape(), inputs[i].shape()) << "gradient of input " << i;
      ASSERT_EQ(grads[i].dtype(), DType::kFloat64) << "gradient of input " << i;
      analytic = f64_values(grads[i]);
    }
    for (size_t e = 0; e < xs[i].size(); ++e) {
      std::vector<std::vector<double>> plus = xs, minus = xs;
      plus[i][e] += eps;
      minus[i][e] -= eps;
      const double numeric = (loss_of(plus) - loss_of(minus)) / (2 * eps);
      const double want = analytic.empty() ? 0.0 : analytic[e];
      EXPECT_NEAR(want, numeric, 1e-5 + 1e-4 * std::abs(numeric))
          << "input " << i << " element " << e << (analytic.empty() ? " (no gradient)" : "");
    }
  }
}

// Labels: integer classes in [0, classes) for input 1.
std::function<void(std::vector<std::vector<double>>&)> class_labels(int classes) {
  return [classes](std::vector<std::vector<double>>& xs) {
    for (size_t e = 0; e < xs[1].size(); ++e) {
      xs[1][e] = static_cast<double>(static_cast<int>(e * 7 + 3) % classes);
    }
  };
}

// -sum(log(y[label])) over rows of (rows, classes): SoftmaxOutput's loss (normalization null).
double cross_entropy(const std::vector<NDArray>& in, const std::vector<NDArray>& out) {
  const std::vector<double> y = f64_values(out[0]), label = f64_values(in[1]);
  const size_t classes = y.size() / label.size();
  double l = 0;
  for (size_t r = 0; r < label.size(); ++r) {
    l -= std::log(y[r * classes + static_cast<size_t>(label[r])]);
  }
  return l;
}

// Convolution, Deconvolution and UpSampling (ops/convolution.cc); float64 runs the im2col
// kernels.
void append_convolution_cases(std::vector<GradCase>& c) {
  c.push_back({"Convolution",
               {{"kernel", "(3,2)"},
                {"num_filter", "4"},
                {"stride", "(2,1)"},
                {"pad", "(1,0)"},
                {"num_group", "2"}},
               {Shape{2, 4, 5, 4}, Shape{4, 2, 3, 2}, Shape{4}}});
  c.push_back({"Convolution",
               {{"kernel", "(3,)"}, {"num_filter", "2"}, {"dilate", "(2,)"}, {"no_bias", "true"}},
               {Shape{2, 3, 7}, Shape{2, 3, 3}}});
  c.push_back({"Convolution",
               {{"kernel", "(2,2,2)"}, {"num_filter", "2"}, {"pad", "(1,0,1)"}},
               {Shape{1, 2, 3, 3, 2}, Shape{2, 2, 2, 2, 2}, Shape{2}}});
  c.push_back({"Deconvolution",
               {{"kernel", "(3,3)"},
                {"num_filter", "2"},
                {"stride", "(2,2)"},
                {"pad", "(1,1)"},
                {"adj", "(1,0)"},
                {"no_bias", "false"}},
               {Shape{1, 3, 3, 2}, Shape{3, 2, 3, 3}, Shape{2}}});
  c.push_back({"UpSampling",
               {{"scale", "2"}, {"sample_type", "nearest"}, {"num_args", "1"}},
               {Shape{2, 2, 2, 2}}});
  c.push_back({"UpSampling",
               {{"scale", "2"}, {"sample_type", "nearest"}, {"num_args", "2"}},
               {Shape{1, 2, 2, 3}, Shape{1, 1, 4, 6}}});
  c.push_back(
      {"UpSampling",
       {{"scale", "2"}, {"sample_type", "bilinear"}, {"num_filter", "2"}, {"num_args", "2"}},
       {Shape{1, 2, 2, 3}, Shape{2, 1, 4, 4}}});
}

// Pooling and LRN (ops/pooling.cc).
void append_pooling_cases(std::vector<GradCase>& c) {
  c.push_back({"Pooling",
               {{"kernel", "(2,2)"},
                {"stride", "(1,2)"},
                {"pad", "(1,1)"},
                {"pool_type", "avg"},
                {"pooling_convention", "full"}},
               {Shape{2, 2, 4, 5}}});
  c.push_back({"Pooling",
               {{"kernel", "(2,2)"},
                {"pool_type", "avg"},
                {"count_include_pad", "false"},
                {"pad", "(1,1)"}},
               {Shape{1, 2, 3, 4}}});
  c.push_back({"Pooling", {{"kernel", "(3,)"}, {"stride", "(2,)"}}, {Shape{2, 3, 7}}});
  c.push_back({"Pooling",
               {{"kernel", "(2,2,2)"}, {"pool_type", "lp"}, {"p_value", "2"}},
               {Shape{1, 2, 3, 3, 3}},
               0.1,
               1});
  c.push_back({"Pooling", {{"global_pool", "True"}, {"pool_type", "sum"}}, {Shape{2, 3, 3, 2}}});
  c.push_back({"LRN", {{"nsize", "3"}, {"alpha", "0.5"}, {"knorm", "1.5"}}, {Shape{2, 5, 2, 3}}});
}

// The normalization layers (ops/normalization.cc), outside training: BatchNorm normalises with
// its moving statistics, which get no gradient (labels here).
void append_normalization_cases(std::vector<GradCase>& c) {
  const Shape s234{2, 3, 4};
  const Shape c3{3};
  auto positive_variance = [](std::vector<std::vector<double>>& xs) {
    for (double& v : xs[4]) v = 0.5 + std::abs(v);
  };
  for (const char* fix_gamma : {"false", "true"}) {
    c.push_back({"BatchNorm",
                 {{"fix_gamma", fix_gamma}},
                 {s234, c3, c3, c3, c3},
                 -1,
                 1,
                 positive_variance,
                 {},
                 {3, 4}});
  }
  c.push_back({"BatchNorm",
               {{"fix_gamma", "false"}, {"axis", "-1"}},
               {Shape{2, 3, 4}, Shape{4}, Shape{4}, Shape{4}, Shape{4}},
               -1,
               1,
               positive_variance,
               {},
               {3, 4}});
  c.push_back({"LayerNorm", {}, {s234, Shape{4}, Shape{4}}});
  c.push_back({"LayerNorm", {{"axis", "1"}}, {s234, c3, c3}});
  c.push_back({"InstanceNorm", {}, {s234, c3, c3}});
  c.push_back({"GroupNorm", {{"num_groups", "2"}}, {Shape{2, 4, 3}, Shape{2}, Shape{2}}});
  for (const char* mode : {"instance", "channel", "spatial"}) {
    c.push_back({"L2Normalization", {{"mode", mode}}, {s234}});
  }
}

// The neural-network layers beside the core ones (ops/nn_layers.cc, ops/loss_layers.cc). Eager
// calls run outside training, so Dropout and rrelu are deterministic here.
void append_nn_layer_cases(std::vector<GradCase>& c) {
  const Shape s23{2, 3};
  const Shape s234{2, 3, 4};
  c.push_back({"Dropout", {{"p", "0.5"}}, {s234}});
  c.push_back({"Dropout", {{"p", "0.3"}, {"axes", "(1,)"}}, {s234}});
  c.push_back({"LeakyReLU", {{"act_type", "leaky"}, {"slope", "0.3"}}, {s234}});
  for (const char* act : {"elu", "gelu", "rrelu"}) {
    c.push_back({"LeakyReLU", {{"act_type", act}}, {s234}});
  }
  c.push_back({"LeakyReLU", {{"act_type", "prelu"}}, {s234, Shape{3}}});
  {
    // Indices half-way between integers: a central difference never crosses one.
    GradCase e{"Embedding", {{"input_dim", "5"}, {"output_dim", "4"}}, {s23, Shape{5, 4}}};
    e.fix = [](std::vector<std::vector<double>>& xs) {
      for (size_t i = 0; i < xs[0].size(); ++i) xs[0][i] = static_cast<double>(i * 3 % 5) + 0.5;
    };
    c.push_back(std::move(e));
  }
  c.push_back({"SoftmaxActivation", {}, {s23}});
  c.push_back({"SoftmaxActivation", {{"mode", "channel"}}, {s234}});
  {
    GradCase x{"softmax_cross_entropy", {}, {s23, Shape{2}}};
    x.fix = [](std::vector<std::vector<double>>& xs) {
      for (size_t i = 0; i < xs[1].size(); ++i) xs[1][i] = static_cast<double>(i * 2 % 3) + 0.25;
    };
    c.push_back(std::move(x));
  }
  // The loss layers ignore the incoming gradient: their gradient is that of sum(output).
  auto sum_of_output = [](const std::vector<NDArray>&, const std::vector<NDArray>& out) {
    double s = 0;
    for (const double v : f64_values(out[0])) s += v;
    return s;
  };
  c.push_back({"MakeLoss", {}, {s23}, -1, 1, {}, sum_of_output});
  c.push_back({"make_loss", {}, {s23}, -1, 1, {}, sum_of_output});
  c.push_back({"BlockGrad",
               {},
               {s23},
               -1,
               1,
               {},
               [](const std::vector<NDArray>&, const std::vector<NDArray>&) { return 0.0; }});
}

std::vector<GradCase> gradient_cases() {
  std::vector<GradCase> c;
  const Shape s23{2, 3};
  const Shape s234{2, 3, 4};
  // Scalar operators.
  for (const char* op : {"_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar",
                         "_div_scalar", "_maximum_scalar", "_minimum_scalar", "_hypot_scalar"}) {
    c.push_back({op, {{"scalar", "0.3"}}, {s23}});
  }
  for (const char* op :
       {"_rdiv_scalar", "_power_scalar", "_rpower_scalar", "_mod_scalar", "_rmod_scalar"}) {
    c.push_back({op, {{"scalar", "2.5"}}, {s23}, 0.5, 2});
  }
  // Unary math.
  for (const char* op :
       {"negative", "exp",     "sign", "round",   "rint",    "ceil",    "floor", "trunc",   "fix",
        "relu",     "sigmoid", "tanh", "square",  "expm1",   "abs",     "sin",   "cos",     "tan",
        "arctan",   "sinh",    "cosh", "arcsinh", "degrees", "radians", "erf",   "softsign"}) {
    c.push_back({op, {}, {s23}, -0.9, 0.9});
  }
  for (const char* op :
       {"sqrt", "rsqrt", "cbrt", "rcbrt", "log", "log1p", "log2", "log10", "reciprocal"}) {
    c.push_back({op, {}, {s23}, 0.5, 2});
  }
  for (const char* op : {"arcsin", "arccos", "arctanh"}) c.push_back({op, {}, {s23}, -0.8, 0.8});
  c.push_back({"arccosh", {}, {s23}, 1.5, 3});
  // Elementwise and broadcast binary operators.
  for (const char* op : {"elemwise_add", "elemwise_sub", "elemwise_mul", "_grad_add", "_maximum",
                         "_minimum", "_identity_with_attr_like_rhs"}) {
    c.push_back({op, {}, {s23, s23}});
  }
  for (const char* op : {"elemwise_div", "_power", "_hypot", "_mod"}) {
    c.push_back({op, {}, {s23, s23}, 0.5, 2});
  }
  for (const char* op : {"broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_maximum",
                         "broadcast_minimum"}) {
    c.push_back({op, {}, {s234, Shape{3, 1}}});
    c.push_back({op, {}, {Shape{1, 4}, Shape{3, 1}}});
  }
  for (const char* op : {"broadcast_div", "broadcast_power", "broadcast_hypot", "broadcast_mod"}) {
    c.push_back({op, {}, {s234, Shape{3, 1}}, 0.5, 2});
  }
  c.push_back({"add_n", {{"num_args", "3"}}, {s23, s23, s23}});
  c.push_back({"_copy", {}, {s23}});
  // Layer operators.
  c.push_back({"FullyConnected", {{"num_hidden", "4"}}, {s234, Shape{4, 12}, Shape{4}}});
  c.push_back({"FullyConnected",
               {{"num_hidden", "4"}, {"flatten", "false"}},
               {s234, Shape{4, 4}, Shape{4}}});
  c.push_back({"FullyConnected", {{"num_hidden", "3"}, {"no_bias", "true"}}, {s23, Shape{3, 3}}});
  for (const char* act : {"relu", "sigmoid", "tanh", "softrelu", "softsign"}) {
    c.push_back({"Activation", {{"act_type", act}}, {s234}});
  }
  c.push_back(
      {"SoftmaxOutput", {}, {Shape{4, 5}, Shape{4}}, -1, 1, class_labels(5), cross_entropy, {1}});
  c.push_back({"LinearRegressionOutput",
               {{"grad_scale", "0.5"}},
               {Shape{4, 3}, Shape{4, 3}},
               -1,
               1,
               {},
               [](const std::vector<NDArray>& in, const std::vector<NDArray>& out) {
                 // (y - label)^2 / 2 per row, times grad_scale / (label.size / label.shape[0]).
                 const std::vector<double> y = f64_values(out[0]), l = f64_values(in[1]);
                 double s = 0;
                 for (size_t i = 0; i < y.size(); ++i) s += (y[i] - l[i]) * (y[i] - l[i]) / 2;
                 return s * 0.5 / 3;
               },
               {1}});
  for (const auto& [ta, tb, sa, sb] :
       std::vector<std::tuple<const char*, const char*, Shape, Shape>>{
           {"false", "false", Shape{2, 3}, Shape{3, 4}},
           {"true", "false", Shape{3, 2}, Shape{3, 4}},
           {"false", "true", Shape{2, 3}, Shape{4, 3}},
           {"true", "true", Shape{3, 2}, Shape{4, 3}},
           {"false", "false", Shape{3}, Shape{3}},
           {"false", "false", Shape{2, 2, 3}, Shape{3, 2, 2}}}) {
    c.push_back({"dot", {{"transpose_a", ta}, {"transpose_b", tb}}, {sa, sb}});
  }
  for (const auto& [ta, tb, sa, sb] :
       std::vector<std::tuple<const char*, const char*, Shape, Shape>>{
           {"false", "false", Shape{2, 2, 3}, Shape{2, 3, 4}},
           {"true", "true", Shape{2, 3, 2}, Shape{2, 4, 3}}}) {
    c.push_back({"batch_dot", {{"transpose_a", ta}, {"transpose_b", tb}}, {sa, sb}});
  }
  for (const char* op : {"softmax", "log_softmax", "softmin"}) {
    c.push_back({op, {}, {s234}});
    c.push_back({op, {{"axis", "1"}, {"temperature", "2"}}, {s234}});
    c.push_back({op, {{"axis", "0"}, {"dtype", "float64"}}, {s234}});
  }
  // Shapes and reductions.
  c.push_back({"Reshape", {{"shape", "(-1, 0)"}}, {s234}});
  c.push_back({"Flatten", {}, {s234}});
  c.push_back({"expand_dims", {{"axis", "1"}}, {s23}});
  c.push_back({"squeeze", {}, {Shape{2, 1, 3}}});
  for (const char* op : {"sum", "mean"}) {
    c.push_back({op, {}, {s234}});
    c.push_back({op, {{"axis", "1"}}, {s234}});
    c.push_back({op, {{"axis", "(0, 2)"}, {"keepdims", "true"}}, {s234}});
    c.push_back({op, {{"axis", "1"}, {"exclude", "true"}}, {s234}});
  }
  c.push_back({"broadcast_to", {{"shape", "(2, 3, 4)"}}, {Shape{1, 3, 1}}});
  c.push_back({"transpose", {}, {s234}});
  c.push_back({"transpose", {{"axes", "(2, 0, -2)"}}, {s234}});
  c.push_back({"Cast", {{"dtype", "float64"}}, {s23}});
  c.push_back({"clip", {{"a_min", "-0.5"}, {"a_max", "0.4"}}, {s234}});
  c.push_back({"SwapAxis", {{"dim1", "0"}, {"dim2", "2"}}, {s234}});
  c.push_back({"reverse", {{"axis", "(0, 2)"}}, {s234}});
  c.push_back({"stack", {{"axis", "1"}, {"num_args", "3"}}, {s23, s23, s23}});
  c.push_back({"Concat", {{"dim", "1"}, {"num_args", "3"}}, {s23, Shape{2, 1}, s23}});
  {
    // Integer positions, clipped: a central difference of the data never moves them.
    GradCase p{"pick", {{"axis", "1"}}, {s234, Shape{2, 4}}};
    p.fix = [](std::vector<std::vector<double>>& xs) {
      for (size_t i = 0; i < xs[1].size(); ++i) xs[1][i] = static_cast<double>(i % 4) - 0.5;
    };
    p.labels = {1};
    c.push_back(std::move(p));
  }
  c.push_back({"Concat", {{"dim", "0"}, {"num_args", "2"}}, {s234, Shape{1, 3, 4}}});
  c.push_back({"stack", {{"axis", "-1"}, {"num_args", "2"}}, {s23, s23}});
  c.push_back({"SliceChannel", {{"num_outputs", "2"}, {"axis", "2"}}, {s234}});
  c.push_back(
      {"SliceChannel", {{"num_outputs", "3"}, {"axis", "-2"}, {"squeeze_axis", "true"}}, {s234}});
  c.push_back({"slice", {{"begin", "(0, 1)"}, {"end", "(2, 3)"}}, {s234}});
  c.push_back({"slice",
               {{"begin", "(None, 2, 3)"}, {"end", "(1, None, 0)"}, {"step", "(1, -1, -2)"}},
               {s234}});
  {
    GradCase w{"where", {}, {s23, s23, s23}};
    w.fix = [](std::vector<std::vector<double>>& xs) {
      for (size_t e = 0; e < xs[0].size(); ++e) xs[0][e] = e % 3 == 0 ? 0 : 1;
    };
    w.labels = {0};
    c.push_back(std::move(w));
  }
  append_nn_layer_cases(c);
  append_normalization_cases(c);
  append_pooling_cases(c);
  append_convolution_cases(c);
  return c;
}

TEST(OpsGradientNumeric, EveryRuleAgreesWithCentralDifferences) {
  uint32_t seed = 1;
  for (const GradCase& c : gradient_cases()) check_gradient(c, seed++);
}

// A rule added without a numerical check here fails this test.
TEST(OpsGradientNumeric, EveryRegisteredRuleIsChecked) {
  std::set<std::string> checked;
  for (const GradCase& c : gradient_cases()) checked.insert(get_op(c.op).name);
  for (const std::string& name : list_op_names()) {
    const Op& op = get_op(name);
    if (find_gradient(op) == nullptr) continue;
    // Custom's rule runs the user's backward: checked with registered custom operators
    // (tests/python/test_custom_op.py).
    if (op.name == "Custom") continue;
    EXPECT_TRUE(checked.count(op.name)) << op.name << " has a gradient rule but no numerical check";
  }
}

// A builder that runs nothing: it records which forward inputs and outputs a rule reads and
// which calls it adds, as a graph builder would see them.
class RecordingBuilder final : public GradientBuilder {
 public:
  RecordingBuilder(const Op& op, const Attrs& attrs, int num_inputs)
      : op_(op), attrs_(attrs), params_(parse_attrs(op, attrs, static_cast<size_t>(num_inputs))) {
    num_inputs_ = num_inputs;
    num_outputs_ = op.outputs_of(params_);
  }
  const Op& op() const override { return op_; }
  const ParsedParams& params() const override { return params_; }
  const Attrs& attrs() const override { return attrs_; }
  int num_inputs() const override { return num_inputs_; }
  int num_outputs() const override { return num_outputs_; }
  GradValue input(int i) override {
    inputs_read.insert(i);
    return {next_++};
  }
  GradValue output(int i) override {
    outputs_read.insert(i);
    return {next_++};
  }
  GradValue out_grad(int) override { return {next_++}; }
  std::vector<GradValue> add(std::string_view name, const Attrs& attrs,
                             std::vector<GradValue> inputs) override {
    const Op& op = get_op(name);
    added.push_back(op.name);
    const ParsedParams p = parse_attrs(op, attrs, inputs.size());
    const size_t want = op.variadic() ? inputs.size() : op.input_names_of(p).size();
    EXPECT_EQ(inputs.size(), want) << op_.name << "'s rule calls " << op.name;
    std::vector<GradValue> out;
    for (int j = 0; j < op.outputs_of(p); ++j) out.push_back({next_++});
    return out;
  }
  std::set<int> inputs_read, outputs_read;
  std::vector<std::string> added;

 private:
  const Op& op_;
  const Attrs& attrs_;
  ParsedParams params_;
  int num_inputs_ = 0, num_outputs_ = 0, next_ = 0;
};

// What a rule reads is what its operator declares (autograd keeps exactly that alive), and every
// call it adds takes the inputs its operator expects.
TEST(OpsGradientNumeric, RulesReadOnlyWhatTheirOperatorDeclares) {
  for (const GradCase& c : gradient_cases()) {
    SCOPED_TRACE(c.label());
    const Op& op = get_op(c.op);
    const GradientFn* rule = find_gradient(op);
    ASSERT_NE(rule, nullptr);
    RecordingBuilder b(op, c.attrs, static_cast<int>(c.shapes.size()));
    const std::vector<GradValue> grads = (*rule)(b);
    EXPECT_EQ(grads.size(), c.shapes.size());
    EXPECT_TRUE(op.backward.differentiable);
    const std::set<int> inputs(op.backward.inputs.begin(), op.backward.inputs.end());
    const std::set<int> outputs(op.backward.outputs.begin(), op.backward.outputs.end());
    for (int i : b.inputs_read) {
      EXPECT_TRUE(op.backward.all_inputs || inputs.count(i)) << "reads input " << i;
    }
    for (int i : b.outputs_read) EXPECT_TRUE(outputs.count(i)) << "reads output " << i;
  }
}

// Aliases share their operator's rule.
TEST(OpsGradientNumeric, AliasesShareRules) {
  for (const char* alias : {"_plus", "_Plus", "_add", "_minus", "_Minus", "_sub", "_Mul", "_mul",
                            "_div", "_Div", "identity", "Softmax", "ElementWiseSum", "flatten",
                            "reshape", "sum_axis", "_npx_pooling", "stop_gradient"}) {
    EXPECT_NE(find_gradient(get_op(alias)), nullptr) << alias;
  }
  // Labels and indices are not differentiable.
  for (const char* name : {"argmax", "one_hot", "_zeros", "zeros_like", "_random_uniform"}) {
    EXPECT_EQ(find_gradient(get_op(name)), nullptr) << name;
  }
}

}  // namespace
}  // namespace nanomx::ops
