// Helpers for the runtime tests: typed host values in and out of NDArrays.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "nanomx/ndarray.h"
#include "nanomx/ops.h"

namespace nanomx::test {

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  if constexpr (std::is_same_v<T, half>) return DType::kFloat16;
  if constexpr (std::is_same_v<T, uint8_t>) return DType::kUint8;
  if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  if constexpr (std::is_same_v<T, int8_t>) return DType::kInt8;
  if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
}

template <typename T>
NDArray make(const Shape& shape, const std::vector<T>& values) {
  NDArray a(shape, Context::cpu(0), dtype_of<T>());
  a.sync_copy_from_cpu(values.data(), values.size() * sizeof(T));
  return a;
}

template <typename T>
std::vector<T> values_of(const NDArray& a) {
  return a.to_vector<T>();
}

// Values drawn U(lo, hi) in double and converted like numpy's astype (integers wrap).
template <typename T>
std::vector<T> random_values(int64_t n, std::mt19937& rng, double lo = -10, double hi = 10) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = from_double<T>(dist(rng));
  return v;
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Exact equality for integers; relative tolerance for floating types.
template <typename T>
void expect_close(const std::vector<T>& got, const std::vector<T>& want, double rtol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if constexpr (std::is_integral_v<T>) {
      ASSERT_EQ(got[i], want[i]) << what << " at element " << i;
    } else {
      const double g = to_double(got[i]), w = to_double(want[i]);
      if (std::isnan(w)) {
        ASSERT_TRUE(std::isnan(g)) << what << " at element " << i;
        continue;
      }
      ASSERT_LE(std::abs(g - w), rtol * std::abs(w) + rtol)
          << what << " at element " << i << ": got " << g << ", want " << w;
    }
  }
}

// The message of the nanomx::Error fn throws ("" when it does not throw).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

using AllTypes = ::testing::Types<float, double, half, uint8_t, int32_t, int8_t, int64_t>;

}  // namespace nanomx::test
