// KVStore's shared parts and the local store (MXNet's KVStoreLocal).
#include "kvstore/kvstore.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "nanomx/engine.h"
#include "nanomx/error.h"

namespace nanomx::kvstore {

void KVStore::send_command_to_servers(int command, const std::string& /*body*/) {
  NANOMX_THROW() << "KVStore '" << type_ << "': send_command_to_servers(" << command
                 << ") needs a distributed kvstore (dist_sync, dist_async); this one has no "
                    "servers";
}

void KVStore::run_server(Controller /*controller*/) {
  NANOMX_THROW() << "KVStore '" << type_ << "': run_server needs a distributed kvstore on a "
                 << "server process";
}

int KVStore::key_of(const std::string& name, bool create) {
  std::lock_guard lock(keys_mutex_);
  auto it = str_to_int_.find(name);
  if (it != str_to_int_.end()) return it->second;
  NANOMX_CHECK(create) << "key " << name << " doesn't exist. Did you init?";
  // String keys get negative ints, so that they never collide with int keys (MXNet forbids
  // mixing both in one call, not in one store).
  const int key = -static_cast<int>(str_to_int_.size()) - 1;
  str_to_int_.emplace(name, key);
  int_to_str_.emplace(key, name);
  return key;
}

std::string KVStore::describe(int key) const {
  std::lock_guard lock(keys_mutex_);
  auto it = int_to_str_.find(key);
  if (it != int_to_str_.end()) return "key '" + it->second + "'";
  return "key " + std::to_string(key);
}

std::vector<std::pair<int, std::vector<NDArray>>> KVStore::group(std::span<const int> keys,
                                                                 std::span<const NDArray> values,
                                                                 const char* what) {
  NANOMX_CHECK(keys.size() == values.size())
      << "KVStore." << what << ": " << keys.size() << " keys but " << values.size()
      << " values; expected one value per key";
  std::vector<std::pair<int, std::vector<NDArray>>> groups;
  for (size_t i = 0; i < keys.size(); ++i) {
    NANOMX_CHECK(!values[i].is_none())
        << "KVStore." << what << ": the value for key " << keys[i] << " is a none array";
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& group) { return group.first == keys[i]; });
    if (it == groups.end()) {
      groups.emplace_back(keys[i], std::vector<NDArray>{values[i]});
    } else {
      it->second.push_back(values[i]);
    }
  }
  return groups;
}

void KVStore::check_new_keys(const std::vector<std::pair<int, std::vector<NDArray>>>& groups,
                             const std::function<bool(int key)>& initialised) const {
  for (const auto& [key, list] : groups) {
    NANOMX_CHECK(list.size() == 1 && !initialised(key))
        << "duplicate init of " << describe(key)
        << ". Please double check if you called kv.init or kv.broadcast with this key "
           "multiple times";
  }
}

void KVStore::check_like(int key, const NDArray& value, const Shape& shape, DType dtype,
                         const char* what) const {
  NANOMX_CHECK(value.shape() == shape && value.dtype() == dtype)
      << "KVStore." << what << ": " << describe(key) << " was initialised with shape " << shape
      << " and dtype " << dtype_name(dtype) << ", got shape " << value.shape() << " and dtype "
      << dtype_name(value.dtype());
}

