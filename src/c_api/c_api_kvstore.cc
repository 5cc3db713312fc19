// The key-value store's C functions, with MXNet 1.9.1's names and signatures (docs/kvstore.md).
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "c_api/c_api_common.h"
#include "c_api/handle_table.h"
#include "c_api/ndarray_handles.h"
#include "kvstore/kvstore.h"
#include "nanomx/c_api.h"

namespace nanomx::c_api {
namespace {

using kvstore::KVStore;
using StoreTable = HandleTable<std::unique_ptr<KVStore>, HandleKind::kKVStore>;
StoreTable& stores() {
  static auto* table = new StoreTable;  // never destroyed: handles stay usable at exit
  return *table;
}

KVStore& store_of(KVStoreHandle handle, const char* function) {
  check_not_null(handle, function, "the kvstore handle");
  return *stores().get(handle, function, "the kvstore handle");
}

std::vector<NDArray> arrays_of(mx_uint num, NDArrayHandle* vals, const char* function) {
  std::vector<NDArray> arrays;
  if (num > 0) check_not_null(vals, function, "vals");
  for (mx_uint i = 0; i < num; ++i) arrays.push_back(ndarray_of(vals[i], function, "vals[i]"));
  return arrays;
}

std::vector<int> int_keys(mx_uint num, const int* keys, const char* function) {
  if (num > 0) check_not_null(keys, function, "keys");
  return std::vector<int>(keys, keys + num);
}

std::vector<int> str_keys(KVStore& store, mx_uint num, const char** keys, bool create,
                          const char* function) {
  if (num > 0) check_not_null(keys, function, "keys");
  std::vector<int> out;
  for (mx_uint i = 0; i < num; ++i) {
    check_not_null(keys[i], function, "keys[i]");
    out.push_back(store.key_of(keys[i], create));
  }
  return out;
}

// profile_process='server' requests of c_api_profiler.cc: only worker rank 0 forwards them, as
// MXNet (the other workers' calls do nothing).
void send_profiler_command(void* handle, const std::string& body) {
  KVStore& store = store_of(handle, "the server profiler");
  NANOMX_CHECK(store.is_distributed())
      << "profile_process='server' needs a distributed kvstore (dist_sync, dist_async); the "
         "last created kvstore is '"
      << store.type() << "'";
  if (store.rank() != 0) return;
  store.send_command_to_servers(kvstore::kSetProfilerParams, body);
}

struct UpdaterBinding {
  MXKVStoreUpdater* updater;
  MXKVStoreStrUpdater* str_updater;
  void* handle;
};

}  // namespace
}  // namespace nanomx::c_api

using namespace nanomx::c_api;
using nanomx::NDArray;
using nanomx::kvstore::KVStore;

int MXKVStoreCreate(const char* type, KVStoreHandle* out) {
  NANOMX_API_BEGIN(MXKVStoreCreate);
  check_not_null(type, "MXKVStoreCreate", "type");
  check_not_null(out, "MXKVStoreCreate", "out");
  static std::once_flag once;
  std::call_once(once, [] { set_server_profiler_sender(&send_profiler_command); });
  *out = stores().emplace(KVStore::create(type));
  NANOMX_API_END();
}

int MXKVStoreFree(KVStoreHandle handle) {
  NANOMX_API_BEGIN(MXKVStoreFree);
  check_not_null(handle, "MXKVStoreFree", "the kvstore handle");
  stores().release(handle, "MXKVStoreFree", "the kvstore handle");
  NANOMX_API_END();
}

int MXKVStoreInit(KVStoreHandle handle, mx_uint num, const int* keys, NDArrayHandle* vals) {
  NANOMX_API_BEGIN(MXKVStoreInit);
  KVStore& store = store_of(handle, "MXKVStoreInit");
  store.init(int_keys(num, keys, "MXKVStoreInit"), arrays_of(num, vals, "MXKVStoreInit"));
  NANOMX_API_END();
}

int MXKVStoreInitEx(KVStoreHandle handle, mx_uint num, const char** keys, NDArrayHandle* vals) {
  NANOMX_API_BEGIN(MXKVStoreInitEx);
  KVStore& store = store_of(handle, "MXKVStoreInitEx");
  auto arrays = arrays_of(num, vals, "MXKVStoreInitEx");
  store.init(str_keys(store, num, keys, true, "MXKVStoreInitEx"), arrays);
  NANOMX_API_END();
}

int MXKVStorePush(KVStoreHandle handle, mx_uint num, const int* keys, NDArrayHandle* vals,
                  int priority) {
  NANOMX_API_BEGIN(MXKVStorePush);
  KVStore& store = store_of(handle, "MXKVStorePush");
  store.push(int_keys(num, keys, "MXKVStorePush"), arrays_of(num, vals, "MXKVStorePush"), priority);
  NANOMX_API_END();
}

int MXKVStorePushEx(KVStoreHandle handle, mx_uint num, const char** keys, NDArrayHandle* vals,
                    int priority) {
  NANOMX_API_BEGIN(MXKVStorePushEx);
  KVStore& store = store_of(handle, "MXKVStorePushEx");
  auto arrays = arrays_of(num, vals, "MXKVStorePushEx");
  store.push(str_keys(store, num, keys, false, "MXKVStorePushEx"), arrays, priority);
  NANOMX_API_END();
}

int MXKVStorePull(KVStoreHandle handle, mx_uint num, const int* keys, NDArrayHandle* vals,
                  int priority) {
  NANOMX_API_BEGIN(MXKVStorePull);
  KVStore& store = store_of(handle, "MXKVStorePull");
  store.pull(int_keys(num, keys, "MXKVStorePull"), arrays_of(num, vals, "MXKVStorePull"), priority);
  NANOMX_API_END();
}

