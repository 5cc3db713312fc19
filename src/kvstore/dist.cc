// The worker's side of the distributed KVStore (MXNet's KVStoreDist): every push and pull is an
// asynchronous engine operation that sends its parts to the servers and completes when they
// replied. The shared protocol and the Connection are in dist_connection.h, the server loop in
// dist_server.cc; docs/kvstore.md describes the roles, the protocol and the faults.
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kvstore/dist_connection.h"
#include "kvstore/dist_server.h"
#include "kvstore/kvstore.h"
#include "nanomx/engine.h"
#include "nanomx/error.h"
#include "nanomx/profiler.h"

namespace nanomx::kvstore {
namespace dist {
namespace {

class DistStore final : public KVStore {
 public:
  DistStore(std::string type, bool sync)
      : KVStore(std::move(type)), connection_(Connection::get()), sync_(sync) {
    if (!connection_.is_worker()) return;
    if (sync_ && connection_.rank() == 0) {
      Header header;
      header.type = kCommandMsg;
      header.command = kSyncMode;
      connection_.request_and_wait(connection_.to_all_servers(header, nullptr),
                                   "the sync-mode command");
    }
    connection_.barrier();
  }

  int rank() const override { return connection_.rank(); }
  int num_workers() const override { return connection_.num_workers(); }
  int num_servers() const override { return connection_.num_servers(); }
  bool is_distributed() const override { return true; }
  void barrier() override { connection_.barrier(); }

  void send_command_to_servers(int command, const std::string& body) override {
    Header header;
    header.type = kCommandMsg;
    header.command = command;
    connection_.request_and_wait(connection_.to_all_servers(header, &body),
                                 "command " + std::to_string(command));
  }

  void run_server(Controller controller) override {
    NANOMX_CHECK(!connection_.is_worker())
        << "KVStore: run_server on a worker process (DMLC_ROLE is worker or unset)";
    run_server_loop(connection_, updater_, std::move(controller));
  }

  void init(std::span<const int> keys, std::span<const NDArray> values) override {
    auto groups = group(keys, values, "init");
    {
      std::lock_guard lock(mutex_);
      check_new_keys(groups, [&](int key) { return entries_.count(key) != 0; });
      for (const auto& [key, list] : groups) {
        const NDArray& value = list[0];
        NANOMX_CHECK(value.nbytes() < static_cast<size_t>(INT_MAX) * connection_.num_servers())
            << "KVStore.init: " << describe(key) << " holds " << value.nbytes()
            << " bytes; a part per server must stay below 2 GiB";
        Entry entry;
        entry.shape = value.shape();
        entry.dtype = value.dtype();
        entry.buffer = NDArray(value.shape(), Context::cpu(0), value.dtype());
        entry.parts = connection_.parts_of(key, value.size());
        entries_.emplace(key, std::move(entry));
      }
    }
    if (connection_.rank() == 0) {
      for (const auto& [key, list] : groups) {
        NDArray copy = list[0].copy_to(Context::cpu(0));
        copy.wait_to_read();
        connection_.request_and_wait(messages(kInit, key, entries_.at(key), &copy),
                                     "the init of " + describe(key));
      }
    }
    connection_.barrier();
  }

  void push(std::span<const int> keys, std::span<const NDArray> values, int /*priority*/) override {
    auto groups = group(keys, values, "push");
    std::lock_guard lock(mutex_);
    for (const auto& [key, list] : groups) {
      Entry& entry = find(key, "push");
      for (const NDArray& value : list) check_like(key, value, entry.shape, entry.dtype, "push");
    }
    for (const auto& [key, list] : groups) {
      Entry& entry = entries_.at(key);
      sum_into(list, entry.buffer, "KVStoreReduce");
      NDArray buffer = entry.buffer;
      auto out = messages(kPush, key, entry, &buffer);
      const engine::VarHandle reads[] = {buffer.var()};
      engine::PushOptions options;
      options.prop = engine::FnProperty::kAsync;
      options.name = "KVStoreDistDefaultPush";
      options.name_id = profiler::intern(options.name);
      const Shape* shapes[] = {&entry.shape};
      options.input_shapes = shapes;
      Connection* connection = &connection_;
      std::string what = "the push of " + describe(key);
      auto shared = std::make_shared<std::vector<OutMessage>>(std::move(out));
      engine::Engine::get().push_async(
          [connection, shared, what](engine::Completion done) {
            connection->request(std::move(*shared), what, {}, [done](const std::string& error) {
              if (error.empty()) {
                done.done();
              } else {
                done.fail(error);
              }
            });
          },
          Context::cpu(0), reads, {}, options);
    }
  }

