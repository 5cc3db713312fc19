// The local key-value store (kvstore/kvstore.h): init, push (sums, replaces, or runs the
// updater), pull as engine operations, and the errors naming the key. The distributed store is
// tested under the launcher (tests/kvstore).
#include "kvstore/kvstore.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "nanomx/error.h"
#include "nanomx/ndarray.h"

namespace nanomx::kvstore {
namespace {

NDArray filled(std::vector<int64_t> dims, float value) {
  NDArray a{Shape(dims), Context::cpu(0)};
  std::vector<float> v(static_cast<size_t>(a.size()), value);
  a.sync_copy_from_cpu(v.data(), v.size() * sizeof(float));
  return a;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(KVStoreLocal, PushSumsAndReplacesPullCopies) {
  auto kv = KVStore::create("Local");
  EXPECT_EQ(kv->type(), "local");
  EXPECT_EQ(kv->rank(), 0);
  EXPECT_EQ(kv->num_workers(), 1);
  const int key = 3;
  kv->init({&key, 1}, std::vector<NDArray>{filled({2, 2}, 1)});
  const int keys[] = {3, 3};
  kv->push(keys, std::vector<NDArray>{filled({2, 2}, 2), filled({2, 2}, 5)}, 0);
  NDArray out = filled({2, 2}, 0);
  kv->pull({&key, 1}, std::vector<NDArray>{out}, 0);
  for (float v : out.to_vector<float>()) EXPECT_EQ(v, 7.0f);
}

TEST(KVStoreLocal, UpdaterRunsOnPush) {
  auto kv = KVStore::create("device");
  const int key = kv->key_of("w", true);
  kv->init({&key, 1}, std::vector<NDArray>{filled({4}, 1)});
  std::vector<int> seen;
  kv->set_updater([&](int k, const NDArray& recv, NDArray* stored) {
    seen.push_back(k);
    const auto r = recv.to_vector<float>();
    auto s = stored->to_vector<float>();
    for (size_t i = 0; i < s.size(); ++i) s[i] -= 0.5f * r[i];
    stored->sync_copy_from_cpu(s.data(), s.size() * sizeof(float));
  });
  kv->push({&key, 1}, std::vector<NDArray>{filled({4}, 1)}, 0);
  NDArray out = filled({4}, 0);
  kv->pull({&key, 1}, std::vector<NDArray>{out}, 0);
  for (float v : out.to_vector<float>()) EXPECT_EQ(v, 0.5f);
  EXPECT_EQ(seen, std::vector<int>{key});
  EXPECT_EQ(kv->describe(key), "key 'w'");
}

TEST(KVStoreLocal, ErrorsNameTheKey) {
  auto kv = KVStore::create("local");
  const int key = 3, other = 4;
  kv->init({&key, 1}, std::vector<NDArray>{filled({2, 2}, 1)});
  EXPECT_NE(error_of([&] {
              kv->init({&key, 1}, std::vector<NDArray>{filled({2, 2}, 1)});
            }).find("duplicate init of key 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              kv->push({&other, 1}, std::vector<NDArray>{filled({2, 2}, 1)}, 0);
            }).find("key 4 has not been inited"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              kv->push({&key, 1}, std::vector<NDArray>{filled({3}, 1)}, 0);
            }).find("key 3 was initialised with shape (2,2)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { kv->key_of("nope", false); }).find("key nope doesn't exist"),
            std::string::npos);
  EXPECT_NE(error_of([] { KVStore::create("foo"); }).find("unknown kvstore type 'foo'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { kv->send_command_to_servers(0, ""); }).find("distributed"),
            std::string::npos);
}

TEST(KVStoreDist, OutsideALaunchedJobSaysHowToLaunch) {
  unsetenv("DMLC_NUM_WORKER");
  unsetenv("DMLC_ROLE");
  EXPECT_NE(error_of([] { KVStore::create("dist_sync"); }).find("nanomx.tools.launch"),
            std::string::npos);
}

}  // namespace
}  // namespace nanomx::kvstore
