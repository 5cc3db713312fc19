// The GPU operator tests' comparisons with the CPU (gpu_compare.h).
#include "gpu_compare.h"

#include <cmath>
#include <random>
#include <vector>

#include "nanomx/dtype.h"

namespace nanomx::gpu_test {

NDArray random_array(const Shape& shape, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape.size()));
  for (float& x : v) x = dist(gen);
  NDArray a(shape, Context::cpu(0));
  a.sync_copy_from_cpu(v.data(), v.size() * sizeof(float));
  return a;
}

void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu,
                  const std::string& what, float rtol, float atol) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  for (size_t i = 0; i < gpu.size(); ++i) {
    if (std::isnan(cpu[i])) {
      EXPECT_TRUE(std::isnan(gpu[i])) << what << " at " << i;
      continue;
    }
    ASSERT_NEAR(gpu[i], cpu[i], atol + rtol * std::fabs(cpu[i])) << what << " at " << i;
  }
}

void compare(const std::string& op, const std::vector<NDArray>& cpu_in, const ops::Attrs& attrs,
             float rtol, float atol) {
  std::vector<NDArray> gpu_in;
  for (const NDArray& a : cpu_in) gpu_in.push_back(a.copy_to(Context{DeviceType::kGPU, 0}));
  const std::vector<NDArray> c = ops::invoke(op, cpu_in, attrs);
  const std::vector<NDArray> g = ops::invoke(op, gpu_in, attrs);
  ASSERT_EQ(c.size(), g.size()) << op;
  for (size_t j = 0; j < c.size(); ++j) {
    EXPECT_EQ(g[j].ctx(), (Context{DeviceType::kGPU, 0})) << op;
    EXPECT_EQ(g[j].shape(), c[j].shape()) << op;
    EXPECT_EQ(g[j].dtype(), c[j].dtype()) << op;
    // Compared in float32 whatever the dtype (norm's out_dtype, float16 results).
    const NDArray gc = g[j].copy_to(Context::cpu(0));
    expect_close(gc.dtype() == DType::kFloat32 ? gc.to_vector<float>()
                                               : cast(gc, "float32").to_vector<float>(),
                 c[j].dtype() == DType::kFloat32 ? c[j].to_vector<float>()
                                                 : cast(c[j], "float32").to_vector<float>(),
                 op + " output " + std::to_string(j), rtol, atol);
  }
}

NDArray cast(const NDArray& a, const char* dtype) {
  return ops::invoke("Cast", std::vector<NDArray>{a}, {{"dtype", dtype}})[0];
}

void compare_as(const char* dtype, const std::string& op, const std::vector<NDArray>& in,
                const ops::Attrs& attrs, float rtol, float atol) {
  const bool half = std::string(dtype) == "float16";
  std::vector<NDArray> cpu_in, gpu_in;
  for (const NDArray& a : in) {
    const NDArray rounded = cast(a, dtype);
    gpu_in.push_back(rounded.copy_to(Context{DeviceType::kGPU, 0}));
    cpu_in.push_back(half ? cast(rounded, "float32") : rounded);
  }
  const std::vector<NDArray> c = ops::invoke(op, cpu_in, attrs);
  const std::vector<NDArray> g = ops::invoke(op, gpu_in, attrs);
  ASSERT_EQ(c.size(), g.size()) << op;
  for (size_t j = 0; j < c.size(); ++j) {
    EXPECT_EQ(g[j].dtype(),
              half && c[j].dtype() == DType::kFloat32 ? DType::kFloat16 : c[j].dtype())
        << op;
    expect_close(cast(g[j].copy_to(Context::cpu(0)), "float32").to_vector<float>(),
                 cast(c[j], "float32").to_vector<float>(),
                 op + " (" + dtype + ") output " + std::to_string(j), rtol, atol);
  }
}

