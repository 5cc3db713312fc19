// The CUDA backend against the CPU (docs/cuda.md): every CUDA kernel's result matches the CPU
// kernel's within float32 tolerance; the allocator pools and reports to the memory profiler;
// copies between cpu and gpu follow the engine's dependency rules. Skipped without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/cuda/kernels/kernels.h"
#include "gpu_compare.h"
#include "nanomx/context.h"
#include "nanomx/engine.h"
#include "nanomx/error.h"
#include "nanomx/gpu.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "nanomx/storage.h"
#include "ops/registry.h"

namespace nanomx {
namespace {

using namespace gpu_test;  // NOLINT: the fixture and comparisons of every GPU test file

// Registering a kernel under a name that is no operator, or twice for one operator, throws, and
// that happens only where a GPU is visible: checked here, on every machine with the backend.
TEST(CudaKernels, EveryRegistrationNamesAnOperatorOnce) {
  std::map<const ops::Op*, std::string> seen;
  size_t count = 0;
  ops::for_each_cuda_kernel([&](std::string_view name, const ops::Kernel& kernel) {
    ++count;
    const ops::Op* op = ops::find_op(name);
    ASSERT_NE(op, nullptr) << "a CUDA kernel for '" << name << "', which is no operator";
    EXPECT_TRUE(static_cast<bool>(kernel)) << name;
    const auto [it, fresh] = seen.emplace(op, std::string(name));
    EXPECT_TRUE(fresh) << "'" << name << "' and '" << it->second << "' are one operator ("
                       << op->name << "): its CUDA kernel would be registered twice";
  });
  EXPECT_GT(count, 150u);
}

NDArray labels(int64_t rows, int classes, uint32_t seed, float ignored = -1.f);

// The same kernels in float64 (computed in double) and float16 (computed in float).
TEST_F(Gpu, Float64AndFloat16) {
  const NDArray a = random_array(Shape{6, 7}, 60, 0.5f, 2.f),
                b = random_array(Shape{6, 7}, 61, 0.5f, 2.f);
  const NDArray row = random_array(Shape{1, 7}, 62, 0.5f, 2.f);
  const NDArray w = random_array(Shape{5, 7}, 63), bias = random_array(Shape{5}, 64);
  const NDArray dy = random_array(Shape{6, 5}, 65);
  const NDArray label = labels(6, 7, 66);
  for (const auto& [dtype, rtol, atol] :
       {std::tuple{"float64", 1e-6f, 1e-7f}, std::tuple{"float16", 2e-2f, 2e-2f}}) {
    compare_as(dtype, "elemwise_mul", {a, b}, {}, rtol, atol);
    compare_as(dtype, "broadcast_div", {a, row}, {}, rtol, atol);
    compare_as(dtype, "_rminus_scalar", {a}, {{"scalar", "1.5"}}, rtol, atol);
    for (const char* op : {"exp", "log", "sqrt", "tanh", "sigmoid"}) {
      compare_as(dtype, op, {a}, {}, rtol, atol);
    }
    const NDArray x30 = a.reshape(Shape{42}).slice(0, 30);  // (out_grad, output, data)
    compare_as(dtype, "_backward_Activation", {dy.reshape(Shape{30}), x30, x30},
               {{"act_type", "tanh"}}, rtol, atol);
    compare_as(dtype, "sum", {a}, {{"axis", "1"}}, rtol, atol);
    compare_as(dtype, "mean", {a}, {}, rtol, atol);
    compare_as(dtype, "softmax", {a}, {}, rtol, atol);
    compare_as(dtype, "dot", {a, random_array(Shape{7, 3}, 67)}, {}, rtol, atol);
    compare_as(dtype, "batch_dot", {a.reshape(Shape{2, 3, 7}), random_array(Shape{2, 7, 4}, 68)},
               {}, rtol, atol);
    compare_as(dtype, "FullyConnected", {a, w, bias}, {{"num_hidden", "5"}}, rtol, atol);
    compare_as(dtype, "_backward_FullyConnected", {dy, a, w}, {{"num_hidden", "5"}}, rtol, atol);
    compare_as(dtype, "sgd_update", {w, random_array(Shape{5, 7}, 69)}, {{"lr", "0.1"}}, rtol,
               atol);
    compare_as(dtype, "_backward_SoftmaxOutput",
               {ops::invoke("softmax", std::vector<NDArray>{a}, {})[0], label}, {}, rtol, atol);
  }
  // Cast between every pair of float dtypes, as the CPU's.
  for (const char* from : {"float32", "float64", "float16"}) {
    for (const char* to : {"float32", "float64", "float16"}) {
      const NDArray x = cast(random_array(Shape{257}, 70, -100.f, 100.f), from);
      const NDArray c = cast(x, to);
      const NDArray g = cast(x.copy_to(gpu()), to);
      EXPECT_EQ(g.dtype(), c.dtype());
      EXPECT_EQ(cast(g.copy_to(Context::cpu(0)), "float32").to_vector<float>(),
                cast(c, "float32").to_vector<float>())
          << from << " -> " << to;
    }
  }
  // Mixed dtypes are refused naming both.
  try {
    ops::invoke("elemwise_add",
                std::vector<NDArray>{cast(a, "float64").copy_to(gpu()), a.copy_to(gpu())});
    engine::Engine::get().wait_all();
    FAIL() << "float64 + float32 on the GPU was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float"), std::string::npos) << e.what();
  }
}

