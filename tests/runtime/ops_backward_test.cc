// The backward operators (ops/backward_ops.cc) against hand-computed values, in float32 and
// float64, their errors, and the elementwise / graph-helper forward operators they come with.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "ops/gradient.h"
#include "test_util.h"

namespace nanomx::ops {
namespace {

using test::error_of;
using test::make;

template <typename T>
std::vector<double> doubles(const NDArray& a) {
  std::vector<double> d;
  for (T v : a.to_vector<T>()) d.push_back(static_cast<double>(v));
  return d;
}

void expect_values(const std::vector<double>& got, const std::vector<double>& want, double tol,
                   const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " element " << i;
  }
}

std::vector<NDArray> call(const char* op, std::vector<NDArray> in, const Attrs& attrs = {}) {
  return invoke(get_op(op), in, attrs);
}

template <typename T>
class BackwardValues : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(BackwardValues, FloatTypes);

TYPED_TEST(BackwardValues, FullyConnected) {
  using T = TypeParam;
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-12;
  const NDArray x = make<T>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const NDArray w = make<T>(Shape{2, 3}, {1, 0, -1, 0.5, 1, 2});
  const NDArray dy = make<T>(Shape{2, 2}, {1, 2, 3, 4});
  // dX = dY W, dW = dY^T X, db = column sums of dY.
  const std::vector<NDArray> g =
      call("_backward_FullyConnected", {dy, x, w}, {{"num_hidden", "2"}});
  ASSERT_EQ(g.size(), 3u);
  expect_values(doubles<T>(g[0]), {2, 2, 3, 5, 4, 5}, tol, "dX");
  expect_values(doubles<T>(g[1]), {13, 17, 21, 18, 24, 30}, tol, "dW");
  expect_values(doubles<T>(g[2]), {4, 6}, tol, "db");
  EXPECT_EQ(g[1].shape(), (Shape{2, 3}));
  // flatten=False: leading axes are batch axes; dX keeps data's shape.
  const NDArray x3 = make<T>(Shape{1, 2, 3}, {1, 2, 3, 4, 5, 6});
  const NDArray dy3 = make<T>(Shape{1, 2, 2}, {1, 2, 3, 4});
  const std::vector<NDArray> g3 =
      call("_backward_FullyConnected", {dy3, x3, w}, {{"num_hidden", "2"}, {"flatten", "false"}});
  EXPECT_EQ(g3[0].shape(), (Shape{1, 2, 3}));
  expect_values(doubles<T>(g3[0]), {2, 2, 3, 5, 4, 5}, tol, "dX flatten=false");
  expect_values(doubles<T>(g3[1]), {13, 17, 21, 18, 24, 30}, tol, "dW flatten=false");
  // no_bias: two gradients, through the rule too.
  const Attrs nb = {{"num_hidden", "2"}, {"no_bias", "true"}};
  std::vector<NDArray> in = {x, w};
  const std::vector<NDArray> out = call("FullyConnected", in, nb);
  std::vector<NDArray> og = {dy};
  const std::vector<NDArray> gr = gradient_eager(get_op("FullyConnected"), nb, in, out, og);
  ASSERT_EQ(gr.size(), 2u);
  expect_values(doubles<T>(gr[0]), {2, 2, 3, 5, 4, 5}, tol, "dX no_bias");
  expect_values(doubles<T>(gr[1]), {13, 17, 21, 18, 24, 30}, tol, "dW no_bias");
}

TYPED_TEST(BackwardValues, ActivationEachType) {
  using T = TypeParam;
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-12;
  const std::vector<double> xs = {-1.5, -0.25, 0.5, 2};
  const std::vector<double> dys = {1, 2, 3, 4};
  const NDArray x = make<T>(Shape{4}, {T(-1.5), T(-0.25), T(0.5), T(2)});
  const NDArray dy = make<T>(Shape{4}, {1, 2, 3, 4});
  struct Want {
    const char* act;
    double (*d)(double x);
  };
  const Want wants[] = {
      {"relu", [](double v) { return v > 0 ? 1.0 : 0.0; }},
      {"sigmoid",
       [](double v) {
         const double s = 1 / (1 + std::exp(-v));
         return s * (1 - s);
       }},
      {"tanh", [](double v) { return 1 - std::tanh(v) * std::tanh(v); }},
      {"softrelu", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"softsign", [](double v) { return 1 / ((1 + std::abs(v)) * (1 + std::abs(v))); }},
  };
  for (const Want& w : wants) {
    const Attrs attrs = {{"act_type", w.act}};
    std::vector<NDArray> in = {x};
    const std::vector<NDArray> out = call("Activation", in, attrs);
    std::vector<NDArray> og = {dy};
    const std::vector<NDArray> g = gradient_eager(get_op("Activation"), attrs, in, out, og);
    std::vector<double> want;
    for (size_t i = 0; i < xs.size(); ++i) want.push_back(dys[i] * w.d(xs[i]));
    expect_values(doubles<T>(g[0]), want, tol, w.act);
  }
  // relu's gradient lets a NaN output through; the op takes (dy, y) only.
  const NDArray y = make<T>(Shape{3}, {std::numeric_limits<T>::quiet_NaN(), T(-1), T(2)});
  const NDArray dy3 = make<T>(Shape{3}, {1, 1, 5});
  const std::vector<double> g =
      doubles<T>(call("_backward_Activation", {dy3, y}, {{"act_type", "relu"}})[0]);
  EXPECT_TRUE(std::isnan(g[0]));
  EXPECT_EQ(g[1], 0);
  EXPECT_EQ(g[2], 5);
  const std::string count_msg = error_of([&] {
    call("_backward_Activation", {dy3, y}, {{"act_type", "tanh"}});
  });
  EXPECT_NE(count_msg.find("expected 3 input(s), got 2"), std::string::npos) << count_msg;
}

// MXNet's SoftmaxOutput gradient from the softmax `out` (rows x classes), as the spec of the
// operator states it, to compare the kernel against.
std::vector<double> softmax_output_grad(const std::vector<double>& out,
                                        const std::vector<double>& label, size_t classes,
                                        double scale, double alpha, bool use_ignore, int ignore) {
  std::vector<double> g(out.size());
  for (size_t r = 0; r < label.size(); ++r) {
    const int l = static_cast<int>(label[r]);
    for (size_t j = 0; j < classes; ++j) {
      const double target = static_cast<int>(j) == l ? 1 - alpha : alpha / (classes - 1.0);
      g[r * classes + j] = use_ignore && l == ignore ? 0 : (out[r * classes + j] - target) * scale;
    }
  }
  return g;
}

TYPED_TEST(BackwardValues, SoftmaxOutputEachMode) {
  using T = TypeParam;
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-12;
  const NDArray data = make<T>(Shape{3, 3}, {1, 2, 3, 0, 0, 1, -1, 2, 0.5});
  const NDArray label = make<T>(Shape{3}, {2, 0, 1});
  const NDArray huge = make<T>(Shape{3, 3}, std::vector<T>(9, T(7)));  // ignored: no dy input
  const Op& op = get_op("SoftmaxOutput");
  struct Mode {
    Attrs attrs;
    double scale;
    double alpha;
    bool use_ignore;
    int ignore;
  };
  const Mode modes[] = {
      {{}, 1, 0, false, -1},
      {{{"grad_scale", "2"}}, 2, 0, false, -1},
      {{{"normalization", "batch"}}, 1.0 / 3, 0, false, -1},
      // valid: labels != ignore_label counted (2 of 3), whether or not use_ignore is on.
      {{{"normalization", "valid"}, {"ignore_label", "0"}}, 0.5, 0, false, 0},
      {{{"normalization", "valid"}, {"ignore_label", "0"}, {"use_ignore", "true"}},
       0.5,
       0,
       true,
       0},
      {{{"use_ignore", "true"}, {"ignore_label", "1"}}, 1, 0, true, 1},
      {{{"smooth_alpha", "0.2"}}, 1, 0.2, false, -1},
      {{{"smooth_alpha", "0.2"}, {"normalization", "batch"}, {"grad_scale", "1.5"}},
       0.5,
       0.2,
       false,
       -1},
  };
  for (const Mode& m : modes) {
    std::vector<NDArray> in = {data, label};
    const std::vector<NDArray> out = invoke(op, in, m.attrs);
    std::vector<NDArray> og = {huge};
    const std::vector<NDArray> g = gradient_eager(op, m.attrs, in, out, og);
    ASSERT_EQ(g.size(), 2u);
    EXPECT_TRUE(g[1].is_none());
    expect_values(doubles<T>(g[0]),
                  softmax_output_grad(doubles<T>(out[0]), {2, 0, 1}, 3, m.scale, m.alpha,
                                      m.use_ignore, m.ignore),
                  tol, "SoftmaxOutput mode " + std::to_string(&m - modes));
  }
  // MXNet's out_grad=True quirk multiplies by the output, not by a head gradient.
  {
    const Attrs attrs = {{"out_grad", "true"}};
    const std::vector<NDArray> out = call("SoftmaxOutput", {data, label}, attrs);
    const std::vector<double> g =
        doubles<T>(call("_backward_SoftmaxOutput", {out[0], label}, attrs)[0]);
    const std::vector<double> y = doubles<T>(out[0]);
    const std::vector<double> plain = softmax_output_grad(y, {2, 0, 1}, 3, 1, 0, false, -1);
    for (size_t i = 0; i < 9; ++i) EXPECT_NEAR(g[i], plain[i] * y[i], tol) << i;
  }
  // A label outside [0, C) never matches: that row's gradient is the softmax itself.
  {
    const NDArray far = make<T>(Shape{3}, {5, 0, 1});
    const std::vector<NDArray> out = call("SoftmaxOutput", {data, far});
    const std::vector<double> g = doubles<T>(call("_backward_SoftmaxOutput", {out[0], far})[0]);
    const std::vector<double> y = doubles<T>(out[0]);
    for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(g[j], y[j], tol);
  }
  // Probability labels (shaped like data): (out - label) * grad_scale, no normalisation.
  {
    const NDArray prob = make<T>(Shape{3, 3}, {0, 0, 1, 0.5, 0.5, 0, 0, 1, 0});
    const Attrs attrs = {{"grad_scale", "3"}, {"normalization", "batch"}};
    const std::vector<NDArray> out = call("SoftmaxOutput", {data, prob}, attrs);
    const std::vector<double> g =
        doubles<T>(call("_backward_SoftmaxOutput", {out[0], prob}, attrs)[0]);
    const std::vector<double> y = doubles<T>(out[0]), p = doubles<T>(prob);
    for (size_t i = 0; i < 9; ++i) EXPECT_NEAR(g[i], (y[i] - p[i]) * 3, tol) << i;
  }
  // multi_output: classes on axis 1 of (n, k, rest), one label per (n, position); the factor
  // is divided by rest (not for valid).
  {
    const NDArray d = make<T>(Shape{1, 3, 2}, {1, 0, 2, 0, 3, 1});
    const NDArray l = make<T>(Shape{1, 2}, {2, 0});
    for (const auto& [norm, scale] :
         std::vector<std::pair<std::string, double>>{{"null", 0.5}, {"valid", 0.5}}) {
      const Attrs attrs = {{"multi_output", "true"}, {"normalization", norm}};
      const std::vector<NDArray> out = call("SoftmaxOutput", {d, l}, attrs);
      const std::vector<double> g =
          doubles<T>(call("_backward_SoftmaxOutput", {out[0], l}, attrs)[0]);
      const std::vector<double> y = doubles<T>(out[0]);
      // Position q's classes are y[q], y[2 + q], y[4 + q]; valid counts both labels.
      const int labels[] = {2, 0};
      for (int q = 0; q < 2; ++q) {
        for (int j = 0; j < 3; ++j) {
          const size_t i = static_cast<size_t>(j * 2 + q);
          EXPECT_NEAR(g[i], (y[i] - (j == labels[q] ? 1 : 0)) * scale, tol)
              << norm << " q=" << q << " j=" << j;
        }
      }
    }
  }
}

TYPED_TEST(BackwardValues, LinearRegressionOutput) {
  using T = TypeParam;
  // (N, 1) data with an (N,) label: per-row size 1.
  const NDArray data = make<T>(Shape{3, 1}, {1, 2, 3});
  const NDArray label = make<T>(Shape{3}, {0, 2, 5});
  const Attrs attrs = {{"grad_scale", "2"}};
  std::vector<NDArray> in = {data, label};
  const std::vector<NDArray> out = call("LinearRegressionOutput", in, attrs);
  const std::vector<NDArray> g =
      gradient_eager(get_op("LinearRegressionOutput"), attrs, in, out, {});
  expect_values(doubles<T>(g[0]), {2, 0, -4}, 1e-6, "d_data");
  EXPECT_TRUE(g[1].is_none());
  // (N, 2): divided by the label's per-row size.
  const NDArray d2 = make<T>(Shape{1, 2}, {1, 3});
  const NDArray l2 = make<T>(Shape{1, 2}, {0, 0});
  expect_values(doubles<T>(call("_backward_linear_reg_out", {l2, d2})[0]), {0.5, 1.5}, 1e-6,
                "per-row");
}

TYPED_TEST(BackwardValues, DotEachTransposeCombination) {
  using T = TypeParam;
  const NDArray a = make<T>(Shape{2, 2}, {1, 2, 3, 4});
  const NDArray b = make<T>(Shape{2, 2}, {5, 6, 7, 8});
  const NDArray dc = make<T>(Shape{2, 2}, {1, 0, 0, 2});
  struct Want {
    const char* ta;
    const char* tb;
    std::vector<double> da, db;
  };
  const Want wants[] = {
      {"false", "false", {5, 7, 12, 16}, {1, 6, 2, 8}},  // dA = dC B^T, dB = A^T dC
      {"true", "false", {5, 12, 7, 16}, {1, 4, 3, 8}},   // dA = B dC^T, dB = A dC
      {"false", "true", {5, 6, 14, 16}, {1, 2, 6, 8}},   // dA = dC B, dB = dC^T A
      {"true", "true", {5, 14, 6, 16}, {1, 3, 4, 8}},    // dA = B^T dC^T, dB = dC^T A^T
  };
  for (const Want& w : wants) {
    const Attrs attrs = {{"transpose_a", w.ta}, {"transpose_b", w.tb}};
    const std::vector<NDArray> g = call("_backward_dot", {dc, a, b}, attrs);
    const std::string what = std::string("ta=") + w.ta + " tb=" + w.tb;
    expect_values(doubles<T>(g[0]), w.da, 1e-9, "dA " + what);
    expect_values(doubles<T>(g[1]), w.db, 1e-9, "dB " + what);
  }
  // 1-D . 1-D: dA = dC b, dB = dC a.
  const NDArray u = make<T>(Shape{3}, {1, 2, 3}), v = make<T>(Shape{3}, {4, 5, 6});
  const std::vector<NDArray> g = call("_backward_dot", {make<T>(Shape{1}, {2}), u, v});
  expect_values(doubles<T>(g[0]), {8, 10, 12}, 1e-9, "1-D dA");
  expect_values(doubles<T>(g[1]), {2, 4, 6}, 1e-9, "1-D dB");
}

TYPED_TEST(BackwardValues, BroadcastAndReductionGradientsSumBack) {
  using T = TypeParam;
  const NDArray dy = make<T>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  // broadcast_add (2,3) + (3,): rhs gets the column sums.
  const NDArray l = make<T>(Shape{2, 3}, std::vector<T>(6, T(0)));
  const NDArray r = make<T>(Shape{3}, {0, 0, 0});
  std::vector<NDArray> g = call("_backward_broadcast_add", {dy, l, r});
  expect_values(doubles<T>(g[0]), {1, 2, 3, 4, 5, 6}, 1e-9, "add lhs");
  expect_values(doubles<T>(g[1]), {5, 7, 9}, 1e-9, "add rhs");
  EXPECT_EQ(g[1].shape(), (Shape{3}));
  g = call("_backward_broadcast_sub", {dy, l, r});
  expect_values(doubles<T>(g[1]), {-5, -7, -9}, 1e-9, "sub rhs");
  // broadcast_mul (2,1) * (1,3) with dy = 1: each side gets the other's sum.
  const NDArray ones = make<T>(Shape{2, 3}, std::vector<T>(6, T(1)));
  g = call("_backward_broadcast_mul",
           {ones, make<T>(Shape{2, 1}, {2, 3}), make<T>(Shape{1, 3}, {1, 10, 100})});
  expect_values(doubles<T>(g[0]), {111, 111}, 1e-9, "mul lhs");
  expect_values(doubles<T>(g[1]), {5, 5, 5}, 1e-9, "mul rhs");
  // broadcast_div (2,3) / (1,): d rhs = -sum(dy * l) / r^2.
  g = call("_backward_broadcast_div",
           {ones, make<T>(Shape{2, 3}, {1, 1, 1, 1, 1, 3}), make<T>(Shape{1}, {2})});
  expect_values(doubles<T>(g[0]), std::vector<double>(6, 0.5), 1e-9, "div lhs");
  expect_values(doubles<T>(g[1]), {-2}, 1e-9, "div rhs");
  // sum / mean over axis 1 spread the gradient back; over every axis (output (1,)) too.
  const NDArray dsum = make<T>(Shape{2}, {1, 2});
  expect_values(doubles<T>(call("_backward_sum", {dsum, dy}, {{"axis", "1"}})[0]),
                {1, 1, 1, 2, 2, 2}, 1e-9, "sum axis=1");
  expect_values(doubles<T>(call("_backward_mean", {dsum, dy}, {{"axis", "1"}})[0]),
                {1.0 / 3, 1.0 / 3, 1.0 / 3, 2.0 / 3, 2.0 / 3, 2.0 / 3}, 1e-6, "mean axis=1");
  expect_values(doubles<T>(call("_backward_mean", {make<T>(Shape{1}, {6}), dy})[0]),
                std::vector<double>(6, 1), 1e-9, "mean all");
  expect_values(doubles<T>(call("_backward_sum", {make<T>(Shape{3}, {1, 2, 3}), dy},
                                {{"axis", "1"}, {"exclude", "true"}})[0]),
                {1, 2, 3, 1, 2, 3}, 1e-9, "sum exclude");
  // broadcast_to's gradient sums over the broadcast axes.
  expect_values(doubles<T>(call("_broadcast_backward", {dy, make<T>(Shape{1, 3}, {0, 0, 0})})[0]),
                {5, 7, 9}, 1e-9, "broadcast_to");
}

// Each declared in-place pair: the output written into the input's own array gives the values
// of a separate output.
TEST(BackwardOps, InPlacePairsGiveTheSameValues) {
  std::mt19937 rng(7);
  auto rand = [&](const Shape& s, double lo = -1, double hi = 1) {
    return make<double>(s, test::random_values<double>(s.size(), rng, lo, hi));
  };
  const Shape s{3, 4};
  struct Case {
    const char* op;
    Attrs attrs;
    std::vector<Shape> shapes;
  };
  std::vector<Case> cases = {
      {"_backward_FullyConnected", {{"num_hidden", "4"}}, {s, Shape{3, 5}, Shape{4, 5}}},
      {"_backward_Activation", {{"act_type", "relu"}}, {s, s}},
      {"_backward_Activation", {{"act_type", "sigmoid"}}, {s, s, s}},
      {"_backward_Activation", {{"act_type", "softsign"}}, {s, s, s}},
      {"_backward_SoftmaxOutput",
       {{"normalization", "batch"}, {"out_grad", "true"}},
       {s, Shape{3}}},
      {"_backward_SoftmaxOutput", {{"smooth_alpha", "0.1"}}, {s, Shape{3}}},
      {"_backward_linear_reg_out", {{"grad_scale", "3"}}, {s, s}},
      {"_backward_softmax", {{"axis", "0"}}, {s, s}},
      {"_backward_log_softmax", {}, {s, s}},
      {"_backward_sub", {}, {s}},
      {"_backward_copy", {}, {s}},
      {"_backward_sqrt", {}, {s, s}},
      {"_backward_rdiv_scalar", {{"scalar", "2"}}, {s, s}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    const Op& op = get_op(c.op);
    std::vector<NDArray> in;
    for (const Shape& shape : c.shapes) in.push_back(rand(shape, 0.5, 2));
    if (std::string(c.op) == "_backward_SoftmaxOutput") in[1] = make<double>(Shape{3}, {0, 3, 1});
    const std::vector<NDArray> want = invoke(op, in, c.attrs);
    for (const auto& [i, o] : op.inplace) {
      std::vector<NDArray> fresh;
      for (const NDArray& a : in) fresh.push_back(call("_copy", {a})[0]);
      std::vector<NDArray> outs;
      for (size_t j = 0; j < want.size(); ++j) {
        outs.push_back(static_cast<int>(j) == o
                           ? fresh[static_cast<size_t>(i)]
                           : NDArray(want[j].shape(), Context::cpu(0), want[j].dtype()));
      }
      invoke(op, fresh, c.attrs, outs);
      for (size_t j = 0; j < want.size(); ++j) {
        expect_values(doubles<double>(outs[j]), doubles<double>(want[j]), 1e-12,
                      "in place " + std::to_string(i) + "->" + std::to_string(o) + ", output " +
                          std::to_string(j));
      }
    }
  }
}

TEST(BackwardOps, MismatchedShapesNameTheOperatorAndShapes) {
  const NDArray x = make<float>(Shape{2, 3}, std::vector<float>(6, 1));
  const NDArray w = make<float>(Shape{2, 3}, std::vector<float>(6, 1));
  const NDArray dy = make<float>(Shape{2, 5}, std::vector<float>(10, 1));
  std::string msg = error_of([&] {
    call("_backward_FullyConnected", {dy, x, w}, {{"num_hidden", "2"}});
  });
  EXPECT_NE(msg.find("_backward_FullyConnected"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,5)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,2)"), std::string::npos) << msg;
  msg = error_of([&] { call("_backward_dot", {dy, x, w}, {{"transpose_b", "true"}}); });
  EXPECT_NE(msg.find("_backward_dot"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,5)"), std::string::npos) << msg;
  msg = error_of([&] { call("_backward_Activation", {dy, x}, {{"act_type", "relu"}}); });
  EXPECT_NE(msg.find("_backward_Activation"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,3)"), std::string::npos) << msg;
  msg = error_of([&] {
    call("_backward_broadcast_add", {dy, x, make<float>(Shape{3}, {1, 1, 1})});
  });
  EXPECT_NE(msg.find("_backward_broadcast_add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,5)"), std::string::npos) << msg;
  msg = error_of([&] { call("_backward_sum", {dy, x}, {{"axis", "1"}}); });
  EXPECT_NE(msg.find("_backward_sum"), std::string::npos) << msg;
  msg = error_of([&] { call("_backward_reshape", {dy, x}); });
  EXPECT_NE(msg.find("_backward_reshape"), std::string::npos) << msg;
  msg = error_of([&] { call("_backward_mul", {dy, x, x}); });
  EXPECT_NE(msg.find("_backward_mul"), std::string::npos) << msg;
  // The CPU's _backward_FullyConnected runs float32 and float64 only (the GPU's takes float16
  // too): its kernel refuses float16, naming the operator, when the operation runs.
  const NDArray xh = make<half>(Shape{2, 3}, std::vector<half>(6, half(1.0f)));
  msg = error_of([&] {
    call("_backward_FullyConnected",
         {make<half>(Shape{2, 2}, std::vector<half>(4, half(1.0f))), xh, xh},
         {{"num_hidden", "2"}})[0]
        .wait_to_read();
  });
  EXPECT_NE(msg.find("_backward_FullyConnected"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float16"), std::string::npos) << msg;
  // A gradient of integers is refused by name.
  const NDArray xi = make<int32_t>(Shape{2}, {1, 2});
  msg = error_of([&] { call("_backward_sigmoid", {xi, xi}); });
  EXPECT_NE(msg.find("_backward_sigmoid"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

TEST(BackwardOps, ElemwiseOperatorsNeedEqualShapes) {
  for (const char* alias : {"_add", "_plus", "_Plus"})
    EXPECT_EQ(get_op(alias).name, "elemwise_add");
  for (const char* alias : {"_sub", "_minus", "_Minus"}) {
    EXPECT_EQ(get_op(alias).name, "elemwise_sub");
  }
  for (const char* alias : {"_mul", "_Mul"}) EXPECT_EQ(get_op(alias).name, "elemwise_mul");
  for (const char* alias : {"_div", "_Div"}) EXPECT_EQ(get_op(alias).name, "elemwise_div");
  EXPECT_EQ(get_op("identity").name, "_copy");
  const NDArray a = make<float>(Shape{2}, {6, 8}), b = make<float>(Shape{2}, {2, 4});
  EXPECT_EQ(call("elemwise_add", {a, b})[0].to_vector<float>(), (std::vector<float>{8, 12}));
  EXPECT_EQ(call("_minus", {a, b})[0].to_vector<float>(), (std::vector<float>{4, 4}));
  EXPECT_EQ(call("_Mul", {a, b})[0].to_vector<float>(), (std::vector<float>{12, 32}));
  EXPECT_EQ(call("_div", {a, b})[0].to_vector<float>(), (std::vector<float>{3, 2}));
  EXPECT_EQ(call("_grad_add", {a, b})[0].to_vector<float>(), (std::vector<float>{8, 12}));
  EXPECT_EQ(call("identity", {a})[0].to_vector<float>(), (std::vector<float>{6, 8}));
  const std::string msg = error_of([&] { call("elemwise_add", {a, make<float>(Shape{1}, {1})}); });
  EXPECT_NE(msg.find("elemwise_add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(1,)"), std::string::npos) << msg;
}

TEST(BackwardOps, GraphHelperOperators) {
  const NDArray a = make<float>(Shape{2}, {1, 2});
  const NDArray like = make<double>(Shape{2}, {9, 9});
  // The head gradient passes through with its own dtype; the shapes must agree.
  const NDArray id = call("_identity_with_attr_like_rhs", {a, like})[0];
  EXPECT_EQ(id.to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_NE(error_of([&] {
              call("_identity_with_attr_like_rhs", {a, make<float>(Shape{3}, {1, 2, 3})});
            }).find("_identity_with_attr_like_rhs"),
            std::string::npos);
  // _zeros_without_dtype: float32 by default, the output slot's dtype when one is given.
  const NDArray z = call("_zeros_without_dtype", {}, {{"shape", "(2, 2)"}})[0];
  EXPECT_EQ(z.dtype(), DType::kFloat32);
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(4, 0));
  NDArray out(Shape{3}, Context::cpu(0), DType::kFloat64);
  std::vector<NDArray> outs = {out};
  invoke(get_op("_zeros_without_dtype"), std::vector<NDArray>{}, {{"shape", "(3,)"}}, outs);
  EXPECT_EQ(out.to_vector<double>(), std::vector<double>(3, 0));
  // MXNet writes an unset dtype as -1.
  invoke(get_op("_zeros_without_dtype"), std::vector<NDArray>{},
         {{"shape", "(3,)"}, {"dtype", "-1"}}, outs);
  EXPECT_EQ(out.dtype(), DType::kFloat64);
  // Cast's gradient takes the input's dtype.
  const Attrs cast = {{"dtype", "float64"}};
  std::vector<NDArray> in = {a};
  const std::vector<NDArray> y = call("Cast", in, cast);
  std::vector<NDArray> og = {make<double>(Shape{2}, {0.5, 4})};
  const NDArray g = gradient_eager(get_op("Cast"), cast, in, y, og)[0];
  EXPECT_EQ(g.dtype(), DType::kFloat32);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0.5f, 4}));
}

// softmax with an output dtype: the gradient reaches the input in the input's dtype.
TEST(BackwardOps, SoftmaxWithOutputDtypeGivesTheInputDtype) {
  const NDArray x = make<float>(Shape{2, 2}, {1, 2, 3, 5});
  const Attrs attrs = {{"dtype", "float64"}};
  std::vector<NDArray> in = {x};
  const std::vector<NDArray> y = call("softmax", in, attrs);
  ASSERT_EQ(y[0].dtype(), DType::kFloat64);
  std::vector<NDArray> og = {make<double>(Shape{2, 2}, {1, 0, 0, 1})};
  const NDArray g = gradient_eager(get_op("softmax"), attrs, in, y, og)[0];
  EXPECT_EQ(g.dtype(), DType::kFloat32);
  const std::vector<double> yv = y[0].to_vector<double>();
  // dx = y (dy - sum(dy y)).
  const std::vector<double> want = {yv[0] * (1 - yv[0]), -yv[1] * yv[0], -yv[2] * yv[3],
                                    yv[3] * (1 - yv[3])};
  const std::vector<float> got = g.to_vector<float>();
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

}  // namespace
}  // namespace nanomx::ops
