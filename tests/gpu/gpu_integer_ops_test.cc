// The CUDA kernels on the integer dtypes (uint8, int8, int32, int64) against the CPU's, to the
// bit: numpy's wrapping arithmetic, x / 0 == 0, the sign rule of mod, exact integer power, the
// functions computed through double and converted back, the wrapping sums and truncating means,
// Cast between all seven dtypes. Skipped without a GPU (CI runs them on the emulated device).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gpu_compare.h"
#include "nanomx/engine.h"
#include "nanomx/error.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"

namespace nanomx {
namespace {

using namespace gpu_test;  // NOLINT: the fixture and comparisons of every GPU test file

constexpr const char* kIntegerDtypes[] = {"uint8", "int8", "int32", "int64"};

// Values that meet every integer edge: 0, +-1 (division), the extremes of each width (they wrap
// differently in each dtype), numbers whose products overflow.
std::vector<int64_t> edge_values() {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  return {0,    1,    -1,        2,          -2,  3,    -3,    7,     -7,         100,
          -100, 127,  -128,      255,        256, -129, 32767, 65535, 2147483647, -2147483648,
          kMax, kMin, 123456789, -987654321, 5,   -5,   64,    9,     11,         -13};
}

// The edge values and a second operand built from them (rotated: each value meets others,
// including 0 and -1 as divisors).
std::pair<NDArray, NDArray> operands(const char* dtype) {
  std::vector<int64_t> a = edge_values(), b = a;
  std::rotate(b.begin(), b.begin() + 7, b.end());
  b[3] = 0;
  b[4] = -1;
  const Shape shape{5, 6};
  return {int_array(shape, a, dtype), int_array(shape, b, dtype)};
}

TEST_F(Gpu, IntegerBinaryOperatorsAsTheCpu) {
  for (const char* dtype : kIntegerDtypes) {
    const auto [a, b] = operands(dtype);
    const NDArray row = int_array(Shape{1, 6}, {3, -1, 0, 7, 2, -128}, dtype);
    for (const char* op : {"add", "sub", "mul", "div"}) {
      compare_exact(std::string("elemwise_") + op, {a, b}, {});
      compare_exact(std::string("broadcast_") + op, {a, row}, {});
    }
    for (const char* op :
         {"power", "maximum", "minimum", "mod", "hypot", "equal", "not_equal", "greater",
          "greater_equal", "lesser", "lesser_equal", "logical_and", "logical_or", "logical_xor"}) {
      compare_exact(std::string("_") + op, {a, b}, {});
      compare_exact(std::string("broadcast_") + op, {row, a}, {});
    }
    // Small exponents too: power's loop, a negative exponent's 1 / -1 / 0.
    const NDArray small = int_array(Shape{5, 6}, std::vector<int64_t>(30, 3), dtype);
    compare_exact("_power", {a, small}, {});
    compare_exact("_power", {small, b}, {});
    compare_exact("add_n", {a, b, a}, {});
    compare_exact("_grad_add", {a, b}, {});
  }
}

TEST_F(Gpu, IntegerScalarAndUnaryOperatorsAsTheCpu) {
  for (const char* dtype : kIntegerDtypes) {
    const NDArray a = operands(dtype).first;
    // The scalar is converted to the array's dtype first (2.7 is 2, -2 wraps in uint8).
    for (const char* s : {"3", "-2", "0", "2.7", "300"}) {
      for (const char* op :
           {"_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar", "_div_scalar",
            "_rdiv_scalar", "_power_scalar", "_rpower_scalar", "_mod_scalar", "_rmod_scalar",
            "_maximum_scalar", "_minimum_scalar", "_equal_scalar", "_greater_scalar",
            "_lesser_equal_scalar", "_logical_xor_scalar", "_hypot_scalar"}) {
        compare_exact(op, {a}, {{"scalar", s}});
      }
    }
    // Exact on integers: computed in the integer type (negative and square wrap, |INT_MIN| is
    // INT_MIN, roundings are the identity).
    for (const char* op : {"negative", "square", "abs", "sign", "relu", "floor", "ceil", "round",
                           "rint", "fix", "trunc", "logical_not"}) {
      compare_exact(op, {a}, {});
    }
    // Through double, converted back as numpy's astype (NaN and infinities to INT64_MIN, then
    // wrapped). Small values keep them in the functions' domains for most elements.
    const NDArray small = int_array(Shape{12}, {0, 1, 2, 3, 4, 9, 10, 16, 100, 1000, 27, 8}, dtype);
    for (const char* op :
         {"sqrt",    "exp",    "log",        "log2",    "log10",   "log1p",   "expm1",  "cbrt",
          "rsqrt",   "rcbrt",  "reciprocal", "sin",     "cos",     "tan",     "arctan", "sinh",
          "cosh",    "tanh",   "arcsinh",    "sigmoid", "degrees", "radians", "erf",    "gamma",
          "gammaln", "arcsin", "arccos",     "arccosh", "arctanh"}) {
      compare_exact(op, {small}, {});
    }
  }
}

TEST_F(Gpu, IntegerReductionsAsTheCpu) {
  for (const char* dtype : kIntegerDtypes) {
    const NDArray a = operands(dtype).first.reshape(Shape{2, 3, 5});
    for (const char* op : {"sum", "prod", "max", "min", "nansum", "nanprod", "mean"}) {
      compare_exact(op, {a}, {});
      compare_exact(op, {a}, {{"axis", "1"}});
      compare_exact(op, {a}, {{"axis", "(0, 2)"}});
      compare_exact(op, {a}, {{"axis", "2"}, {"keepdims", "True"}});
    }
    compare_exact("norm", {a}, {});
    compare_exact("norm", {a}, {{"ord", "1"}, {"axis", "1"}});
    for (const char* op : {"argmax", "argmin"}) {
      compare_exact(op, {a}, {{"axis", "1"}});
      compare_exact(op, {a}, {});
    }
    // An empty integer mean is 0, as the CPU's (numpy's NaN has no integer).
    compare_exact("mean", {int_array(Shape{0, 3}, {}, dtype)}, {{"axis", "0"}});
  }
}

TEST_F(Gpu, IntegerCreationClipAndCopiesAsTheCpu) {
  for (const char* dtype : kIntegerDtypes) {
    const NDArray a = operands(dtype).first;
    compare_exact("clip", {a}, {{"a_min", "-3"}, {"a_max", "100.5"}});
    compare_exact("Reshape", {a}, {{"shape", "(6, 5)"}});
    compare_exact("_copy", {a}, {});
    compare_exact("zeros_like", {a}, {});
    compare_exact("ones_like", {a}, {});
    compare_exact("_slice_assign_scalar", {a},
                  {{"begin", "(1, 0)"}, {"end", "(3, 6)"}, {"step", "(1, 2)"}, {"scalar", "-7"}});
    const std::string d = dtype;
    compare_made_exact("_zeros", {{"shape", "(3, 4)"}, {"dtype", d}});
    compare_made_exact("_ones", {{"shape", "(3, 4)"}, {"dtype", d}});
    compare_made_exact("_full", {{"shape", "(3, 4)"}, {"value", "-300.5"}, {"dtype", d}});
    compare_made_exact("_arange", {{"start", "-3"}, {"stop", "40"}, {"step", "2.5"}, {"dtype", d}});
    compare_made_exact("_eye", {{"N", "4"}, {"M", "5"}, {"k", "1"}, {"dtype", d}});
    compare_made_exact("_linspace", {{"start", "-5"}, {"stop", "300"}, {"num", "9"}, {"dtype", d}});
    const NDArray index = int_array(Shape{4}, {0, 2, 5, -1}, dtype);
    compare_exact("one_hot", {index}, {{"depth", "4"}, {"dtype", d}});
    compare_exact("one_hot", {index}, {{"depth", "3"}, {"on_value", "-2"}, {"dtype", "float32"}});
  }
}

// norm with an out_dtype: read in double, the norm in double, converted once (as the CPU's).
TEST_F(Gpu, NormWithAnotherOutputDtype) {
  const NDArray x = random_array(Shape{3, 4, 5}, 90, -3.f, 3.f);
  for (const char* out : {"float64", "float16"}) {
    compare("norm", {x}, {{"out_dtype", out}});
    compare("norm", {x}, {{"out_dtype", out}, {"axis", "(0, 2)"}, {"ord", "1"}});
  }
  compare("norm", {cast(x, "float16")}, {{"out_dtype", "float32"}, {"axis", "1"}}, 1e-3f, 1e-3f);
  compare("norm", {operands("int32").first}, {{"out_dtype", "float64"}, {"axis", "1"}}, 1e-6f, 0.f);
}

// Cast between every pair of the seven dtypes, as the CPU's (numpy's astype): integers wrap,
// floats truncate toward zero into integers, NaN and values outside int64 become INT64_MIN
// before wrapping, integers round to the nearest float.
TEST_F(Gpu, CastBetweenAllDtypesAsTheCpu) {
  const char* all[] = {"float32", "float64", "float16", "uint8", "int8", "int32", "int64"};
  const double inf = std::numeric_limits<double>::infinity();
  const NDArray floats =
      float64_array(Shape{14}, {0.0, -0.0, 1.5, -1.5, 2.99, -2.99, 255.5, 300.0, -129.0, 65504.0,
                                1e10, 3e19, std::nan(""), -inf});
  for (const char* from : all) {
    const NDArray x = std::string(from).find("int") == std::string::npos ? cast(floats, from)
                                                                         : operands(from).first;
    for (const char* to : all) compare_exact("Cast", {x}, {{"dtype", to}});
  }
}

// The operators that stay float-only on the GPU refuse integers, naming the operator and dtype,
// and the process goes on.
TEST_F(Gpu, FloatOnlyKernelsRefuseIntegersClearly) {
  const NDArray a = operands("int32").first.copy_to(gpu());
  try {
    const NDArray y = ops::invoke("softmax", std::vector<NDArray>{a}, {})[0];
    engine::Engine::get().wait_all();
    FAIL() << "softmax of int32 on the GPU was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("softmax"), std::string::npos) << what;
    EXPECT_NE(what.find("int32"), std::string::npos) << what;
  }
  const NDArray sum = ops::invoke("sum", std::vector<NDArray>{a}, {})[0];
  EXPECT_EQ(sum.dtype(), DType::kInt32);
  EXPECT_EQ(sum.copy_to(Context::cpu(0)).to_vector<int32_t>().size(), 1u);
}

}  // namespace
}  // namespace nanomx