void KVStore::sum_into(const std::vector<NDArray>& values, const NDArray& out, const char* name) {
  if (values.size() == 1) {
    out.copy_from(values[0]);
    return;
  }
  std::vector<engine::VarHandle> reads;
  for (const NDArray& value : values) reads.push_back(value.var());
  const engine::VarHandle writes[] = {out.var()};
  engine::PushOptions options;
  options.name = name;
  options.name_id = profiler::intern(name);
  options.bytes_touched = out.nbytes() * (values.size() + 1);
  engine::Engine::get().push(
      [values, out] {
        dispatch_dtype(out.dtype(), [&](auto zero) {
          using T = decltype(zero);
          const size_t n = static_cast<size_t>(out.size());
          T* dst = out.data_as<T>();
          std::vector<compute_t<T>> acc(n);
          for (const NDArray& value : values) {
            const T* src = value.data_as<T>();
            for (size_t i = 0; i < n; ++i) acc[i] += to_compute(src[i]);
          }
          for (size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(acc[i]);
        });
      },
      out.ctx(), reads, writes, options);
}

namespace {

// MXNet's KVStoreLocal: the values live in this process. `device` only changes where MXNet
// would reduce (on a GPU); with CPU arrays both behave the same.
class LocalStore final : public KVStore {
 public:
  explicit LocalStore(std::string type) : KVStore(std::move(type)) {}

  void init(std::span<const int> keys, std::span<const NDArray> values) override {
    auto groups = group(keys, values, "init");
    std::lock_guard lock(mutex_);
    check_new_keys(groups, [&](int key) { return entries_.count(key) != 0; });
    for (const auto& [key, list] : groups) {
      Entry entry;
      entry.stored = NDArray(list[0].shape(), list[0].ctx(), list[0].dtype());
      entry.stored.copy_from(list[0]);
      entry.merged = NDArray(list[0].shape(), list[0].ctx(), list[0].dtype());
      entries_.emplace(key, std::move(entry));
    }
  }

  void push(std::span<const int> keys, std::span<const NDArray> values, int /*priority*/) override {
    auto groups = group(keys, values, "push");
    std::lock_guard lock(mutex_);
    for (const auto& [key, list] : groups) {
      Entry& entry = find(key, "push");
      for (const NDArray& value : list)
        check_like(key, value, entry.stored.shape(), entry.stored.dtype(), "push");
    }
    for (const auto& [key, list] : groups) {
      Entry& entry = entries_.at(key);
      sum_into(list, entry.merged, "KVStoreReduce");
      if (updater_) {
        updater_(key, entry.merged, &entry.stored);
      } else {
        entry.stored.copy_from(entry.merged);
      }
    }
  }

  void pull(std::span<const int> keys, std::span<const NDArray> outs, int /*priority*/) override {
    auto groups = group(keys, outs, "pull");
    std::lock_guard lock(mutex_);
    for (const auto& [key, list] : groups) {
      Entry& entry = find(key, "pull");
      for (const NDArray& out : list)
        check_like(key, out, entry.stored.shape(), entry.stored.dtype(), "pull");
    }
    for (const auto& [key, list] : groups) {
      for (const NDArray& out : list) out.copy_from(entries_.at(key).stored);
    }
  }

 private:
  struct Entry {
    NDArray stored;
    NDArray merged;
  };

  Entry& find(int key, const char* what) {
    auto it = entries_.find(key);
    NANOMX_CHECK(it != entries_.end())
        << "KVStore." << what << ": " << describe(key) << " has not been inited";
    return it->second;
  }

  std::mutex mutex_;
  std::map<int, Entry> entries_;
};

}  // namespace

std::unique_ptr<KVStore> KVStore::create(std::string_view type) {
  std::string name(type);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name.find("dist") != std::string::npos) {
    const bool sync = name.find("_async") == std::string::npos;
    return create_dist(name, sync);
  }
  static const char* kKnown[] = {"local", "device", "local_update_cpu", "local_allreduce_cpu",
                                 "local_allreduce_device"};
  NANOMX_CHECK(std::find(std::begin(kKnown), std::end(kKnown), name) != std::end(kKnown))
      << "unknown kvstore type '" << name
      << "': expected local, device, dist_sync, dist_async or dist_device_sync";
  return std::make_unique<LocalStore>(name);
}

std::string role_from_env() {
  const char* role = std::getenv("DMLC_ROLE");
  if (role == nullptr || role[0] == '\0') return "worker";
  return role;
}

}  // namespace nanomx::kvstore
