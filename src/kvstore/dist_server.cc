// The server loop of the distributed KVStore (dist_server.h): keeps the parts of the values
// this server owns, merges a dist_sync round's pushes before one update, answers pulls, and
// runs the commands workers send (docs/kvstore.md, "How the distributed store works").
#include "kvstore/dist_server.h"

#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kvstore/dist_connection.h"
#include "kvstore/kvstore.h"
#include "nanomx/engine.h"
#include "nanomx/error.h"
#include "nanomx/profiler.h"

namespace nanomx::kvstore::dist {
namespace {

class Server {
 public:
  Server(Connection& connection, Updater& updater, Controller controller)
      : connection_(connection),
        updater_(updater),
        controller_(std::move(controller)),
        domain_("KVStoreServer"),
        received_(domain_, "bytes_received"),
        sent_(domain_, "bytes_sent") {}

  void run() {
    for (bool running = true; running;) {
      Connection::Incoming in = connection_.next_incoming();
      running = handle(in);
      received_.set_value(connection_.transport().bytes_received());
      sent_.set_value(connection_.transport().bytes_sent());
    }
    engine::Engine::get().wait_all();
  }

 private:
  struct Entry {
    NDArray stored;
    NDArray merged;
    int pushes = 0;
    std::vector<std::pair<int, Header>> waiting;  // the pushes of the current round
  };