// _random_uniform / _random_normal on the GPU: in range, the right moments, in every float
// dtype, repeatable under mx.random.seed and different from call to call.
TEST_F(Gpu, RandomSampling) {
  auto draw = [](const char* op, const ops::Attrs& extra) {
    ops::Attrs attrs = {{"shape", "(20001,)"}, {"ctx", "gpu(0)"}};
    attrs.insert(attrs.end(), extra.begin(), extra.end());
    const NDArray a = ops::invoke(op, std::vector<NDArray>{}, attrs)[0];
    return cast(a.copy_to(Context::cpu(0)), "float32").to_vector<float>();
  };
  auto moments = [](const std::vector<float>& v) {
    double sum = 0, sq = 0;
    for (float x : v) sum += x;
    const double mean = sum / static_cast<double>(v.size());
    for (float x : v) sq += (x - mean) * (x - mean);
    return std::pair{mean, std::sqrt(sq / static_cast<double>(v.size()))};
  };
  for (const char* dtype : {"float32", "float64", "float16"}) {
    const std::vector<float> u =
        draw("_random_uniform", {{"low", "-1"}, {"high", "2"}, {"dtype", dtype}});
    for (float x : u) ASSERT_TRUE(x >= -1.f && x <= 2.f) << x << " " << dtype;
    const auto [um, us] = moments(u);
    EXPECT_NEAR(um, 0.5, 0.05) << dtype;
    EXPECT_NEAR(us, 3 / std::sqrt(12.0), 0.05) << dtype;
    const auto [nm, ns] =
        moments(draw("_random_normal", {{"loc", "3"}, {"scale", "2"}, {"dtype", dtype}}));
    EXPECT_NEAR(nm, 3, 0.1) << dtype;
    EXPECT_NEAR(ns, 2, 0.1) << dtype;
  }
  ops::seed_random(7);
  const std::vector<float> first = draw("_random_uniform", {});
  const std::vector<float> second = draw("_random_uniform", {});
  ops::seed_random(7);
  EXPECT_EQ(draw("_random_uniform", {}), first);
  EXPECT_NE(first, second);
}

TEST_F(Gpu, ElementwiseAndBroadcastBinary) {
  const NDArray a = random_array(Shape{3, 4, 5}, 1), b = random_array(Shape{3, 4, 5}, 2, 0.5f, 2.f);
  const NDArray row = random_array(Shape{1, 4, 1}, 3, 0.5f, 2.f);
  for (const char* op : {"add", "sub", "mul", "div"}) {
    compare(std::string("elemwise_") + op, {a, b}, {});
    compare(std::string("broadcast_") + op, {a, b}, {});
    compare(std::string("broadcast_") + op, {a, row}, {});
    compare(std::string("broadcast_") + op, {row, a}, {});
  }
  compare("_grad_add", {a, b}, {});
  compare("add_n", {a, b, a}, {});
  compare("add_n", {a}, {});
}

TEST_F(Gpu, ScalarAndUnary) {
  const NDArray a = random_array(Shape{7, 33}, 4, 0.1f, 3.f);
  for (const char* op : {"_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar",
                         "_div_scalar", "_rdiv_scalar"}) {
    compare(op, {a}, {{"scalar", "1.5"}});
  }
  for (const char* op : {"negative", "square", "sqrt", "exp", "log", "relu", "sigmoid", "tanh"}) {
    compare(op, {a}, {});
  }
  const NDArray signed_a = random_array(Shape{100}, 5, -3.f, 3.f);
  for (const char* act : {"relu", "sigmoid", "tanh", "softrelu", "softsign"}) {
    compare("Activation", {signed_a}, {{"act_type", act}});
  }
}

TEST_F(Gpu, Reductions) {
  const NDArray a = random_array(Shape{4, 5, 6}, 6);
  for (const char* op : {"sum", "mean"}) {
    compare(op, {a}, {});
    compare(op, {a}, {{"axis", "0"}});
    compare(op, {a}, {{"axis", "1"}, {"keepdims", "True"}});
    compare(op, {a}, {{"axis", "(0, 2)"}});
    compare(op, {a}, {{"axis", "1"}, {"exclude", "True"}});
  }
}

// The gradients autograd and the executor use for reductions, broadcasts and softmax.
TEST_F(Gpu, ReductionBroadcastAndSoftmaxGradients) {
  const NDArray data = random_array(Shape{4, 5, 6}, 110);
  for (const char* op : {"_backward_sum", "_backward_mean"}) {
    compare(op, {random_array(Shape{4, 6}, 111), data}, {{"axis", "1"}});
    compare(op, {random_array(Shape{4, 1, 6}, 112), data}, {{"axis", "1"}, {"keepdims", "True"}});
    compare(op, {random_array(Shape{1}, 113), data}, {});
    compare(op, {random_array(Shape{5}, 114), data}, {{"axis", "(0, 2)"}});
    compare(op, {random_array(Shape{5}, 115), data}, {{"axis", "1"}, {"exclude", "True"}}, 1e-4f,
            1e-5f);
  }
  compare("_broadcast_backward", {data, random_array(Shape{5, 1}, 116)}, {});
  compare("_broadcast_backward", {data, random_array(Shape{4, 1, 6}, 117)}, {});
  compare("_broadcast_backward", {data, random_array(Shape{4, 5, 6}, 118)}, {});
  const NDArray x = random_array(Shape{8, 10}, 119, -3.f, 3.f);
  const NDArray dy = random_array(Shape{8, 10}, 120);
  for (const char* axis : {"-1", "0"}) {
    const NDArray y = ops::invoke("softmax", std::vector<NDArray>{x}, {{"axis", axis}})[0];
    compare("_backward_softmax", {dy, y}, {{"axis", axis}});
    const NDArray ly = ops::invoke("log_softmax", std::vector<NDArray>{x}, {{"axis", axis}})[0];
    compare("_backward_log_softmax", {dy, ly}, {{"axis", axis}, {"temperature", "2"}});
  }
}

