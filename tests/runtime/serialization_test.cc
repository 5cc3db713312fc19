// .params / pickle formats (docs/mxnet-compat.md#file-formats): round trips, the golden 96-byte
// file, legacy blobs, and clear errors (file name, byte offset, what was expected) on truncated or
// corrupt input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "nanomx/error.h"
#include "test_util.h"

namespace nanomx {
namespace {

using test::error_of;
using test::make;

template <typename T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// One float32 2x3 array on cpu(0) saved as a list, field by field from the spec.
std::string golden_96() {
  std::string s;
  put<uint64_t>(s, 0x112);
  put<uint64_t>(s, 0);
  put<uint64_t>(s, 1);
  put<uint32_t>(s, 0xF993FAC9u);
  put<int32_t>(s, 0);  // dense
  put<int32_t>(s, 2);
  put<int64_t>(s, 2);
  put<int64_t>(s, 3);
  put<int32_t>(s, 1);  // cpu
  put<int32_t>(s, 0);
  put<int32_t>(s, 0);  // float32
  for (float f : {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}) put<float>(s, f);
  put<uint64_t>(s, 0);  // no names
  return s;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

TEST(Serialization, GoldenListFileIs96Bytes) {
  NDArray a = make<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const std::string bytes = save_list({a}, {});
  ASSERT_EQ(bytes.size(), 96u);
  EXPECT_EQ(bytes, golden_96());
  const std::string g = golden_96();
  LoadedArrays loaded = load_list(g.data(), g.size(), "golden");
  ASSERT_EQ(loaded.arrays.size(), 1u);
  EXPECT_TRUE(loaded.names.empty());
  EXPECT_EQ(loaded.arrays[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(loaded.arrays[0].dtype(), DType::kFloat32);
  EXPECT_EQ(loaded.arrays[0].to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(Serialization, RoundTripEveryDTypeAsListAndDict) {
  std::vector<NDArray> arrays;
  std::vector<std::string> names;
  std::mt19937 rng(5);
  for (int code = 0; code <= 6; ++code) {
    NDArray a(Shape{static_cast<int64_t>(code) + 1, 3}, Context::cpu(0), static_cast<DType>(code));
    std::vector<uint8_t> bytes(a.nbytes());
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    a.sync_copy_from_cpu(bytes.data(), bytes.size());
    arrays.push_back(a);
    names.push_back("ndarray xx " + std::to_string(code));
  }
  arrays.push_back(NDArray(Shape{0, 5}, Context::cpu(0)));  // 0-size
  names.push_back("empty");
  const std::string path = temp_path("nanomx_roundtrip_test.params");
  for (bool with_names : {false, true}) {
    save_file(path, arrays, with_names ? names : std::vector<std::string>{});
    LoadedArrays loaded = load_file(path);
    ASSERT_EQ(loaded.arrays.size(), arrays.size());
    EXPECT_EQ(loaded.names, with_names ? names : std::vector<std::string>{});
    for (size_t i = 0; i < arrays.size(); ++i) {
      EXPECT_EQ(loaded.arrays[i].shape(), arrays[i].shape());
      EXPECT_EQ(loaded.arrays[i].dtype(), arrays[i].dtype());
      std::vector<uint8_t> want(arrays[i].nbytes()), got(loaded.arrays[i].nbytes());
      arrays[i].sync_copy_to_cpu(want.data(), want.size());
      loaded.arrays[i].sync_copy_to_cpu(got.data(), got.size());
      EXPECT_EQ(got, want) << i;
    }
  }
  std::remove(path.c_str());
}

TEST(Serialization, BlobRoundTripIsBitExact) {
  std::mt19937 rng(7);
  NDArray a = make<float>(Shape{3, 4, 2}, test::random_values<float>(24, rng));
  std::string blob;
  save_blob(a, blob);
  EXPECT_EQ(blob.size(), 4 + 4 + 4 + 3 * 8 + 8 + 4 + 24 * 4u);
  NDArray b = load_blob(blob.data(), blob.size());
  EXPECT_EQ(b.shape(), a.shape());
  EXPECT_EQ(b.to_vector<float>(), a.to_vector<float>());
  std::string none_blob;
  save_blob(NDArray(), none_blob);
  EXPECT_TRUE(load_blob(none_blob.data(), none_blob.size()).is_none());
}

TEST(Serialization, LoadsV1AndLegacyBlobs) {
  std::string v1;
  put<uint32_t>(v1, 0xF993FAC8u);
  put<int32_t>(v1, 1);
  put<int64_t>(v1, 2);
  put<int32_t>(v1, 1);
  put<int32_t>(v1, 0);
  put<int32_t>(v1, 4);  // int32
  put<int32_t>(v1, -5);
  put<int32_t>(v1, 6);
  NDArray a = load_blob(v1.data(), v1.size());
  EXPECT_EQ(a.to_vector<int32_t>(), (std::vector<int32_t>{-5, 6}));
  std::string legacy;
  put<uint32_t>(legacy, 2);  // ndim, then uint32 dims
  put<uint32_t>(legacy, 1);
  put<uint32_t>(legacy, 2);
  put<int32_t>(legacy, 2);  // a gpu context loads onto the CPU
  put<int32_t>(legacy, 0);
  put<int32_t>(legacy, 1);  // float64
  put<double>(legacy, 1.5);
  put<double>(legacy, -2.5);
  NDArray b = load_blob(legacy.data(), legacy.size());
  EXPECT_EQ(b.shape(), (Shape{1, 2}));
  EXPECT_TRUE(b.ctx().is_cpu());
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{1.5, -2.5}));
}

TEST(Serialization, EveryTruncationNamesFileAndOffset) {
  const std::string g = golden_96();
  const std::string path = temp_path("nanomx_truncated_test.params");
  for (size_t n = 0; n < g.size(); ++n) {
    {
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f.write(g.data(), static_cast<std::streamsize>(n));
    }
    const std::string msg = error_of([&] { load_file(path); });
    ASSERT_NE(msg.find(path), std::string::npos) << n << ": " << msg;
    ASSERT_NE(msg.find("byte offset"), std::string::npos) << n << ": " << msg;
    ASSERT_NE(msg.find("expected"), std::string::npos) << n << ": " << msg;
  }
  std::remove(path.c_str());
  EXPECT_NE(error_of([] { load_file("/nonexistent/nanomx.params"); }).find("cannot open"),
            std::string::npos);
}

TEST(Serialization, CorruptFieldsGiveClearErrors) {
  auto corrupt = [](size_t offset, auto value) {
    std::string g = golden_96();
    std::memcpy(g.data() + offset, &value, sizeof(value));
    return error_of([&] { load_list(g.data(), g.size(), "bad.params"); });
  };
  EXPECT_NE(corrupt(0, uint64_t{0x113}).find("0x112"), std::string::npos);
  // A huge array count or shape never allocates.
  EXPECT_NE(corrupt(16, uint64_t{1} << 60).find("array count"), std::string::npos);
  EXPECT_NE(corrupt(36, int64_t{1} << 40).find("array data"), std::string::npos);
  EXPECT_NE(corrupt(36, int64_t{-1}).find("negative"), std::string::npos);
  EXPECT_NE(corrupt(24, uint32_t{0xF993FAFF}).find("magic"), std::string::npos);
  EXPECT_NE(corrupt(28, int32_t{1}).find("storage type"), std::string::npos);
  EXPECT_NE(corrupt(32, int32_t{40}).find("ndim"), std::string::npos);
  EXPECT_NE(corrupt(60, int32_t{7}).find("dtype flag 7"), std::string::npos);
  EXPECT_NE(corrupt(52, int32_t{4}).find("device type"), std::string::npos);
  EXPECT_NE(corrupt(88, uint64_t{3}).find("name count 3"), std::string::npos);
  const std::string msg = corrupt(60, int32_t{9});
  EXPECT_NE(msg.find("bad.params"), std::string::npos) << msg;
  EXPECT_NE(msg.find("offset 60"), std::string::npos) << msg;
}

TEST(Serialization, NamesMustMatchArrays) {
  NDArray a = make<float>(Shape{1}, {1});
  EXPECT_NE(error_of([&] { save_list({a}, {"x", "y"}); }).find("2 names"), std::string::npos);
  NDArray scalar(Shape(), Context::cpu(0));
  EXPECT_NE(error_of([&] { save_list({scalar}, {}); }).find("rank-0"), std::string::npos);
}

}  // namespace
}  // namespace nanomx