NDArray int_array(const Shape& shape, const std::vector<int64_t>& values, const char* dtype) {
  NDArray a(shape, Context::cpu(0), DType::kInt64);
  EXPECT_EQ(static_cast<size_t>(shape.size()), values.size());
  a.sync_copy_from_cpu(values.data(), values.size() * sizeof(int64_t));
  return cast(a, dtype);
}

NDArray float64_array(const Shape& shape, const std::vector<double>& values) {
  NDArray a(shape, Context::cpu(0), DType::kFloat64);
  EXPECT_EQ(static_cast<size_t>(shape.size()), values.size());
  a.sync_copy_from_cpu(values.data(), values.size() * sizeof(double));
  return a;
}

namespace {
void expect_same_bits(const NDArray& gpu_result, const NDArray& cpu_result,
                      const std::string& what) {
  EXPECT_EQ(gpu_result.ctx(), (Context{DeviceType::kGPU, 0})) << what;
  ASSERT_EQ(gpu_result.dtype(), cpu_result.dtype()) << what;
  ASSERT_EQ(gpu_result.shape(), cpu_result.shape()) << what;
  const NDArray g = gpu_result.copy_to(Context::cpu(0));
  std::vector<uint8_t> gb(g.nbytes()), cb(cpu_result.nbytes());
  g.sync_copy_to_cpu(gb.data(), gb.size());
  cpu_result.sync_copy_to_cpu(cb.data(), cb.size());
  if (gb == cb) return;
  // The values, to name the first that differs; a NaN equals any NaN (the payload of a NaN made
  // by a conversion is the hardware's), a zero only the zero of its sign. Every dtype's values
  // are exact in float64 except int64's beyond 2^53, compared by their bits below.
  const NDArray gv = cast(g, "float64"), cv = cast(cpu_result, "float64");
  const auto gd = gv.to_vector<double>(), cd = cv.to_vector<double>();
  for (size_t i = 0; i < gd.size(); ++i) {
    const bool same = std::isnan(gd[i])
                          ? std::isnan(cd[i])
                          : gd[i] == cd[i] && std::signbit(gd[i]) == std::signbit(cd[i]);
    if (!same) {
      ADD_FAILURE() << what << ": element " << i << " is " << gd[i] << " on the GPU, " << cd[i]
                    << " on the CPU (" << dtype_name(g.dtype()) << ")";
      return;
    }
  }
  EXPECT_NE(g.dtype(), DType::kInt64) << what << ": int64 elements differ beyond 2^53";
}
}  // namespace

void compare_exact(const std::string& op, const std::vector<NDArray>& cpu_in,
                   const ops::Attrs& attrs) {
  std::vector<NDArray> gpu_in;
  for (const NDArray& a : cpu_in) gpu_in.push_back(a.copy_to(Context{DeviceType::kGPU, 0}));
  const std::vector<NDArray> c = ops::invoke(op, cpu_in, attrs);
  const std::vector<NDArray> g = ops::invoke(op, gpu_in, attrs);
  ASSERT_EQ(c.size(), g.size()) << op;
  std::string what = op;
  for (const auto& [k, v] : attrs) what += " " + k + "=" + v;
  if (!cpu_in.empty()) what += std::string(" (") + dtype_name(cpu_in[0].dtype()) + ")";
  for (size_t j = 0; j < c.size(); ++j) {
    expect_same_bits(g[j], c[j], what + " output " + std::to_string(j));
  }
}

void compare_made_exact(const std::string& op, const ops::Attrs& attrs) {
  ops::Attrs on_cpu = attrs, on_gpu = attrs;
  on_cpu.emplace_back("ctx", "cpu(0)");
  on_gpu.emplace_back("ctx", "gpu(0)");
  const NDArray c = ops::invoke(op, std::vector<NDArray>{}, on_cpu)[0];
  const NDArray g = ops::invoke(op, std::vector<NDArray>{}, on_gpu)[0];
  std::string what = op;
  for (const auto& [k, v] : attrs) what += " " + k + "=" + v;
  expect_same_bits(g, c, what);
}

}  // namespace nanomx::gpu_test
