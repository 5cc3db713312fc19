// The optimizer update operators (ops/optimizer.cc): MXNet's formulas, in place on the
// weight, the state inputs written and ordered as writes by the engine.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

#include "nanomx/engine.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "ops/gradient.h"
#include "ops/op.h"
#include "test_util.h"

namespace nanomx::ops {
namespace {

using test::error_of;
using test::expect_close;
using test::make;

const Shape kShape({4});

float clipf(float x, float c) { return c < 0 ? x : std::fmin(std::fmax(x, -c), c); }

TEST(OpsOptimizer, SgdUpdateInPlaceMatchesFormula) {
  const std::vector<float> w0 = {1, -2, 3, 0.5f}, g = {10, -4, 0.5f, 100};
  NDArray w = make<float>(kShape, w0), grad = make<float>(kShape, g);
  const Attrs attrs = {
      {"lr", "0.1"}, {"wd", "0.01"}, {"rescale_grad", "0.5"}, {"clip_gradient", "2"}};
  std::vector<NDArray> in = {w, grad}, out = {w};
  invoke("sgd_update", in, attrs, out);
  std::vector<float> want(4);
  for (size_t i = 0; i < 4; ++i) {
    want[i] = (1 - 0.1f * 0.01f) * w0[i] - 0.1f * clipf(0.5f * g[i], 2);
  }
  expect_close(w.to_vector<float>(), want, 1e-6, "sgd_update");
}

TEST(OpsOptimizer, SgdUpdateWithoutClipAndNewOutput) {
  NDArray w = make<float>(kShape, {1, 2, 3, 4}), grad = make<float>(kShape, {1, 1, 1, 1});
  std::vector<NDArray> in = {w, grad};
  NDArray o = invoke_one(get_op("sgd_update"), in, {{"lr", "0.5"}});
  expect_close(o.to_vector<float>(), {0.5f, 1.5f, 2.5f, 3.5f}, 1e-6, "new output");
  expect_close(w.to_vector<float>(), {1, 2, 3, 4}, 0, "weight untouched without out=");
}

TEST(OpsOptimizer, SgdMomUpdateWritesMomentumTwoSteps) {
  std::vector<float> wv = {1, -1, 2, 0}, mv = {0, 0, 0, 0};
  const std::vector<float> g = {0.5f, 1, -3, 2};
  NDArray w = make<float>(kShape, wv), grad = make<float>(kShape, g), mom = make<float>(kShape, mv);
  const Attrs attrs = {{"lr", "0.1"}, {"momentum", "0.9"}, {"wd", "0.001"}};
  for (int step = 0; step < 2; ++step) {
    std::vector<NDArray> in = {w, grad, mom}, out = {w};
    invoke("sgd_mom_update", in, attrs, out);
    for (size_t i = 0; i < 4; ++i) {
      mv[i] = 0.9f * mv[i] - 0.1f * 0.001f * wv[i] - 0.1f * g[i];
      wv[i] += mv[i];
    }
  }
  expect_close(mom.to_vector<float>(), mv, 1e-6, "momentum");
  expect_close(w.to_vector<float>(), wv, 1e-6, "weight");
}

TEST(OpsOptimizer, AdamUpdateClipsAfterWeightDecay) {
  std::vector<double> wv = {1, -2, 0.5, 3}, mean = {0.1, 0, -0.2, 0}, var = {0.01, 0, 0.04, 1};
  const std::vector<double> g = {4, -1, 0.25, 0};
  NDArray w = make<double>(kShape, wv), grad = make<double>(kShape, g),
          m = make<double>(kShape, mean), v = make<double>(kShape, var);
  const Attrs attrs = {{"lr", "0.01"},        {"beta1", "0.8"}, {"beta2", "0.99"},
                       {"epsilon", "1e-6"},   {"wd", "0.1"},    {"rescale_grad", "0.5"},
                       {"clip_gradient", "1"}};
  std::vector<NDArray> in = {w, grad, m, v}, out = {w};
  invoke("adam_update", in, attrs, out);
  for (size_t i = 0; i < 4; ++i) {
    double gi = 0.5 * g[i] + 0.1 * wv[i];
    gi = std::fmin(std::fmax(gi, -1.0), 1.0);
    mean[i] = 0.8 * mean[i] + 0.2 * gi;
    var[i] = 0.99 * var[i] + 0.01 * gi * gi;
    wv[i] -= 0.01 * mean[i] / (std::sqrt(var[i]) + 1e-6);
  }
  expect_close(m.to_vector<double>(), mean, 1e-12, "mean");
  expect_close(v.to_vector<double>(), var, 1e-12, "var");
  expect_close(w.to_vector<double>(), wv, 1e-12, "weight");
}

TEST(OpsOptimizer, MixedPrecisionSgdUpdatesTheMasterCopy) {
  NDArray w = make<half>(kShape, {half(1.0f), half(2.0f), half(3.0f), half(4.0f)});
  NDArray grad = make<half>(kShape, {half(1.0f), half(-1.0f), half(0.5f), half(0.0f)});
  NDArray w32 = make<float>(kShape, {1.0f, 2.0f, 3.0f, 4.0f});
  std::vector<NDArray> in = {w, grad, w32}, out = {w};
  invoke("mp_sgd_update", in, {{"lr", "0.25"}}, out);
  const std::vector<float> want = {0.75f, 2.25f, 2.875f, 4.0f};
  expect_close(w32.to_vector<float>(), want, 1e-7, "weight32");
  const std::vector<half> got = w.to_vector<half>();
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(static_cast<float>(got[i]), want[i]) << i;
  // The master copy must be float32.
  NDArray bad = make<half>(kShape, {half(1.0f), half(1.0f), half(1.0f), half(1.0f)});
  std::vector<NDArray> wrong = {w, grad, bad};
  const std::string msg = error_of([&] { invoke("mp_sgd_update", wrong, {{"lr", "0.1"}}); });
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
}

// The momentum is written by the update: a wait on it must wait for the update, even while the
// update itself still waits for its gradient. Without the mutated-input declaration the wait
// returns at once and reads the old momentum.
TEST(OpsOptimizer, StateInputsAreOrderedAsWrites) {
  NDArray w = make<float>(kShape, {0, 0, 0, 0}), grad = make<float>(kShape, {1, 1, 1, 1}),
          mom = make<float>(kShape, {0, 0, 0, 0});
  mom.wait_to_read();
  const engine::VarHandle writes[] = {grad.var()};
  engine::Engine::get().push([] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); },
                             Context::cpu(0), {}, writes);
  std::vector<NDArray> in = {w, grad, mom}, out = {w};
  invoke("sgd_mom_update", in, {{"lr", "1"}, {"momentum", "0.5"}}, out);
  mom.wait_to_read();
  std::vector<float> m(4);
  std::memcpy(m.data(), mom.data(), sizeof(float) * 4);  // no further wait
  EXPECT_EQ(m, (std::vector<float>{-1, -1, -1, -1}));
  engine::Engine::get().wait_all();
}