  void pull(std::span<const int> keys, std::span<const NDArray> outs, int /*priority*/) override {
    auto groups = group(keys, outs, "pull");
    std::lock_guard lock(mutex_);
    for (const auto& [key, list] : groups) {
      Entry& entry = find(key, "pull");
      for (const NDArray& out : list) check_like(key, out, entry.shape, entry.dtype, "pull");
    }
    for (const auto& [key, list] : groups) {
      Entry& entry = entries_.at(key);
      NDArray buffer = entry.buffer;
      auto out = std::make_shared<std::vector<OutMessage>>(messages(kPull, key, entry, nullptr));
      const engine::VarHandle writes[] = {buffer.var()};
      engine::PushOptions options;
      options.prop = engine::FnProperty::kAsync;
      options.name = "KVStoreDistDefaultStoragePull";
      options.name_id = profiler::intern(options.name);
      const Shape* shapes[] = {&entry.shape};
      options.output_shapes = shapes;
      Connection* connection = &connection_;
      std::string what = "the pull of " + describe(key);
      const size_t element = dtype_size(entry.dtype);
      engine::Engine::get().push_async(
          [connection, out, buffer, what, element](engine::Completion done) {
            connection->request(
                std::move(*out), what,
                [buffer, element](const Header& header, const Payload& payload) {
                  const size_t at = static_cast<size_t>(header.offset) * element;
                  if (at + payload.size <= buffer.nbytes())
                    std::memcpy(static_cast<char*>(buffer.data()) + at, payload.begin(),
                                payload.size);
                },
                [done](const std::string& error) {
                  if (error.empty()) {
                    done.done();
                  } else {
                    done.fail(error);
                  }
                });
          },
          Context::cpu(0), {}, writes, options);
      for (const NDArray& target : list) target.copy_from(buffer);
    }
  }

 private:
  struct Entry {
    Shape shape;
    DType dtype = DType::kFloat32;
    NDArray buffer;  // the send and receive buffer: pushes read it, pulls write it
    std::vector<Part> parts;
  };

  Entry& find(int key, const char* what) {
    auto it = entries_.find(key);
    NANOMX_CHECK(it != entries_.end())
        << "KVStore." << what << ": " << describe(key) << " has not been inited";
    return it->second;
  }

  // One message per part; `data` (cpu) supplies the payloads of init and push.
  std::vector<OutMessage> messages(MessageType type, int key, const Entry& entry,
                                   const NDArray* data) {
    std::vector<OutMessage> out;
    auto keep = data ? std::make_shared<NDArray>(*data) : nullptr;
    const size_t element = dtype_size(entry.dtype);
    for (const Part& part : entry.parts) {
      Header header;
      header.type = type;
      header.key = key;
      header.offset = part.offset;
      header.length = part.length;
      header.dtype = static_cast<int32_t>(entry.dtype);
      OutMessage m;
      m.dest = connection_.server_world_rank(part.server);
      m.header = encode(header);
      if (keep) {
        // The buffer's data is read when the message is sent, inside the operation that holds
        // the read dependency on it.
        m.payload = static_cast<const char*>(keep->data()) + part.offset * element;
        m.payload_bytes = static_cast<size_t>(part.length) * element;
        m.keep = keep;
      }
      out.push_back(std::move(m));
    }
    return out;
  }

  Connection& connection_;
  bool sync_;
  std::mutex mutex_;
  std::map<int, Entry> entries_;
};

}  // namespace
}  // namespace dist

std::unique_ptr<KVStore> create_dist(std::string type, bool sync) {
  return std::make_unique<dist::DistStore>(std::move(type), sync);
}

void shutdown_dist(bool clean) {
  dist::Connection* connection = dist::Connection::existing();
  // After an error the other ranks may never answer: leave MPI as it is and let the launcher
  // end the job when this process exits with its error status.
  if (connection != nullptr && clean) connection->shutdown(true);
}

}  // namespace nanomx::kvstore