// Every unary math operator, on inputs in its domain.
TEST_F(Gpu, UnaryMath) {
  const NDArray unit = random_array(Shape{7, 9}, 150, 0.2f, 0.9f);
  const NDArray wide = random_array(Shape{7, 9}, 151, -3.f, 3.f);
  for (const char* op :
       {"expm1",      "log1p",   "log2",    "log10",   "abs",     "rsqrt",  "cbrt",   "rcbrt",
        "reciprocal", "sin",     "cos",     "tan",     "arcsin",  "arccos", "arctan", "sinh",
        "cosh",       "arcsinh", "arctanh", "degrees", "radians", "erf",    "gamma",  "gammaln"}) {
    compare(op, {unit}, {}, 1e-4f, 1e-5f);
  }
  compare("arccosh", {random_array(Shape{20}, 152, 1.2f, 3.f)}, {}, 1e-4f, 1e-5f);
  for (const char* op : {"sign", "floor", "ceil", "round", "rint", "fix", "trunc", "abs"}) {
    compare(op, {wide}, {});
  }
  const float halves[] = {-2.5f, -1.5f, -0.5f, 0.f, 0.5f, 1.5f, 2.5f};  // rint's and round's ties
  NDArray ties(Shape{7}, Context::cpu(0));
  ties.sync_copy_from_cpu(halves, sizeof halves);
  for (const char* op : {"round", "rint", "fix", "logical_not"}) compare(op, {ties}, {});
}

// The binary operators beyond the four arithmetic ones: elementwise, broadcast and scalar forms.
TEST_F(Gpu, BinaryMath) {
  const NDArray a = random_array(Shape{4, 5}, 160, 0.5f, 2.f);
  const NDArray b = random_array(Shape{4, 5}, 161, -2.f, 2.f);
  const NDArray row = random_array(Shape{1, 5}, 162, 0.5f, 2.f);
  for (const char* name :
       {"power", "maximum", "minimum", "mod", "hypot", "equal", "not_equal", "greater",
        "greater_equal", "lesser", "lesser_equal", "logical_and", "logical_or", "logical_xor"}) {
    const std::string op = name;
    compare("_" + op, {a, b}, {}, 1e-4f, 1e-5f);
    compare("broadcast_" + op, {a, row}, {}, 1e-4f, 1e-5f);
    compare("_" + op + "_scalar", {b}, {{"scalar", "1.5"}}, 1e-4f, 1e-5f);
  }
  compare("_rpower_scalar", {b}, {{"scalar", "1.5"}}, 1e-4f, 1e-5f);
  compare("_rmod_scalar", {a}, {{"scalar", "3.25"}}, 1e-4f, 1e-5f);
  compare("_equal_scalar", {b}, {{"scalar", "0"}});
}

// The unary and scalar operators' gradients (the whole table of ops/backward_ops.cc).
TEST_F(Gpu, UnaryGradients) {
  const NDArray dy = random_array(Shape{50}, 140);
  const NDArray x = random_array(Shape{50}, 141, 0.2f, 0.9f);
  for (const char* op :
       {"_backward_relu",    "_backward_sigmoid",    "_backward_tanh",    "_backward_sqrt",
        "_backward_rsqrt",   "_backward_cbrt",       "_backward_square",  "_backward_expm1",
        "_backward_log",     "_backward_log1p",      "_backward_log2",    "_backward_log10",
        "_backward_abs",     "_backward_reciprocal", "_backward_sin",     "_backward_cos",
        "_backward_tan",     "_backward_arcsin",     "_backward_arccos",  "_backward_arctan",
        "_backward_sinh",    "_backward_cosh",       "_backward_arcsinh", "_backward_arctanh",
        "_backward_degrees", "_backward_radians",    "_backward_erf",     "_backward_rcbrt"}) {
    compare(op, {dy, x}, {}, 1e-4f, 1e-5f);
  }
  compare("_backward_arccosh", {dy, random_array(Shape{50}, 142, 1.2f, 3.f)}, {}, 1e-4f, 1e-5f);
  for (const char* op :
       {"_backward_rdiv_scalar", "_backward_power_scalar", "_backward_rpower_scalar",
        "_backward_maximum_scalar", "_backward_minimum_scalar", "_backward_hypot_scalar",
        "_backward_mod_scalar", "_backward_rmod_scalar"}) {
    compare(op, {dy, x}, {{"scalar", "0.5"}}, 1e-4f, 1e-5f);
  }
}