TEST(OpsOptimizer, MultiSgdUpdatesEachWeightWithItsOwnRate) {
  NDArray w0 = make<float>(kShape, {1, 2, 3, 4}), g0 = make<float>(kShape, {1, 1, 1, 1});
  NDArray w1 = make<float>(Shape({2}), {10, 20}), g1 = make<float>(Shape({2}), {-2, 4});
  std::vector<NDArray> in = {w0, g0, w1, g1}, out = {w0, w1};
  invoke(
      "multi_sgd_update", in,
      {{"lrs", "(0.5, 0.1)"}, {"wds", "(0.0, 0.5)"}, {"num_weights", "2"}, {"rescale_grad", "0.5"}},
      out);
  expect_close(w0.to_vector<float>(), {0.75f, 1.75f, 2.75f, 3.75f}, 1e-6, "weight 0");
  expect_close(w1.to_vector<float>(), {(1 - 0.05f) * 10 + 0.1f, (1 - 0.05f) * 20 - 0.2f}, 1e-6,
               "weight 1");
}

TEST(OpsOptimizer, MultiSgdMomWritesEachMomentum) {
  NDArray w0 = make<float>(Shape({2}), {1, 2}), g0 = make<float>(Shape({2}), {1, -1}),
          m0 = make<float>(Shape({2}), {0.5f, 0.5f});
  NDArray w1 = make<float>(Shape({1}), {3}), g1 = make<float>(Shape({1}), {2}),
          m1 = make<float>(Shape({1}), {0});
  std::vector<NDArray> in = {w0, g0, m0, w1, g1, m1}, out = {w0, w1};
  invoke("multi_sgd_mom_update", in,
         {{"lrs", "[0.1, 0.2]"}, {"wds", "[0, 0]"}, {"momentum", "0.9"}, {"num_weights", "2"}},
         out);
  expect_close(m0.to_vector<float>(), {0.45f - 0.1f, 0.45f + 0.1f}, 1e-6, "mom 0");
  expect_close(w0.to_vector<float>(), {1.35f, 2.55f}, 1e-6, "weight 0");
  expect_close(m1.to_vector<float>(), {-0.4f}, 1e-6, "mom 1");
  expect_close(w1.to_vector<float>(), {2.6f}, 1e-6, "weight 1");
  EXPECT_TRUE(get_op("multi_sgd_mom_update").mutates(5));
  EXPECT_FALSE(get_op("multi_sgd_mom_update").mutates(4));
  EXPECT_TRUE(get_op("multi_sgd_mom_update").may_share(3, 1));
  EXPECT_FALSE(get_op("multi_sgd_mom_update").may_share(3, 0));
}