int MXKVStorePullEx(KVStoreHandle handle, mx_uint num, const char** keys, NDArrayHandle* vals,
                    int priority) {
  NANOMX_API_BEGIN(MXKVStorePullEx);
  KVStore& store = store_of(handle, "MXKVStorePullEx");
  auto arrays = arrays_of(num, vals, "MXKVStorePullEx");
  store.pull(str_keys(store, num, keys, false, "MXKVStorePullEx"), arrays, priority);
  NANOMX_API_END();
}

int MXKVStoreSetUpdaterEx(KVStoreHandle handle, MXKVStoreUpdater updater,
                          MXKVStoreStrUpdater str_updater, void* updater_handle) {
  NANOMX_API_BEGIN(MXKVStoreSetUpdaterEx);
  KVStore& store = store_of(handle, "MXKVStoreSetUpdaterEx");
  check_not_null(reinterpret_cast<const void*>(updater), "MXKVStoreSetUpdaterEx", "updater");
  UpdaterBinding binding{updater, str_updater, updater_handle};
  KVStore* self = &store;
  store.set_updater([binding, self](int key, const NDArray& recv, NDArray* stored) {
    NDArrayHandle recv_handle = new_ndarray_handle(recv);
    NDArrayHandle stored_handle = new_ndarray_handle(*stored);
    const std::string label = self->describe(key);
    if (binding.str_updater != nullptr && label.rfind("key '", 0) == 0) {
      const std::string name = label.substr(5, label.size() - 6);
      binding.str_updater(name.c_str(), recv_handle, stored_handle, binding.handle);
    } else {
      binding.updater(key, recv_handle, stored_handle, binding.handle);
    }
  });
  NANOMX_API_END();
}

int MXKVStoreSetUpdater(KVStoreHandle handle, MXKVStoreUpdater updater, void* updater_handle) {
  return MXKVStoreSetUpdaterEx(handle, updater, nullptr, updater_handle);
}

int MXKVStoreGetType(KVStoreHandle handle, const char** type) {
  NANOMX_API_BEGIN(MXKVStoreGetType);
  check_not_null(type, "MXKVStoreGetType", "type");
  *type = store_of(handle, "MXKVStoreGetType").type().c_str();
  NANOMX_API_END();
}

int MXKVStoreGetRank(KVStoreHandle handle, int* ret) {
  NANOMX_API_BEGIN(MXKVStoreGetRank);
  check_not_null(ret, "MXKVStoreGetRank", "ret");
  *ret = store_of(handle, "MXKVStoreGetRank").rank();
  NANOMX_API_END();
}

int MXKVStoreGetGroupSize(KVStoreHandle handle, int* ret) {
  NANOMX_API_BEGIN(MXKVStoreGetGroupSize);
  check_not_null(ret, "MXKVStoreGetGroupSize", "ret");
  *ret = store_of(handle, "MXKVStoreGetGroupSize").num_workers();
  NANOMX_API_END();
}

int MXKVStoreBarrier(KVStoreHandle handle) {
  NANOMX_API_BEGIN(MXKVStoreBarrier);
  store_of(handle, "MXKVStoreBarrier").barrier();
  NANOMX_API_END();
}

int MXKVStoreIsWorkerNode(int* ret) {
  NANOMX_API_BEGIN(MXKVStoreIsWorkerNode);
  check_not_null(ret, "MXKVStoreIsWorkerNode", "ret");
  *ret = nanomx::kvstore::role_from_env() == "worker";
  NANOMX_API_END();
}

int MXKVStoreIsServerNode(int* ret) {
  NANOMX_API_BEGIN(MXKVStoreIsServerNode);
  check_not_null(ret, "MXKVStoreIsServerNode", "ret");
  *ret = nanomx::kvstore::role_from_env() == "server";
  NANOMX_API_END();
}

int MXKVStoreIsSchedulerNode(int* ret) {
  NANOMX_API_BEGIN(MXKVStoreIsSchedulerNode);
  check_not_null(ret, "MXKVStoreIsSchedulerNode", "ret");
  *ret = nanomx::kvstore::role_from_env() == "scheduler";
  NANOMX_API_END();
}

int MXKVStoreRunServer(KVStoreHandle handle, MXKVStoreServerController controller,
                       void* controller_handle) {
  NANOMX_API_BEGIN(MXKVStoreRunServer);
  KVStore& store = store_of(handle, "MXKVStoreRunServer");
  nanomx::kvstore::Controller run;
  if (controller != nullptr) {
    run = [controller, controller_handle](int command, const std::string& body) {
      MXAPISetLastError("");
      controller(command, body.c_str(), controller_handle);
      // A controller reports failure through MXAPISetLastError (as a custom operator does).
      std::string error = MXGetLastError();
      if (!error.empty()) {
        MXAPISetLastError("");
        NANOMX_THROW() << error;
      }
    };
  }
  store.run_server(std::move(run));
  NANOMX_API_END();
}

int MXKVStoreSendCommmandToServers(KVStoreHandle handle, int cmd_id, const char* cmd_body) {
  NANOMX_API_BEGIN(MXKVStoreSendCommmandToServers);
  check_not_null(cmd_body, "MXKVStoreSendCommmandToServers", "cmd_body");
  store_of(handle, "MXKVStoreSendCommmandToServers").send_command_to_servers(cmd_id, cmd_body);
  NANOMX_API_END();
}

int MXKVStoreShutdown(int clean) {
  NANOMX_API_BEGIN(MXKVStoreShutdown);
  nanomx::kvstore::shutdown_dist(clean != 0);
  NANOMX_API_END();
}