// The binary operators' gradients, same shapes and broadcast (summed back to each input).
TEST_F(Gpu, BinaryGradients) {
  const NDArray dy = random_array(Shape{4, 5, 6}, 130);
  const NDArray l = random_array(Shape{4, 5, 6}, 131, 0.5f, 2.f);
  const NDArray r = random_array(Shape{4, 5, 6}, 132, 0.5f, 2.f);
  compare("_backward_sub", {dy}, {});
  for (const char* op : {"_backward_mul", "_backward_div", "_backward_power", "_backward_maximum",
                         "_backward_minimum", "_backward_hypot", "_backward_mod"}) {
    compare(op, {dy, l, r}, {}, 1e-4f, 1e-5f);
  }
  const NDArray row = random_array(Shape{5, 1}, 133, 0.5f, 2.f);
  const NDArray col = random_array(Shape{4, 1, 6}, 134, 0.5f, 2.f);
  for (const char* op :
       {"_backward_broadcast_add", "_backward_broadcast_sub", "_backward_broadcast_mul",
        "_backward_broadcast_div", "_backward_broadcast_power", "_backward_broadcast_maximum",
        "_backward_broadcast_minimum", "_backward_broadcast_hypot"}) {
    compare(op, {dy, l, row}, {}, 1e-4f, 1e-5f);
    compare(op, {dy, col, row}, {}, 1e-4f, 1e-5f);
  }
}

// The other reductions (NaN handling included) and argmax / argmin.
TEST_F(Gpu, ReductionsAndArgExtremes) {
  const NDArray a = random_array(Shape{4, 5, 6}, 170, 0.5f, 1.5f);
  for (const char* op : {"prod", "max", "min", "nansum", "nanprod", "norm"}) {
    compare(op, {a}, {}, 1e-4f, 1e-5f);
    compare(op, {a}, {{"axis", "1"}}, 1e-4f, 1e-5f);
    compare(op, {a}, {{"axis", "(0, 2)"}, {"keepdims", "True"}}, 1e-4f, 1e-5f);
  }
  compare("norm", {a}, {{"ord", "1"}, {"axis", "(0, 2)"}}, 1e-4f, 1e-5f);
  const float values[] = {1.f, NAN, 2.f, 3.f, 4.f, 5.f};
  NDArray with_nan(Shape{2, 3}, Context::cpu(0));
  with_nan.sync_copy_from_cpu(values, sizeof values);
  for (const char* op : {"max", "min", "nansum", "nanprod", "argmax", "argmin"}) {
    compare(op, {with_nan}, {{"axis", "1"}});
  }
  for (const char* op : {"argmax", "argmin"}) {
    compare(op, {a}, {{"axis", "1"}});
    compare(op, {a}, {{"axis", "2"}, {"keepdims", "True"}});
    compare(op, {a}, {});
  }
  compare("argmax_channel", {random_array(Shape{8, 10}, 171)}, {});
}

TEST_F(Gpu, Softmax) {
  const NDArray a = random_array(Shape{8, 10}, 7, -5.f, 5.f);
  compare("softmax", {a}, {});
  compare("softmax", {a}, {{"axis", "0"}});
  compare("softmax", {a}, {{"temperature", "2.0"}});
  compare("log_softmax", {a}, {});
  const NDArray label = random_array(Shape{8}, 8, 0.f, 9.f);
  compare("SoftmaxOutput", {a, label}, {});
}

// Whole class indices in [0, classes), with `ignored` at every fifth row.
NDArray labels(int64_t rows, int classes, uint32_t seed, float ignored) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(0, classes - 1);
  std::vector<float> v(static_cast<size_t>(rows));
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 5 == 4 ? ignored : static_cast<float>(dist(gen));
  NDArray a(Shape{rows}, Context::cpu(0));
  a.sync_copy_from_cpu(v.data(), v.size() * sizeof(float));
  return a;
}

TEST_F(Gpu, SoftmaxOutputBackward) {
  const NDArray x = random_array(Shape{10, 7}, 30, -3.f, 3.f);
  const NDArray y = ops::invoke("softmax", std::vector<NDArray>{x}, {})[0];
  const NDArray label = labels(10, 7, 31, /*ignored=*/3.f);
  for (const char* norm : {"null", "batch", "valid"}) {
    compare("_backward_SoftmaxOutput", {y, label}, {{"normalization", norm}});
    compare("_backward_SoftmaxOutput", {y, label},
            {{"normalization", norm}, {"use_ignore", "True"}, {"ignore_label", "3"}});
  }
  compare("_backward_SoftmaxOutput", {y, label},
          {{"grad_scale", "0.5"}, {"smooth_alpha", "0.1"}, {"out_grad", "True"}});
  // Probability labels of the output's shape.
  compare("_backward_SoftmaxOutput", {y, random_array(Shape{10, 7}, 32, 0.f, 1.f)},
          {{"grad_scale", "2"}});
  // multi_output: (n, classes, rest) with a label per (n, rest).
  const NDArray x3 = random_array(Shape{4, 5, 3}, 33, -2.f, 2.f);
  const NDArray y3 = ops::invoke("softmax", std::vector<NDArray>{x3}, {{"axis", "1"}})[0];
  const NDArray l3 = labels(12, 5, 34).reshape(Shape{4, 3});
  for (const char* norm : {"null", "batch", "valid"}) {
    compare("_backward_SoftmaxOutput", {y3, l3},
            {{"multi_output", "True"}, {"normalization", norm}});
  }
  // preserve_shape: softmax over the last axis of any shape.
  const NDArray l2 = labels(8, 3, 35).reshape(Shape{2, 4});
  const NDArray yp =
      ops::invoke("softmax", std::vector<NDArray>{random_array(Shape{2, 4, 3}, 36)}, {})[0];
  compare("_backward_SoftmaxOutput", {yp, l2}, {{"preserve_shape", "True"}});
}

