// The CUDA kernels that order, scatter, pad and draw (src/backends/cuda/kernels/index_kernels.cu)
// against the CPU's: sort/argsort/topk to the bit (ties and NaN in the CPU's order),
// gather_nd/scatter_nd (repeated tuples: the last wins), the index errors with the CPU's messages,
// Pad, diag, softmin, and the random samplers by their moments. Skipped without a GPU (CI runs them
// on the emulated device).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
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

// Values with ties (a few distinct values), NaNs (float dtypes) and both zeros.
NDArray tied_values(const Shape& shape, uint32_t seed, const char* dtype) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pick(-4, 4);
  std::vector<double> v(static_cast<size_t>(shape.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    const int k = pick(gen);
    v[i] = k == 4 ? std::nan("") : k == 3 ? -0.0 : k * 1.5;
  }
  const NDArray x = float64_array(shape, v);
  if (std::string(dtype).find("int") == std::string::npos) return cast(x, dtype);
  // Integers: no NaN; the same ties.
  for (double& d : v) d = std::isnan(d) ? 7 : d;
  return cast(float64_array(shape, v), dtype);
}

TEST_F(Gpu, SortArgsortTopkAsTheCpuToTheBit) {
  for (const char* dtype : {"float32", "float64", "float16", "int32", "uint8", "int64"}) {
    const NDArray x = tied_values(Shape{3, 37, 5}, 300, dtype);
    for (const char* axis : {"-1", "1", "0", "None"}) {
      for (const char* ascend : {"True", "False"}) {
        compare_exact("sort", {x}, {{"axis", axis}, {"is_ascend", ascend}});
        compare_exact("argsort", {x}, {{"axis", axis}, {"is_ascend", ascend}});
        compare_exact("argsort", {x}, {{"axis", axis}, {"is_ascend", ascend}, {"dtype", "int64"}});
        for (const char* ret : {"value", "indices", "mask", "both"}) {
          compare_exact("topk", {x},
                        {{"axis", axis},
                         {"k", "2"},
                         {"ret_typ", ret},
                         {"is_ascend", ascend},
                         {"dtype", "int32"}});
        }
      }
    }
  }
  // A long lane of many merge passes, not a power of two, with ties.
  const NDArray long_lane = tied_values(Shape{2, 1000}, 301, "float32");
  compare_exact("sort", {long_lane}, {});
  compare_exact("topk", {long_lane}, {{"k", "999"}, {"ret_typ", "both"}});
  compare_exact("argsort", {random_array(Shape{4099}, 302)}, {{"is_ascend", "False"}});
}

NDArray index_array(const Shape& shape, const std::vector<int64_t>& v, const char* dtype) {
  return int_array(shape, v, dtype);
}

