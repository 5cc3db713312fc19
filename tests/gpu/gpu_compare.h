// What the GPU operator tests share: the fixture that skips without a GPU, and the comparison of
// an operator's GPU result with its CPU result from the same inputs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nanomx/context.h"
#include "nanomx/gpu.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"

namespace nanomx::gpu_test {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (num_gpus() == 0) GTEST_SKIP() << "no GPU: " << gpu_unavailable_reason();
  }
  static Context gpu() { return Context{DeviceType::kGPU, 0}; }
};

// A float32 array on cpu(0) of uniform values in [lo, hi).
NDArray random_array(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f);
// An array on cpu(0) of `dtype` holding `values` (converted as Cast converts from int64 or
// float64: integers wrap).
NDArray int_array(const Shape& shape, const std::vector<int64_t>& values, const char* dtype);
NDArray float64_array(const Shape& shape, const std::vector<double>& values);

void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu,
                  const std::string& what, float rtol = 1e-4f, float atol = 1e-5f);

// Runs `op` on cpu(0) and on gpu(0) from the same inputs and compares every output.
void compare(const std::string& op, const std::vector<NDArray>& cpu_in, const ops::Attrs& attrs,
             float rtol = 1e-4f, float atol = 1e-5f);
// As compare, the outputs equal to the bit (dtype, shape and bytes): the integer kernels and
// the ones that move elements.
void compare_exact(const std::string& op, const std::vector<NDArray>& cpu_in,
                   const ops::Attrs& attrs);
// An operator without inputs made on cpu(0) and on gpu(0) (attrs get their "ctx"), compared
// to the bit.
void compare_made_exact(const std::string& op, const ops::Attrs& attrs);

NDArray cast(const NDArray& a, const char* dtype);

// As compare, with every input cast to `dtype` first; outputs are compared in float32. For
// float16 the CPU reference computes in float32 from the same (float16-rounded) inputs: the CPU
// has no float16 kernels for the matrix products, and the GPU's float16 path computes in float32.
void compare_as(const char* dtype, const std::string& op, const std::vector<NDArray>& in,
                const ops::Attrs& attrs, float rtol, float atol);

}  // namespace nanomx::gpu_test