TEST_F(Gpu, BatchDotAndDotBackward) {
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const ops::Attrs attrs = {{"transpose_a", ta ? "True" : "False"},
                                {"transpose_b", tb ? "True" : "False"}};
      const Shape sa = ta ? Shape{7, 5} : Shape{5, 7}, sb = tb ? Shape{3, 7} : Shape{7, 3};
      const NDArray a = random_array(sa, 40), b = random_array(sb, 41);
      const NDArray dc = random_array(Shape{5, 3}, 42);
      compare("_backward_dot", {dc, a, b}, attrs, 1e-4f, 1e-4f);
      const Shape ba = ta ? Shape{4, 7, 5} : Shape{4, 5, 7},
                  bb = tb ? Shape{4, 3, 7} : Shape{4, 7, 3};
      const NDArray a3 = random_array(ba, 43), b3 = random_array(bb, 44);
      compare("batch_dot", {a3, b3}, attrs, 1e-4f, 1e-4f);
      compare("_backward_batch_dot", {random_array(Shape{4, 5, 3}, 45), a3, b3}, attrs, 1e-4f,
              1e-4f);
    }
  }
}

// The layout operators (strided walks), in float32 and, moving elements unread, int32.
TEST_F(Gpu, LayoutOperators) {
  const NDArray a = random_array(Shape{4, 5, 6}, 180);
  for (const char* dtype : {"float32", "int32"}) {
    auto check = [&](const std::string& op, const std::vector<NDArray>& in,
                     const ops::Attrs& attrs) { compare_as(dtype, op, in, attrs, 0.f, 0.f); };
    check("transpose", {a}, {});
    check("transpose", {a}, {{"axes", "(1, 0, 2)"}});
    check("slice", {a},
          {{"begin", "(1, None, 0)"}, {"end", "(3, None, 6)"}, {"step", "(1, -1, 2)"}});
    check("slice_axis", {a}, {{"axis", "2"}, {"begin", "1"}, {"end", "-1"}});
    check("slice_like", {a, random_array(Shape{2, 3, 4}, 181)}, {});
    check("broadcast_to", {random_array(Shape{4, 1, 6}, 182)}, {{"shape", "(4, 5, 6)"}});
    check("reverse", {a}, {{"axis", "1"}});
    check("SliceChannel", {a}, {{"num_outputs", "3"}, {"axis", "2"}});
    check("SliceChannel", {a}, {{"num_outputs", "5"}, {"axis", "1"}, {"squeeze_axis", "True"}});
    check("Concat", {a, random_array(Shape{4, 2, 6}, 183)}, {{"dim", "1"}, {"num_args", "2"}});
    check("stack", {a, a}, {{"axis", "1"}, {"num_args", "2"}});
    check("_slice_assign", {a, random_array(Shape{2, 5, 3}, 184)},
          {{"begin", "(1, None, 0)"}, {"end", "(3, None, 6)"}, {"step", "(1, 1, 2)"}});
    check("SwapAxis", {a}, {{"dim1", "0"}, {"dim2", "2"}});
    check("tile", {a}, {{"reps", "(2, 1, 3)"}});
    check("tile", {random_array(Shape{3}, 185)}, {{"reps", "(2, 2)"}});
    check("repeat", {a}, {{"repeats", "2"}, {"axis", "1"}});
    check("repeat", {a}, {{"repeats", "3"}});
  }
}

// Indexing with float and integer indices, out-of-range ones clipped, wrapped or refused.
TEST_F(Gpu, Indexing) {
  const NDArray table = random_array(Shape{10, 4}, 200);
  const float raw[] = {0.f, 3.f, 9.f, 12.f, -1.f, 2.7f};
  NDArray idx(Shape{2, 3}, Context::cpu(0));
  idx.sync_copy_from_cpu(raw, sizeof raw);
  for (const char* itype : {"float32", "int32", "int64"}) {
    const NDArray i = cast(idx, itype);
    compare("take", {table, i}, {}, 0.f, 0.f);  // clip
    compare("take", {table, i}, {{"mode", "wrap"}}, 0.f, 0.f);
    compare("take", {table, i}, {{"axis", "1"}, {"mode", "wrap"}}, 0.f, 0.f);
    compare("one_hot", {i}, {{"depth", "10"}, {"on_value", "2"}, {"off_value", "-1"}}, 0.f, 0.f);
  }
  try {  // raise: an index out of range is an error naming it
    ops::invoke("take",
                std::vector<NDArray>{table.copy_to(gpu()), cast(idx, "int32").copy_to(gpu())},
                {{"mode", "raise"}})[0]
        .wait_to_read();
    FAIL() << "take in raise mode accepted an index out of range";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of bound"), std::string::npos) << e.what();
  }
  // The engine keeps the error for the next wait_all too (docs/runtime.md): taken here, so that
  // it does not surface in a later test.
  EXPECT_THROW(engine::Engine::get().wait_all(), Error);
  const NDArray data = random_array(Shape{6, 5}, 201);
  const float picks[] = {0.f, 4.f, 2.f, 7.f, -3.f, 1.f};
  NDArray pi(Shape{6}, Context::cpu(0));
  pi.sync_copy_from_cpu(picks, sizeof picks);
  compare("pick", {data, pi}, {{"axis", "1"}}, 0.f, 0.f);
  compare("pick", {data, pi}, {{"axis", "1"}, {"mode", "wrap"}}, 0.f, 0.f);
  const NDArray cond = cast(random_array(Shape{6, 5}, 202, -1.f, 1.f), "int32");
  compare("where", {cond, data, random_array(Shape{6, 5}, 203)}, {}, 0.f, 0.f);
  compare("where", {random_array(Shape{6}, 204, -1.f, 1.f), data, random_array(Shape{6, 5}, 205)},
          {}, 0.f, 0.f);
}