TEST_F(Gpu, GatherNdScatterNdAsTheCpu) {
  const NDArray data = random_array(Shape{4, 3, 5}, 310);
  for (const char* idtype : {"int32", "int64", "float32"}) {
    // Two axes indexed (slabs of 5), negative indices wrap once.
    const NDArray tuples = index_array(Shape{2, 4}, {0, 3, -1, 2, 1, -3, 2, 0}, idtype);
    compare_exact("gather_nd", {data, tuples}, {});
    compare_exact("gather_nd", {data, index_array(Shape{1, 6}, {3, 0, 0, -4, 2, 1}, idtype)}, {});
    compare_exact("gather_nd",
                  {data, index_array(Shape{3, 2, 2}, {0, 1, 2, 3, 2, 1, 0, 0, 4, 0, 1, 2}, idtype)},
                  {});
    // Repeated tuples: the last one's values win, as the CPU's loop.
    const NDArray repeated = index_array(Shape{2, 5}, {1, 0, 1, 3, 1, 2, 1, 2, 0, 2}, idtype);
    const NDArray values = random_array(Shape{5, 5}, 311);
    compare_exact("scatter_nd", {values, repeated}, {{"shape", "(4, 3, 5)"}});
    compare_exact("_scatter_set_nd", {data, values, repeated}, {{"shape", "(4, 3, 5)"}});
  }
  compare_exact("gather_nd", {cast(data, "int8"), index_array(Shape{1, 2}, {3, 1}, "int32")}, {});
  // An index out of range: the CPU's message, and the process goes on.
  const NDArray bad = index_array(Shape{2, 3}, {0, 1, 2, 0, 3, 1}, "int32");
  std::string cpu_message;
  try {
    ops::invoke("gather_nd", std::vector<NDArray>{data, bad}, {});
    engine::Engine::get().wait_all();
  } catch (const Error& e) {
    cpu_message = e.what();
  }
  ASSERT_NE(cpu_message.find("out of bounds for axis 1 with size 3"), std::string::npos)
      << cpu_message;
  try {
    ops::invoke("gather_nd", std::vector<NDArray>{data.copy_to(gpu()), bad.copy_to(gpu())}, {});
    engine::Engine::get().wait_all();
    FAIL() << "an out-of-range gather_nd on the GPU was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(cpu_message), std::string::npos) << e.what();
  }
  compare_exact("gather_nd", {data, index_array(Shape{1, 2}, {3, 1}, "int32")}, {});
}

