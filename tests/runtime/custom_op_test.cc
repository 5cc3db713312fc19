// Custom operators in the operators layer (ops/custom.h), with a C++ property object: the body
// runs on a worker thread on aliases of the arrays, may call and wait for other operators, and
// its errors reach the caller at the next wait; Custom's gradient runs the user's backward.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nanomx/error.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "ops/custom.h"
#include "ops/gradient.h"

namespace nanomx::ops::custom {
namespace {

NDArray from(std::vector<float> v) {
  NDArray a(Shape({static_cast<int64_t>(v.size())}), Context::cpu(0));
  a.sync_copy_from_cpu(v.data(), v.size() * sizeof(float));
  return a;
}

std::atomic<int> body_calls{0};

// out = in * factor, computed by pushing _mul_scalar and waiting for it inside the body;
// backward: in_grad = out_grad * factor. factor "fail" throws in forward.
class Scale final : public Operator {
 public:
  explicit Scale(std::string factor) : factor_(std::move(factor)) {}
  void forward(bool, std::span<const int> req, std::span<const NDArray> in_data,
               std::span<const NDArray> out_data, std::span<const NDArray>) override {
    ++body_calls;
    EXPECT_EQ(req[0], kWriteTo);
    NANOMX_CHECK(factor_ != "fail") << "failing on purpose";
    NDArray tmp = invoke_one(get_op("_mul_scalar"), in_data, {{"scalar", factor_}});
    tmp.wait_to_read();  // a wait inside the body must not deadlock
    invoke(get_op("_copyto"), {&tmp, 1}, {}, out_data);
  }
  void backward(std::span<const int>, std::span<const NDArray> out_grad, std::span<const NDArray>,
                std::span<const NDArray>, std::span<const NDArray> in_grad,
                std::span<const NDArray>) override {
    invoke(get_op("_mul_scalar"), out_grad.first(1), {{"scalar", factor_}}, in_grad);
  }

 private:
  std::string factor_;
};

class ScaleProp final : public Prop {
 public:
  explicit ScaleProp(std::string factor) : factor_(std::move(factor)) {}
  std::vector<std::string> list_arguments() override { return {"data"}; }
  std::vector<std::string> list_outputs() override { return {"output"}; }
  std::vector<std::string> list_auxiliary_states() override { return {}; }
  void infer_shape(std::vector<Shape>& in, std::vector<Shape>& out, std::vector<Shape>&) override {
    out = {in[0]};
  }
  void infer_type(std::vector<int>& in, std::vector<int>& out, std::vector<int>&) override {
    out = {in[0]};
  }
  std::vector<int> declare_backward_dependency(std::span<const int> out_grad, std::span<const int>,
                                               std::span<const int>) override {
    return {out_grad.begin(), out_grad.end()};
  }
  std::unique_ptr<Operator> create_operator(Context, const std::vector<Shape>&,
                                            const std::vector<int>&) override {
    return std::make_unique<Scale>(factor_);
  }
  bool is_train() const override { return false; }

 private:
  std::string factor_;
};

void register_scale() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_op("CxxScale", [](const std::string&, const Attrs& kwargs) {
      std::string factor = "1";
      for (const auto& [k, v] : kwargs) {
        if (k == "factor") factor = v;
      }
      return std::make_unique<ScaleProp>(factor);
    });
  });
}

TEST(CustomOp, ForwardRunsTheBodyOnAliases) {
  register_scale();
  EXPECT_TRUE(registered("CxxScale"));
  const NDArray x = from({1, 2, 3});
  const int before = body_calls.load();
  NDArray y = invoke_one(get_op("Custom"), {&x, 1}, {{"op_type", "CxxScale"}, {"factor", "3"}});
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 6, 9}));
  EXPECT_EQ(body_calls.load(), before + 1);
  // Many calls in flight, each waiting inside its body.
  std::vector<NDArray> ys;
  for (int i = 0; i < 16; ++i) {
    ys.push_back(invoke_one(get_op("Custom"), {&x, 1}, {{"op_type", "CxxScale"}, {"factor", "2"}}));
  }
  for (const NDArray& r : ys) EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(CustomOp, AnErrorInTheBodyIsRaisedAtTheWaitAndTheEngineGoesOn) {
  register_scale();
  const NDArray x = from({1});
  NDArray y = invoke_one(get_op("Custom"), {&x, 1}, {{"op_type", "CxxScale"}, {"factor", "fail"}});
  try {
    y.wait_to_read();
    FAIL() << "the body's error must reach the wait";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("failing on purpose"), std::string::npos) << e.what();
  }
  NDArray z = invoke_one(get_op("Custom"), {&x, 1}, {{"op_type", "CxxScale"}, {"factor", "5"}});
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{5}));
}

TEST(CustomOp, GradientRunsTheUsersBackward) {
  register_scale();
  const Op& op = get_op("Custom");
  const Attrs attrs = {{"op_type", "CxxScale"}, {"factor", "4"}};
  const NDArray x = from({1, 2});
  std::vector<NDArray> out = invoke(op, {&x, 1}, attrs);
  const NDArray g = from({1, 10});
  std::vector<NDArray> grads = gradient_eager(op, attrs, {&x, 1}, out, {&g, 1});
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].to_vector<float>(), (std::vector<float>{4, 40}));
}

TEST(CustomOp, BadCallsAreRefusedAtOnce) {
  const NDArray x = from({1});
  try {
    invoke(get_op("Custom"), {&x, 1}, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Required argument `op_type` is missing."),
              std::string::npos)
        << e.what();
  }
  try {
    invoke(get_op("Custom"), {&x, 1}, {{"op_type", "NoSuchCxxOp"}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Cannot find custom operator NoSuchCxxOp"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nanomx::ops::custom