TEST_F(Gpu, ClipAndArange) {
  const NDArray x = random_array(Shape{40}, 190, -2.f, 2.f);
  compare("clip", {x}, {{"a_min", "-0.5"}, {"a_max", "0.75"}});
  compare("_backward_clip", {random_array(Shape{40}, 191), x},
          {{"a_min", "-0.5"}, {"a_max", "0.75"}});
  for (const char* dtype : {"float32", "float64", "float16"}) {
    const ops::Attrs common = {
        {"start", "2"}, {"stop", "11"}, {"step", "1.5"}, {"repeat", "2"}, {"dtype", dtype}};
    ops::Attrs on_cpu = common, on_gpu = common;
    on_cpu.emplace_back("ctx", "cpu(0)");
    on_gpu.emplace_back("ctx", "gpu(0)");
    const NDArray c = ops::invoke("_arange", std::vector<NDArray>{}, on_cpu)[0];
    const NDArray g = ops::invoke("_arange", std::vector<NDArray>{}, on_gpu)[0];
    EXPECT_EQ(g.ctx(), gpu());
    expect_close(cast(g.copy_to(Context::cpu(0)), "float32").to_vector<float>(),
                 cast(c, "float32").to_vector<float>(), std::string("_arange ") + dtype, 0.f, 0.f);
  }
  // The other creation operators without inputs, made on both devices.
  const std::pair<const char*, ops::Attrs> made[] = {
      {"_linspace", {{"start", "-1"}, {"stop", "2"}, {"num", "7"}}},
      {"_linspace", {{"start", "0"}, {"stop", "1"}, {"num", "5"}, {"endpoint", "False"}}},
      {"_eye", {{"N", "4"}, {"M", "6"}, {"k", "1"}}},
      {"_eye", {{"N", "5"}, {"k", "-2"}}},
  };
  for (const auto& [op, attrs] : made) {
    ops::Attrs on_cpu = attrs, on_gpu = attrs;
    on_cpu.emplace_back("ctx", "cpu(0)");
    on_gpu.emplace_back("ctx", "gpu(0)");
    const NDArray c = ops::invoke(op, std::vector<NDArray>{}, on_cpu)[0];
    const NDArray g = ops::invoke(op, std::vector<NDArray>{}, on_gpu)[0];
    EXPECT_EQ(g.shape(), c.shape()) << op;
    expect_close(g.copy_to(Context::cpu(0)).to_vector<float>(), c.to_vector<float>(), op, 0.f,
                 1e-7f);
  }
  compare("_slice_assign_scalar", {random_array(Shape{4, 5}, 192)},
          {{"begin", "(1, 0)"}, {"end", "(3, 5)"}, {"step", "(1, 2)"}, {"scalar", "7.5"}});
  const float cols[] = {0.f, 4.f, 9.f, -1.f};
  NDArray which(Shape{4}, Context::cpu(0));
  which.sync_copy_from_cpu(cols, sizeof cols);
  compare("batch_take", {random_array(Shape{4, 5}, 193), which}, {}, 0.f, 0.f);
}

TEST_F(Gpu, CopiesOfShapeOpsAndRegression) {
  const NDArray a = random_array(Shape{4, 3, 2}, 100);
  compare("Reshape", {a}, {{"shape", "(6, 4)"}});
  compare("Flatten", {a}, {});
  compare("expand_dims", {a}, {{"axis", "1"}});
  compare("squeeze", {random_array(Shape{4, 1, 2}, 101)}, {});
  compare("_backward_copy", {a}, {});
  const NDArray label = random_array(Shape{4, 6}, 102);
  compare("LinearRegressionOutput", {a.reshape(Shape{4, 6}), label}, {});
  compare("_backward_linear_reg_out", {label, random_array(Shape{4, 6}, 103)},
          {{"grad_scale", "0.5"}});
}

