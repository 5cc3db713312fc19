// The gradient seam (ops/gradient.h): rules run eagerly on arrays.
#include <gtest/gtest.h>

#include <vector>

#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "ops/gradient.h"

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

}  // namespace
}  // namespace nanomx::ops