TEST_F(Gpu, FillElementAndOnehotEncodeAsTheCpu) {
  const NDArray lhs = random_array(Shape{4, 6}, 320);
  const NDArray values = random_array(Shape{4}, 321);
  for (const char* idtype : {"float32", "int32", "int64"}) {
    const NDArray idx = index_array(Shape{4}, {5, 0, 2, 2}, idtype);
    compare_exact("fill_element_0index", {lhs, values, idx}, {});
    compare_exact("_onehot_encode", {idx, lhs}, {});
  }
  for (const char* op : {"fill_element_0index", "_onehot_encode"}) {
    const NDArray idx = index_array(Shape{4}, {1, 6, 0, -1}, "float32");
    const std::vector<NDArray> in = std::string(op) == "fill_element_0index"
                                        ? std::vector<NDArray>{lhs, values, idx}
                                        : std::vector<NDArray>{idx, lhs};
    std::vector<NDArray> on_gpu;
    for (const NDArray& a : in) on_gpu.push_back(a.copy_to(gpu()));
    try {
      ops::invoke(op, on_gpu, {});
      engine::Engine::get().wait_all();
      FAIL() << op << " accepted an index out of range on the GPU";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("index 6 in row 1 out of range [0, 6)"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_F(Gpu, PadDiagAndSoftminAsTheCpu) {
  for (const char* dtype : {"float32", "float64", "int32", "uint8"}) {
    const NDArray x = cast(random_array(Shape{2, 3, 4, 5}, 330, 0.f, 100.f), dtype);
    for (const char* mode : {"constant", "edge", "reflect"}) {
      compare_exact(
          "Pad", {x},
          {{"mode", mode}, {"pad_width", "(0, 0, 0, 0, 1, 2, 3, 1)"}, {"constant_value", "-1.5"}});
    }
    const NDArray v = cast(random_array(Shape{5}, 331, 0.f, 100.f), dtype);
    for (const char* k : {"0", "2", "-3"}) compare_exact("diag", {v}, {{"k", k}});
    const NDArray m = cast(random_array(Shape{4, 6}, 332, 0.f, 100.f), dtype);
    for (const char* k : {"0", "1", "-2", "5"}) compare_exact("diag", {m}, {{"k", k}});
    const NDArray t = cast(random_array(Shape{3, 4, 5}, 333, 0.f, 100.f), dtype);
    compare_exact("diag", {t}, {{"k", "1"}, {"axis1", "2"}, {"axis2", "0"}});
  }
  const NDArray a = random_array(Shape{3, 7}, 334, -3.f, 3.f);
  compare("softmin", {a}, {});
  compare("softmin", {a}, {{"axis", "0"}, {"temperature", "2.5"}});
}

// Draws `op` on the GPU (its own attributes, the shape and ctx added) and returns the values.
std::vector<double> draw(const char* op, ops::Attrs attrs, const std::vector<NDArray>& in = {}) {
  if (in.empty()) {
    attrs.emplace_back("shape", "(40000,)");
    attrs.emplace_back("ctx", "gpu(0)");
  }
  std::vector<NDArray> on_gpu;
  for (const NDArray& a : in) on_gpu.push_back(a.copy_to(Context{DeviceType::kGPU, 0}));
  const NDArray out = ops::invoke(op, on_gpu, attrs)[0];
  EXPECT_EQ(out.ctx(), (Context{DeviceType::kGPU, 0})) << op;
  return cast(out.copy_to(Context::cpu(0)), "float64").to_vector<double>();
}

std::pair<double, double> mean_and_variance(const std::vector<double>& v) {
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, sq / static_cast<double>(v.size())};
}

// Each sampler's mean and variance within 5 % of the distribution's (40,000 draws), in range,
// repeatable under mx.random.seed and different from call to call.
TEST_F(Gpu, RandomSamplersHaveTheirDistributions) {
  struct Case {
    const char* op;
    ops::Attrs attrs;
    double mean, variance;
  };
  const Case cases[] = {
      {"_random_exponential", {{"lam", "4"}}, 0.25, 0.0625},
      {"_random_gamma", {{"alpha", "3"}, {"beta", "2"}}, 6, 12},
      {"_random_gamma", {{"alpha", "0.5"}, {"beta", "1"}}, 0.5, 0.5},
      {"_random_poisson", {{"lam", "3.5"}}, 3.5, 3.5},
      {"_random_poisson", {{"lam", "40"}}, 40, 40},
      {"_random_randint", {{"low", "-3"}, {"high", "7"}, {"dtype", "int32"}}, 1.5, 8.25},
  };
  for (const Case& c : cases) {
    const std::vector<double> v = draw(c.op, c.attrs);
    const auto [mean, variance] = mean_and_variance(v);
    EXPECT_NEAR(mean, c.mean, 0.05 * c.mean + 0.02) << c.op << " " << c.attrs[0].second;
    EXPECT_NEAR(variance, c.variance, 0.05 * c.variance) << c.op << " " << c.attrs[0].second;
    for (double x : v) ASSERT_TRUE(std::isfinite(x) && x >= (c.mean < 2 ? -3 : 0)) << c.op << x;
  }
  const std::vector<double> ints = draw("_random_randint", {{"low", "-3"}, {"high", "7"}});
  EXPECT_EQ(*std::min_element(ints.begin(), ints.end()), -3);
  EXPECT_EQ(*std::max_element(ints.begin(), ints.end()), 6);
  ops::seed_random(11);
  const std::vector<double> first = draw("_random_gamma", {{"alpha", "2"}});
  const std::vector<double> second = draw("_random_gamma", {{"alpha", "2"}});
  ops::seed_random(11);
  EXPECT_EQ(draw("_random_gamma", {{"alpha", "2"}}), first);
  EXPECT_NE(first, second);
}

// _sample_*: each parameter row draws its own distribution; bad parameters are refused with
// the CPU's message.
TEST_F(Gpu, SamplePerRowParametersAndMultinomial) {
  const NDArray lam = float64_array(Shape{2}, {1.0, 30.0});
  const std::vector<double> p = draw("_sample_poisson", {{"shape", "(20000,)"}}, {lam});
  ASSERT_EQ(p.size(), 40000u);
  const std::vector<double> row0(p.begin(), p.begin() + 20000), row1(p.begin() + 20000, p.end());
  EXPECT_NEAR(mean_and_variance(row0).first, 1.0, 0.05);
  EXPECT_NEAR(mean_and_variance(row1).first, 30.0, 0.5);
  const NDArray lo = float64_array(Shape{2}, {0, 10}), hi = float64_array(Shape{2}, {1, 20});
  const std::vector<double> u = draw("_sample_uniform", {{"shape", "(5000,)"}}, {lo, hi});
  for (size_t i = 0; i < u.size(); ++i) {
    ASSERT_TRUE(i < 5000 ? u[i] >= 0 && u[i] < 1 : u[i] >= 10 && u[i] < 20) << i << " " << u[i];
  }
  const NDArray mu = float64_array(Shape{2}, {-5, 5}), sd = float64_array(Shape{2}, {1, 0.5});
  const std::vector<double> n = draw("_sample_normal", {{"shape", "(20000,)"}}, {mu, sd});
  const auto [m1, v1] = mean_and_variance(std::vector<double>(n.begin() + 20000, n.end()));
  EXPECT_NEAR(m1, 5, 0.02);
  EXPECT_NEAR(v1, 0.25, 0.0125);
  try {
    draw("_sample_normal", {}, {mu, float64_array(Shape{2}, {1, -1})});
    FAIL() << "a negative standard deviation was accepted on the GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid distribution parameter(s) at element 1"),
              std::string::npos)
        << e.what();
  }
  // The engine keeps the error for the next wait_all too (docs/runtime.md): taken here.
  EXPECT_THROW(engine::Engine::get().wait_all(), Error);
  // Multinomial: the classes' frequencies and each draw's log-probability.
  const NDArray prob = float64_array(Shape{2, 3}, {0.2, 0.5, 0.3, 1.0, 0.0, 0.0});
  std::vector<NDArray> on_gpu = {prob.copy_to(gpu())};
  const std::vector<NDArray> out =
      ops::invoke("_sample_multinomial", on_gpu, {{"shape", "(30000,)"}, {"get_prob", "True"}});
  ASSERT_EQ(out.size(), 2u);
  const std::vector<double> classes =
      cast(out[0].copy_to(Context::cpu(0)), "float64").to_vector<double>();
  const std::vector<double> logp =
      cast(out[1].copy_to(Context::cpu(0)), "float64").to_vector<double>();
  double counts[3] = {0, 0, 0};
  for (size_t i = 0; i < 30000; ++i) counts[static_cast<int>(classes[i])] += 1;
  EXPECT_NEAR(counts[0] / 30000, 0.2, 0.01);
  EXPECT_NEAR(counts[1] / 30000, 0.5, 0.01);
  for (size_t i = 0; i < 30000; ++i) {
    ASSERT_NEAR(logp[i], std::log(prob.to_vector<double>()[static_cast<size_t>(classes[i])]), 1e-6);
  }
  for (size_t i = 30000; i < 60000; ++i) ASSERT_EQ(classes[i], 0) << i;
}

TEST_F(Gpu, ShuffleIsAPermutationOfTheRows) {
  std::vector<int64_t> v(300 * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
  const NDArray x = int_array(Shape{300, 3}, v, "int32").copy_to(gpu());
  auto shuffled = [&] {
    const NDArray s = ops::invoke("_shuffle", std::vector<NDArray>{x}, {})[0];
    return s.copy_to(Context::cpu(0)).to_vector<int32_t>();
  };
  const std::vector<int32_t> a = shuffled(), b = shuffled();
  EXPECT_NE(a, b);
  std::vector<int32_t> firsts;
  for (size_t r = 0; r < 300; ++r) {
    ASSERT_EQ(a[r * 3] % 3, 0) << "row " << r << " is not a row of the input";
    ASSERT_EQ(a[r * 3 + 1], a[r * 3] + 1);
    ASSERT_EQ(a[r * 3 + 2], a[r * 3] + 2);
    firsts.push_back(a[r * 3]);
  }
  std::sort(firsts.begin(), firsts.end());
  for (size_t r = 0; r < 300; ++r) ASSERT_EQ(firsts[r], static_cast<int32_t>(r * 3));
}

}  // namespace
}  // namespace nanomx