TEST_F(Gpu, SgdUpdates) {
  const NDArray w = random_array(Shape{50}, 9), g = random_array(Shape{50}, 10);
  compare("sgd_update", {w, g}, {{"lr", "0.1"}, {"wd", "0.01"}, {"rescale_grad", "0.5"}});
  compare("sgd_update", {w, g}, {{"lr", "0.1"}, {"clip_gradient", "0.2"}});
  const NDArray m_cpu = random_array(Shape{50}, 11);
  const NDArray m_gpu = m_cpu.copy_to(gpu());
  const ops::Attrs attrs = {{"lr", "0.1"}, {"momentum", "0.9"}, {"wd", "0.001"}};
  const NDArray c = ops::invoke("sgd_mom_update", std::vector<NDArray>{w, g, m_cpu}, attrs)[0];
  const NDArray gg = ops::invoke(
      "sgd_mom_update", std::vector<NDArray>{w.copy_to(gpu()), g.copy_to(gpu()), m_gpu}, attrs)[0];
  expect_close(gg.to_vector<float>(), c.to_vector<float>(), "sgd_mom_update weight");
  expect_close(m_gpu.to_vector<float>(), m_cpu.to_vector<float>(), "sgd_mom_update momentum");
}

// As compare, for an operator that also updates inputs in place (optimizer states): every
// output and every input afterwards, compared in float32.
void compare_updates(const std::string& op, const std::vector<NDArray>& cpu_in,
                     const ops::Attrs& attrs, float rtol = 1e-5f, float atol = 1e-6f) {
  std::vector<NDArray> gpu_in;
  for (const NDArray& a : cpu_in) gpu_in.push_back(a.copy_to(Context{DeviceType::kGPU, 0}));
  const std::vector<NDArray> c = ops::invoke(op, cpu_in, attrs);
  const std::vector<NDArray> g = ops::invoke(op, gpu_in, attrs);
  ASSERT_EQ(c.size(), g.size()) << op;
  auto as_f32 = [](const NDArray& a) {
    return cast(a.copy_to(Context::cpu(0)), "float32").to_vector<float>();
  };
  for (size_t j = 0; j < c.size(); ++j) {
    expect_close(as_f32(g[j]), as_f32(c[j]), op + " output " + std::to_string(j), rtol, atol);
  }
  for (size_t j = 0; j < cpu_in.size(); ++j) {
    expect_close(as_f32(gpu_in[j]), as_f32(cpu_in[j]),
                 op + " input " + std::to_string(j) + " after the update", rtol, atol);
  }
}

TEST_F(Gpu, OptimizerUpdates) {
  auto r = [](int64_t n, uint32_t seed) { return random_array(Shape{n}, seed, -1.f, 1.f); };
  compare_updates(
      "multi_sgd_mom_update", {r(40, 80), r(40, 81), r(40, 82), r(7, 83), r(7, 84), r(7, 85)},
      {{"lrs", "(0.1, 0.2)"}, {"wds", "(0.01, 0.0)"}, {"momentum", "0.9"}, {"num_weights", "2"}});
  compare_updates("multi_sgd_update", {r(40, 86), r(40, 87), r(7, 88), r(7, 89)},
                  {{"lrs", "(0.1, 0.2)"},
                   {"wds", "(0.01, 0.0)"},
                   {"num_weights", "2"},
                   {"clip_gradient", "0.5"}});
  NDArray var = ops::invoke("abs", std::vector<NDArray>{r(50, 90)}, {})[0];
  compare_updates(
      "adam_update", {r(50, 91), r(50, 92), r(50, 93), var},
      {{"lr", "0.01"}, {"wd", "0.001"}, {"beta1", "0.9"}, {"beta2", "0.99"}, {"epsilon", "1e-6"}});
  // Mixed precision: float16 weight and gradient, float32 momentum and master weight.
  const NDArray w32 = r(64, 94);
  compare_updates("mp_sgd_mom_update",
                  {cast(w32, "float16"), cast(r(64, 95), "float16"), r(64, 96), w32},
                  {{"lr", "0.1"}, {"momentum", "0.9"}, {"wd", "0.001"}}, 2e-3f, 2e-3f);
}

bool cublas_is_mapped() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    // libcublas.so.N, or the host-emulated device's libnanomx_hostgpu_cublas.so
    if (line.find("cublas") != std::string::npos) return true;
  }
  return false;
}

TEST_F(Gpu, DotAndFullyConnected) {
  const NDArray a = random_array(Shape{33, 17}, 12), b = random_array(Shape{17, 9}, 13);
  compare("dot", {a, b}, {}, 1e-4f, 1e-4f);
  EXPECT_TRUE(cublas_is_mapped()) << "cuBLAS is loaded at the first GPU matrix product";
  compare("dot", {random_array(Shape{17, 33}, 14), b}, {{"transpose_a", "True"}}, 1e-4f, 1e-4f);
  compare("dot", {a, random_array(Shape{9, 17}, 15)}, {{"transpose_b", "True"}}, 1e-4f, 1e-4f);
  const NDArray x = random_array(Shape{6, 20}, 16), w = random_array(Shape{8, 20}, 17),
                bias = random_array(Shape{8}, 18);
  compare("FullyConnected", {x, w, bias}, {{"num_hidden", "8"}}, 1e-4f, 1e-4f);
  compare("FullyConnected", {x, w}, {{"num_hidden", "8"}, {"no_bias", "True"}}, 1e-4f, 1e-4f);
  const NDArray dy = random_array(Shape{6, 8}, 19);
  compare("_backward_FullyConnected", {dy, x, w}, {{"num_hidden", "8"}}, 1e-4f, 1e-4f);
}

