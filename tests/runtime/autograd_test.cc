// The autograd tape (autograd/autograd.h): recording, backward into leaves, grad(), freeing.
#include "autograd/autograd.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "nanomx/error.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "ops/op.h"

namespace nanomx::autograd {
namespace {

NDArray from(std::vector<float> v) {
  NDArray a(Shape({static_cast<int64_t>(v.size())}), Context::cpu(0));
  a.sync_copy_from_cpu(v.data(), v.size() * sizeof(float));
  return a;
}

std::vector<float> values(const NDArray& a) { return a.to_vector<float>(); }

// One call, recorded as the C API records it.
NDArray call(const char* op, const NDArray& in, const char* scalar) {
  const ops::Op& o = ops::get_op(op);
  const ops::Attrs attrs = {{"scalar", scalar}};
  std::vector<NDArray> out = ops::invoke(o, {&in, 1}, attrs);
  if (is_recording()) record(o, attrs, {&in, 1}, out);
  return out[0];
}

class Recording {
 public:
  Recording() { set_recording(true); }
  ~Recording() { set_recording(false); }
};

TEST(Autograd, FlagsArePerThreadAndReturnThePreviousValue) {
  EXPECT_FALSE(set_recording(true));
  EXPECT_TRUE(is_recording());
  bool other = true;
  std::thread([&] { other = is_recording(); }).join();
  EXPECT_FALSE(other);
  EXPECT_TRUE(set_recording(false));
  EXPECT_FALSE(set_training(true));
  EXPECT_TRUE(set_training(false));
}

TEST(Autograd, BackwardWritesAndAddsIntoLeaves) {
  NDArray x = from({1, 2, 3});
  NDArray g = from({0, 0, 0});
  NDArray vars[] = {x};
  const NDArray grads[] = {g};
  const GradReq reqs[] = {GradReq::kAdd};
  mark_variables(vars, grads, reqs);
  x = vars[0];
  for (int i = 0; i < 2; ++i) {
    NDArray y;
    {
      Recording r;
      y = call("_plus_scalar", call("_mul_scalar", x, "3"), "1");
    }
    EXPECT_TRUE(in_graph(y));
    backward({&y, 1}, {}, {}, false, false, true);
  }
  EXPECT_EQ(values(grad_of(x)), (std::vector<float>{6, 6, 6}));
  EXPECT_EQ(values(g), (std::vector<float>{6, 6, 6}));  // the same buffer
}

TEST(Autograd, UnrecordedCallsAndFreedGraphsAreRefused) {
  NDArray x = from({1, 2});
  NDArray vars[] = {x};
  const NDArray grads[] = {from({0, 0})};
  const GradReq reqs[] = {GradReq::kWrite};
  mark_variables(vars, grads, reqs);
  x = vars[0];
  NDArray y = call("_mul_scalar", x, "2");  // not recording
  EXPECT_FALSE(in_graph(y));
  EXPECT_THROW(backward({&y, 1}, {}, {}, false, false, true), Error);
  {
    Recording r;
    y = call("_mul_scalar", x, "2");
  }
  backward({&y, 1}, {}, {}, false, false, true);
  try {
    backward({&y, 1}, {}, {}, false, false, true);
    FAIL() << "a second backward without retain_graph must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("retain_graph=True"), std::string::npos) << e.what();
  }
}

TEST(Autograd, GradReturnsWithoutTouchingBuffersAndSumsBranches) {
  NDArray x = from({1, 2});
  NDArray vars[] = {x};
  const NDArray grads[] = {from({0, 0})};
  const GradReq reqs[] = {GradReq::kWrite};
  mark_variables(vars, grads, reqs);
  x = vars[0];
  NDArray y, z;
  {
    Recording r;
    y = call("_mul_scalar", x, "2");
    // x used twice: 2x * 5 and 2x + 1 as two heads, gradients summed: 10 + 2.
    z = call("_mul_scalar", y, "5");
  }
  NDArray w;
  {
    Recording r;
    w = call("_plus_scalar", y, "1");
  }
  const NDArray heads[] = {z, w};
  std::vector<NDArray> g = backward(heads, {}, {&x, 1}, true, false, true);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(values(g[0]), (std::vector<float>{12, 12}));
  EXPECT_EQ(values(grad_of(x)), (std::vector<float>{0, 0}));
}

TEST(Autograd, WritingIntoAnArrayInAGraphIsRefused) {
  NDArray x = from({1});
  NDArray vars[] = {x};
  const NDArray grads[] = {from({0})};
  const GradReq reqs[] = {GradReq::kWrite};
  mark_variables(vars, grads, reqs);
  EXPECT_THROW(check_outputs({&vars[0], 1}), Error);
  EXPECT_NO_THROW(check_outputs({&x, 1}));  // the unmarked copy is another value
  // Views and detached copies are not in the graph.
  EXPECT_FALSE(in_graph(vars[0].reshape(Shape({1, 1}))));
  EXPECT_FALSE(in_graph(vars[0].detach()));
}

TEST(Autograd, CreateGraphIsRefused) {
  NDArray x = from({1});
  EXPECT_THROW(backward({&x, 1}, {}, {}, false, true, true), Error);
}

}  // namespace
}  // namespace nanomx::autograd