TEST(OpsOptimizer, MultiSgdCountsAreChecked) {
  NDArray w = make<float>(kShape, {1, 2, 3, 4});
  std::vector<NDArray> in = {w, w, w};
  std::string msg = error_of([&] {
    invoke("multi_sgd_update", in, {{"lrs", "(1,)"}, {"wds", "(0,)"}, {"num_weights", "1"}});
  });
  EXPECT_NE(msg.find("multi_sgd_update"), std::string::npos) << msg;
  EXPECT_NE(msg.find("num_weights"), std::string::npos) << msg;
  std::vector<NDArray> two = {w, w};
  msg = error_of([&] {
    invoke("multi_sgd_update", two, {{"lrs", "(1, 2)"}, {"wds", "(0,)"}, {"num_weights", "1"}});
  });
  EXPECT_NE(msg.find("'lrs' has 2"), std::string::npos) << msg;
  msg = error_of([&] {
    invoke("multi_sgd_update", two, {{"lrs", "(x,)"}, {"wds", "(0,)"}, {"num_weights", "1"}});
  });
  EXPECT_NE(msg.find("lrs"), std::string::npos) << msg;
}

TEST(OpsOptimizer, DefinitionsAreNotDifferentiableAndDeclareTheirState) {
  EXPECT_EQ(get_op("adam_update").mutate_inputs, (std::vector<int>{2, 3}));
  EXPECT_EQ(get_op("sgd_mom_update").mutate_inputs, (std::vector<int>{2}));
  EXPECT_TRUE(get_op("sgd_update").mutate_inputs.empty());
  for (const char* name : {"sgd_update", "sgd_mom_update", "adam_update", "mp_sgd_update",
                           "mp_sgd_mom_update", "multi_sgd_update", "multi_sgd_mom_update"}) {
    EXPECT_FALSE(get_op(name).backward.differentiable) << name;
    EXPECT_EQ(find_gradient(get_op(name)), nullptr) << name;
  }
}

TEST(OpsOptimizer, BadCallsAreNamed) {
  NDArray w = make<float>(kShape, {1, 2, 3, 4}), g3 = make<float>(Shape({3}), {1, 2, 3});
  std::vector<NDArray> in = {w, w};
  std::string msg = error_of([&] { invoke("sgd_update", in, {}); });
  EXPECT_NE(msg.find("sgd_update"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'lr'"), std::string::npos) << msg;
  std::vector<NDArray> mismatched = {w, g3};
  msg = error_of([&] { invoke("sgd_update", mismatched, {{"lr", "1"}}); });
  EXPECT_NE(msg.find("sgd_update"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(3,)"), std::string::npos) << msg;
  msg = error_of([&] { invoke("sgd_update", in, {{"lr", "1"}, {"beta1", "0.9"}}); });
  EXPECT_NE(msg.find("beta1"), std::string::npos) << msg;
  NDArray wi = make<int32_t>(kShape, {1, 2, 3, 4});
  std::vector<NDArray> ints = {wi, wi};
  msg = error_of([&] {
    invoke("sgd_update", ints, {{"lr", "1"}}, std::span<const NDArray>(ints).first(1));
    wi.wait_to_read();
  });
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

}  // namespace
}  // namespace nanomx::ops