  bool handle(Connection::Incoming& in) {
    std::string error;
    bool running = true;
    try {
      switch (in.header.type) {
        case kInit:
          handle_init(in);
          break;
        case kPush:
          if (handle_push(in)) return true;  // replied later, with the round
          break;
        case kPull:
          handle_pull(in);
          return true;
        case kCommandMsg:
          running = handle_command(in);
          break;
        case kBarrier:
          barrier_.emplace_back(in.source, in.header);
          if (static_cast<int>(barrier_.size()) == connection_.num_workers()) {
            for (auto& [source, header] : barrier_) connection_.reply(source, header, "");
            barrier_.clear();
          }
          return true;
        default:
          error = "KVStore server: unknown message type " + std::to_string(in.header.type);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    connection_.reply(in.source, in.header, error);
    return running;
  }

  std::string label(int64_t key) const { return "key " + std::to_string(key); }

  void handle_init(Connection::Incoming& in) {
    NANOMX_PROFILE_SCOPE("KVStoreServer::init");
    NANOMX_CHECK(!entries_.count(in.header.key))
        << "duplicate init of " << label(in.header.key) << " on server " << connection_.rank();
    Entry& entry = entries_[in.header.key];
    const DType dtype = static_cast<DType>(in.header.dtype);
    entry.stored = NDArray(Shape{in.header.length}, Context::cpu(0), dtype);
    entry.stored.sync_copy_from_cpu(in.payload.begin(), in.payload.size);
    entry.merged = NDArray(Shape{in.header.length}, Context::cpu(0), dtype);
  }

  Entry& find(const Header& header, const char* what) {
    auto it = entries_.find(header.key);
    NANOMX_CHECK(it != entries_.end())
        << "KVStore server " << connection_.rank() << ": " << what << " of " << label(header.key)
        << ", which has not been inited";
    NANOMX_CHECK(it->second.stored.size() == header.length &&
                 static_cast<int32_t>(it->second.stored.dtype()) == header.dtype)
        << "KVStore server " << connection_.rank() << ": " << what << " of " << label(header.key)
        << " with " << header.length << " elements of dtype " << header.dtype << ", stored "
        << it->second.stored.size() << " of dtype " << static_cast<int>(it->second.stored.dtype());
    return it->second;
  }

  void apply(int64_t key, Entry& entry, const NDArray& value) {
    NANOMX_PROFILE_SCOPE("KVStoreServer::update");
    if (updater_) {
      updater_(static_cast<int>(key), value, &entry.stored);
    } else {
      entry.stored.copy_from(value);
    }
  }

  // true when the reply waits for the round.
  bool handle_push(Connection::Incoming& in) {
    NANOMX_PROFILE_SCOPE("KVStoreServer::push");
    Entry& entry = find(in.header, "push");
    NANOMX_CHECK(in.payload.size == entry.stored.nbytes())
        << "KVStore server: push of " << label(in.header.key) << " carries " << in.payload.size
        << " bytes, expected " << entry.stored.nbytes();
    if (!sync_) {
      NDArray recv(entry.stored.shape(), Context::cpu(0), entry.stored.dtype());
      recv.sync_copy_from_cpu(in.payload.begin(), in.payload.size);
      apply(in.header.key, entry, recv);
      return false;
    }
    merge(entry, std::move(in.payload), entry.pushes == 0);
    entry.waiting.emplace_back(in.source, in.header);
    if (++entry.pushes < connection_.num_workers()) return true;
    apply(in.header.key, entry, entry.merged);
    // The pulls that follow these replies read `stored` after the update (handle_pull waits).
    for (auto& [source, header] : entry.waiting) connection_.reply(source, header, "");
    entry.waiting.clear();
    entry.pushes = 0;
    return true;
  }

  // merged = data (first push of a round) or merged += data, as an engine operation.
  void merge(Entry& entry, Payload data, bool first) {
    static const profiler::NameId kCopy = profiler::intern("KVStoreServerMergeCopy");
    static const profiler::NameId kAdd = profiler::intern("KVStoreServerMergeAdd");
    engine::PushOptions options;
    options.name = first ? "KVStoreServerMergeCopy" : "KVStoreServerMergeAdd";
    options.name_id = first ? kCopy : kAdd;
    const Shape* shapes[] = {&entry.merged.shape()};
    options.input_shapes = shapes;
    options.output_shapes = shapes;
    const engine::VarHandle writes[] = {entry.merged.var()};
    NDArray merged = entry.merged;
    engine::Engine::get().push(
        [merged, data, first] {
          if (first) {
            std::memcpy(merged.data(), data.begin(), data.size);
            return;
          }
          dispatch_dtype(merged.dtype(), [&](auto zero) {
            using T = decltype(zero);
            T* dst = merged.data_as<T>();
            const T* src = reinterpret_cast<const T*>(data.begin());
            const size_t n = static_cast<size_t>(merged.size());
            for (size_t i = 0; i < n; ++i)
              dst[i] = static_cast<T>(to_compute(dst[i]) + to_compute(src[i]));
          });
        },
        Context::cpu(0), {}, writes, options);
  }

  void handle_pull(Connection::Incoming& in) {
    NANOMX_PROFILE_SCOPE("KVStoreServer::pull");
    std::string error;
    std::shared_ptr<const void> keep;
    const void* data = nullptr;
    size_t bytes = 0;
    try {
      Entry& entry = find(in.header, "pull");
      entry.stored.wait_to_read();
      bytes = entry.stored.nbytes();
      if (sync_) {
        // Sent from `stored` itself: the next update of this key needs every worker's next
        // push, and a worker pushes again only once this pull's reply arrived (its push reads
        // the buffer the pull writes), so nothing writes `stored` while the reply is in flight.
        auto stored = std::make_shared<NDArray>(entry.stored);
        data = stored->data();
        keep = stored;
      } else {
        // dist_async applies pushes at any time: send a snapshot.
        auto copy = std::shared_ptr<char[]>(new char[bytes]);
        std::memcpy(copy.get(), entry.stored.data(), bytes);
        data = copy.get();
        keep = std::shared_ptr<const void>(copy, copy.get());
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!error.empty()) {
      connection_.reply(in.source, in.header, error);
      return;
    }
    connection_.reply(in.source, in.header, "", data, bytes, std::move(keep));
  }

  // false after kStopServer.
  bool handle_command(Connection::Incoming& in) {
    NANOMX_PROFILE_SCOPE("KVStoreServer::command");
    const std::string body(in.payload.begin(), in.payload.size);
    switch (in.header.command) {
      case kStopServer:
        return false;
      case kSyncMode:
        sync_ = true;
        return true;
      case kSetProfilerParams:
        profiler_command(body);
        return true;
      case kSetGradientCompression:
        NANOMX_THROW() << "gradient compression is not supported by nanomx's kvstore";
        return true;
      default:
        NANOMX_CHECK(controller_) << "KVStore server " << connection_.rank() << ": command "
                                  << in.header.command << " needs a controller";
        controller_(in.header.command, body);
        return true;
    }
  }

  // MXNet's kSetProfilerParams body: payload + one digit (docs/kvstore.md, "Server profiling").
  void profiler_command(const std::string& body) {
    NANOMX_CHECK(!body.empty()) << "server profiler command: empty body";
    const char sub = body.back();
    const std::string payload = body.substr(0, body.size() - 1);
    auto flag = [&](const char* what) {
      NANOMX_CHECK(payload == "0" || payload == "1")
          << "server profiler command: " << what << " expects 0 or 1, got '" << payload << "'";
      return payload == "1";
    };
    switch (sub) {
      case '0': {
        profiler::KeyValues values;
        std::stringstream items(payload);
        for (std::string item; std::getline(items, item, ',');) {
          const size_t colon = item.find(':');
          NANOMX_CHECK(colon != std::string::npos && item.find(':', colon + 1) == std::string::npos)
              << "Improper profiler config passed from worker: '" << item << "'";
          std::string key = item.substr(0, colon);
          std::string value = item.substr(colon + 1);
          NANOMX_CHECK(!key.empty()) << "ProfilerConfig parameter is empty";
          NANOMX_CHECK(!value.empty()) << "ProfilerConfig value is empty for parameter " << key;
          if (key == "filename") value = "rank" + std::to_string(connection_.rank()) + "_" + value;
          values.emplace_back(std::move(key), std::move(value));
        }
        profiler::set_config(values);
        break;
      }
      case '1':
        profiler::set_state(flag("state") ? profiler::State::kRunning : profiler::State::kStopped);
        break;
      case '2':
        if (flag("pause")) {
          profiler::pause();
        } else {
          profiler::resume();
        }
        break;
      case '3':
        profiler::dump(flag("dump"));
        break;
      default:
        NANOMX_THROW() << "server profiler command: unknown sub-command '" << sub
                       << "', expected 0 (config), 1 (state), 2 (pause) or 3 (dump)";
    }
  }

  Connection& connection_;
  Updater& updater_;
  Controller controller_;
  bool sync_ = false;
  std::map<int64_t, Entry> entries_;
  std::vector<std::pair<int, Header>> barrier_;
  profiler::Domain domain_;
  profiler::Counter received_;
  profiler::Counter sent_;
};

}  // namespace

void run_server_loop(Connection& connection, Updater& updater, Controller controller) {
  Server server(connection, updater, std::move(controller));
  server.run();
}

}  // namespace nanomx::kvstore::dist
