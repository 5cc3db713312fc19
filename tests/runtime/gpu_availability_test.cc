// Without a GPU (CI): num_gpus() is 0 and every way of reaching gpu(i) fails with a clear error,
// in a build with the CUDA backend as without it (docs/cuda.md). Skips where a GPU is visible.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "nanomx/c_api.h"
#include "nanomx/c_api_ndarray.h"
#include "nanomx/context.h"
#include "nanomx/error.h"
#include "nanomx/gpu.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "nanomx/profiler.h"

namespace {

using nanomx::Context;
using nanomx::DeviceType;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const nanomx::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// What every refusal says after "gpu(<id>) requested, but ".
std::string expected_reason() {
  return nanomx::cuda_built() ? "no GPU is visible (CUDA: " : "this build has no CUDA support";
}

class NoGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (nanomx::num_gpus() > 0) GTEST_SKIP() << "a GPU is visible: the gpu-labelled tests run";
  }
};

TEST_F(NoGpu, CountIsZeroWithAReason) {
  EXPECT_EQ(nanomx::num_gpus(), 0);
  const std::string reason = nanomx::gpu_unavailable_reason();
  EXPECT_EQ(reason.rfind(expected_reason(), 0), 0u) << reason;
  int count = -1;
  ASSERT_EQ(MXGetGPUCount(&count), 0) << MXGetLastError();
  EXPECT_EQ(count, 0);
}

TEST_F(NoGpu, MakeContextRefusesEveryGpuId) {
  for (int id : {0, 1, 7}) {
    const std::string msg = error_of([id] { nanomx::make_context(2, id); });
    const std::string head = "gpu(" + std::to_string(id) + ") requested, but " + expected_reason();
    EXPECT_NE(msg.find(head), std::string::npos) << msg;
  }
  EXPECT_NE(error_of([] { nanomx::make_context(2, -1); }).find("negative device id -1"),
            std::string::npos);
  // cpu contexts are unaffected
  EXPECT_EQ(nanomx::make_context(1, 0), Context::cpu(0));
}

TEST_F(NoGpu, MemoryInfoAndArraysFailCleanly) {
  EXPECT_NE(error_of([] { nanomx::gpu_memory_info(0); }).find("gpu(0) requested, but "),
            std::string::npos);
  uint64_t free_mem = 1, total_mem = 1;
  ASSERT_EQ(MXGetGPUMemoryInformation64(0, &free_mem, &total_mem), -1);
  EXPECT_NE(std::string(MXGetLastError()).find("gpu(0) requested, but " + expected_reason()),
            std::string::npos)
      << MXGetLastError();
  // Through the C API as a binding creates an array.
  NDArrayHandle h = nullptr;
  const mx_uint shape[] = {2, 3};
  ASSERT_EQ(MXNDArrayCreateEx(shape, 2, 2, 0, 0, 0, &h), -1);
  EXPECT_NE(std::string(MXGetLastError()).find("gpu(0) requested, but "), std::string::npos)
      << MXGetLastError();
  EXPECT_EQ(h, nullptr);
}

// MXNet's CUDA builds write the GPU memory CSV at every dump; without a GPU there is nothing to
// write, and a dump leaves no empty CSV in the working directory.
TEST_F(NoGpu, DumpWritesNoGpuMemoryCsv) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("nanomx_no_gpu_csv_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path old_cwd = fs::current_path();
  fs::current_path(dir);
  const std::string trace = (dir / "trace.json").string();
  const char* keys[] = {"filename", "profile_memory"};
  const char* values[] = {trace.c_str(), "true"};
  ASSERT_EQ(MXSetProfilerConfig(2, keys, values), 0) << MXGetLastError();
  ASSERT_EQ(MXSetProfilerState(1), 0) << MXGetLastError();
  ASSERT_EQ(MXSetProfilerState(0), 0) << MXGetLastError();
  ASSERT_EQ(MXDumpProfile(1), 0) << MXGetLastError();
  fs::current_path(old_cwd);
  EXPECT_TRUE(fs::exists(trace));
  const fs::path csv = dir / ("gpu_memory_profile-pid_" + std::to_string(getpid()) + ".csv");
  EXPECT_FALSE(fs::exists(csv)) << csv;
  fs::remove_all(dir);
}

// cuBLAS is loaded at the first GPU matrix product, not with the library (docs/cuda.md): a
// process that only computes on the CPU, matrix products included, never maps it. Holds with
// a GPU visible too.
TEST(CpuOnly, CpuWorkNeverLoadsCublas) {
  nanomx::NDArray a(nanomx::Shape{4, 3}, Context::cpu(0)), b(nanomx::Shape{3, 5}, Context::cpu(0));
  a.sync_copy_from_cpu(std::vector<float>(12, 1.f).data(), 12 * sizeof(float));
  b.sync_copy_from_cpu(std::vector<float>(15, 2.f).data(), 15 * sizeof(float));
  const nanomx::NDArray c = nanomx::ops::invoke("dot", std::vector{a, b})[0];
  EXPECT_EQ(c.to_vector<float>()[0], 6.f);
  (void)nanomx::num_gpus();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    EXPECT_EQ(line.find("libcublas"), std::string::npos) << line;
  }
}

}  // namespace