TEST_F(Gpu, CopiesFollowTheEngineOrder) {
  // cpu -> gpu -> (ops on gpu) -> cpu, with writes to the source after the copy was pushed.
  const NDArray src = random_array(Shape{1000}, 20);
  const std::vector<float> before = src.to_vector<float>();
  const NDArray on_gpu = src.copy_to(gpu());
  ops::invoke("_plus_scalar", std::vector<NDArray>{src}, {{"scalar", "1"}},
              std::vector<NDArray>{src});  // after the copy read src
  const NDArray doubled =
      ops::invoke("_mul_scalar", std::vector<NDArray>{on_gpu}, {{"scalar", "2"}})[0];
  const NDArray back = doubled.copy_to(Context::cpu(0));
  const std::vector<float> got = back.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_FLOAT_EQ(got[i], 2 * before[i]) << i;
  EXPECT_FLOAT_EQ(src.to_vector<float>()[0], before[0] + 1);
}

TEST_F(Gpu, AllocatorPoolsAndReports) {
  storage::DeviceAllocator& a = storage::allocator_for(DeviceType::kGPU);
  EXPECT_STREQ(a.name(), "gpu pooled");
  storage::Block b = storage::allocate(1000, gpu());
  ASSERT_NE(b.data, nullptr);
  EXPECT_GE(b.capacity, 1000u);
  void* first = b.data;
  const size_t pooled = a.pooled_bytes();
  storage::release(b);
  EXPECT_EQ(a.pooled_bytes(), pooled + 1024u);
  storage::Block again = storage::allocate(1000, gpu());
  EXPECT_EQ(again.data, first);  // reused from the pool
  storage::release(again);
  a.release_pooled();
  EXPECT_EQ(a.pooled_bytes(), 0u);
}

// cpu_pinned is page-locked memory where a GPU is visible (as MXNet's), so copies to and from
// the GPU are DMA on the copy worker's stream; blocks are pooled.
TEST_F(Gpu, CpuPinnedIsPageLockedAndCopies) {
  const Context pinned{DeviceType::kCPUPinned, 0};
  storage::DeviceAllocator& a = storage::allocator_for(DeviceType::kCPUPinned);
  EXPECT_STREQ(a.name(), "cpu pinned (CUDA)");
  storage::Block b = storage::allocate(1000, pinned);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, b.data), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  void* first = b.data;
  storage::release(b);
  storage::Block again = storage::allocate(1000, pinned);
  EXPECT_EQ(again.data, first);  // from the pool
  storage::release(again);

  const NDArray src = random_array(Shape{4096}, 50).copy_to(pinned);
  const NDArray round_trip = src.copy_to(gpu()).copy_to(pinned);
  EXPECT_EQ(round_trip.to_vector<float>(), src.to_vector<float>());
}

// Two GPUs: copies between them, work on the second, each device's memory, and an operator
// refusing an input on the other GPU. Skips with one GPU; the emulated build runs it with two
// (tests/gpu/CMakeLists.txt).
TEST_F(Gpu, TwoDevicesCopyAndComputeOnEach) {
  if (num_gpus() < 2) GTEST_SKIP() << "one GPU visible";
  const Context g1{DeviceType::kGPU, 1};
  const NDArray x = random_array(Shape{5, 7}, 300);
  const NDArray a = x.copy_to(gpu());
  const NDArray b = a.copy_to(g1);  // device to device
  EXPECT_EQ(b.ctx(), g1);
  const NDArray c = ops::invoke("_mul_scalar", std::vector<NDArray>{b}, {{"scalar", "2"}})[0];
  EXPECT_EQ(c.ctx(), g1);
  const NDArray expect = ops::invoke("_mul_scalar", std::vector<NDArray>{x}, {{"scalar", "2"}})[0];
  expect_close(c.copy_to(gpu()).to_vector<float>(), expect.to_vector<float>(), "gpu(1) * 2");
  const NDArray w = random_array(Shape{7, 3}, 301);
  const NDArray d = ops::invoke("dot", std::vector<NDArray>{b, w.copy_to(g1)}, {})[0];
  EXPECT_EQ(d.ctx(), g1);
  expect_close(d.to_vector<float>(),
               ops::invoke("dot", std::vector<NDArray>{x, w}, {})[0].to_vector<float>(),
               "dot on gpu(1)");
  for (int dev : {0, 1}) {
    const GpuMemoryInfo info = gpu_memory_info(dev);
    EXPECT_LT(info.free_bytes, info.total_bytes) << "gpu(" << dev << ") holds arrays";
  }
  try {
    ops::invoke("elemwise_add", std::vector<NDArray>{a, b});
    engine::Engine::get().wait_all();
    FAIL() << "gpu(0) + gpu(1) was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpu(1)"), std::string::npos) << e.what();
  }
}

TEST_F(Gpu, ErrorsNameTheDevice) {
  const NDArray on_cpu = random_array(Shape{4}, 21);
  const NDArray on_gpu = on_cpu.copy_to(gpu());
  try {
    ops::invoke("elemwise_add", std::vector<NDArray>{on_gpu, on_cpu});
    engine::Engine::get().wait_all();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is on cpu(0), the operator runs on gpu(0)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nanomx
