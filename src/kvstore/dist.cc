// The distributed KVStore (MXNet's KVStoreDist and KVStoreDistServer) over the MPI transport
// (transport.h). docs/kvstore.md describes the roles, the protocol and the faults.
//
// One MPI job holds W worker ranks (0..W-1) and S server ranks (W..W+S-1). A value of at least
// MXNET_KVSTORE_BIGARRAY_BOUND elements is split into S contiguous parts, one per server;
// a smaller one lives whole on server (key * 9973) mod S. The process-wide Connection owns the
// transport; on a worker it matches replies to requests (on the communication thread) and
// fails requests left unanswered for NANOMX_KVSTORE_TIMEOUT seconds (default 60), naming the
// server; on a server it queues requests for run_server's loop, which runs on the thread that
// called it (Python's main thread, where the optimizer's updater may take the GIL).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/plugin.h"
#include "kvstore/kvstore.h"
#include "kvstore/transport.h"
#include "nanomx/engine.h"
#include "nanomx/env.h"
#include "nanomx/error.h"
#include "nanomx/profiler.h"

namespace nanomx::kvstore {
namespace {

enum MessageType : int32_t {
  kInit = 1,
  kPush = 2,
  kPull = 3,
  kCommandMsg = 4,
  kBarrier = 5,
  kReply = 6,
  kPing = 7,  // answered by the server's communication thread: "this process is alive"
  kPong = 8,
};

struct Header {
  int32_t type = 0;
  int32_t command = 0;  // the command id of kCommandMsg
  int64_t key = 0;
  int64_t offset = 0;    // where this part starts in the value, in elements (echoed in replies)
  int64_t length = 0;    // elements in this part
  uint64_t request = 0;  // the worker's request id (echoed in replies)
  int32_t dtype = 0;
  int32_t error = 0;  // a reply whose payload is an error message
};

std::vector<char> encode(const Header& header) {
  std::vector<char> bytes(sizeof(Header));
  std::memcpy(bytes.data(), &header, sizeof(Header));
  return bytes;
}

Header decode(const std::vector<char>& bytes) {
  NANOMX_CHECK(bytes.size() == sizeof(Header))
      << "KVStore: a message header of " << bytes.size() << " bytes, expected " << sizeof(Header)
      << " (ranks built from different nanomx versions?)";
  Header header;
  std::memcpy(&header, bytes.data(), sizeof(Header));
  return header;
}

const char* launch_help() {
  return "start the script under the launcher, e.g. `python3 -m nanomx.tools.launch -n 2 -s 1 "
         "python3 train.py` (docs/kvstore.md)";
}

int env_count(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || value[0] == '\0') return -1;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  NANOMX_CHECK(*end == '\0' && parsed >= 0 && parsed < 1 << 20)
      << name << "=" << value << " is not a count of processes";
  return static_cast<int>(parsed);
}

CreateTransportFn load_transport() {
  // RTLD_GLOBAL: Open MPI's components resolve libmpi's symbols from the global scope.
  void* library = plugin::load(kTransportLibrary, "NANOMX_KVSTORE_MPI_LIBRARY",
                               RTLD_NOW | RTLD_GLOBAL, "KVStore: the MPI transport",
                               "build nanomx with Open MPI: Debian libopenmpi-dev");
  return reinterpret_cast<CreateTransportFn>(
      plugin::entry_point(library, kCreateTransportSymbol, "KVStore: the MPI transport"));
}

struct Part {
  int server = 0;
  int64_t offset = 0;
  int64_t length = 0;
};

// A request waiting for replies from `waiting` servers (by world rank).
struct Pending {
  std::vector<int> waiting;
  std::string error;
  std::string what;  // for the timeout message
  std::function<void(const Header&, const Payload&)> on_reply;
  std::function<void(const std::string& error)> on_done;
  std::chrono::steady_clock::time_point sent;
};

class Connection {
 public:
  static Connection& get() {
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    if (instance_ == nullptr) instance_ = new Connection();  // lives until shutdown, at exit
    return *instance_;
  }
  static Connection* existing() { return instance_; }

  bool is_worker() const { return role_ == "worker"; }
  int num_workers() const { return workers_; }
  int num_servers() const { return servers_; }
  int rank() const { return is_worker() ? world_rank_ : world_rank_ - workers_; }
  int server_world_rank(int server) const { return workers_ + server; }
  int64_t bigarray_bound() const { return bound_; }
  Transport& transport() { return *transport_; }

  std::vector<Part> parts_of(int key, int64_t size) const {
    std::vector<Part> parts;
    if (size >= bound_ && servers_ > 1) {
      for (int s = 0; s < servers_; ++s) {
        auto edge = [&](int i) {
          return static_cast<int64_t>(static_cast<double>(size) / servers_ * i + 0.5);
        };
        parts.push_back({s, edge(s), edge(s + 1) - edge(s)});
      }
    } else {
      const int64_t slot = (static_cast<int64_t>(key) * 9973) % servers_;
      parts.push_back({static_cast<int>(slot < 0 ? slot + servers_ : slot), 0, size});
    }
    return parts;
  }

  // Sends `messages` (one per server) and calls on_done once every server replied (or with the
  // first error, or the timeout's). on_reply runs on the communication thread.
  void request(std::vector<OutMessage> messages, std::string what,
               std::function<void(const Header&, const Payload&)> on_reply,
               std::function<void(const std::string&)> on_done) {
    const uint64_t id = next_request_.fetch_add(1);
    {
      std::lock_guard lock(mutex_);
      NANOMX_CHECK(failure_.empty()) << failure_;
      Pending& pending = pending_[id];
      for (const OutMessage& m : messages) pending.waiting.push_back(m.dest);
      pending.what = std::move(what);
      pending.on_reply = std::move(on_reply);
      pending.on_done = std::move(on_done);
      pending.sent = std::chrono::steady_clock::now();
    }
    for (OutMessage& m : messages) {
      Header header = decode(m.header);
      header.request = id;
      m.header = encode(header);
      transport_->send(std::move(m));
    }
  }

  // The blocking form; throws the error.
  void request_and_wait(std::vector<OutMessage> messages, std::string what,
                        std::function<void(const Header&, const Payload&)> on_reply = {}) {
    auto promise = std::make_shared<std::promise<std::string>>();
    auto result = promise->get_future();
    request(std::move(messages), std::move(what), std::move(on_reply),
            [promise](const std::string& error) { promise->set_value(error); });
    const std::string error = result.get();
    NANOMX_CHECK(error.empty()) << error;
  }

  // A message for every server.
  std::vector<OutMessage> to_all_servers(const Header& header, const std::string* body) {
    std::vector<OutMessage> messages;
    auto text = body ? std::make_shared<std::string>(*body) : nullptr;
    for (int s = 0; s < servers_; ++s) {
      OutMessage m;
      m.dest = server_world_rank(s);
      m.header = encode(header);
      if (text && !text->empty()) {
        m.payload = text->data();
        m.payload_bytes = text->size();
        m.keep = text;
      }
      messages.push_back(std::move(m));
    }
    return messages;
  }

  void barrier() {
    Header header;
    header.type = kBarrier;
    OutMessage m;
    m.dest = server_world_rank(0);
    m.header = encode(header);
    std::vector<OutMessage> messages;
    messages.push_back(std::move(m));
    request_and_wait(std::move(messages), "a barrier");
  }

  // Server side: the next request (blocks until one arrives).
  struct Incoming {
    int source;
    Header header;
    Payload payload;
  };
  Incoming next_incoming() {
    std::unique_lock lock(mutex_);
    incoming_cv_.wait(lock, [this] { return !incoming_.empty(); });
    Incoming next = std::move(incoming_.front());
    incoming_.pop_front();
    return next;
  }

  void reply(int dest, const Header& request, std::string error, const void* data = nullptr,
             size_t bytes = 0, std::shared_ptr<const void> keep = nullptr) {
    Header header = request;
    header.type = kReply;
    header.error = error.empty() ? 0 : 1;
    OutMessage m;
    m.dest = dest;
    m.header = encode(header);
    if (!error.empty()) {
      auto text = std::make_shared<std::string>(std::move(error));
      m.payload = text->data();
      m.payload_bytes = text->size();
      m.keep = text;
    } else if (bytes > 0) {
      m.payload = data;
      m.payload_bytes = bytes;
      m.keep = std::move(keep);
    }
    transport_->send(std::move(m));
  }

  // Ends this process's part of the job (see shutdown_dist).
  void shutdown(bool stop_servers) {
    if (is_worker() && stop_servers) {
      try {
        engine::Engine::get().wait_all();
      } catch (...) {
      }
      barrier();
      if (world_rank_ == 0) {
        Header header;
        header.type = kCommandMsg;
        header.command = kStopServer;
        request_and_wait(to_all_servers(header, nullptr), "the stop command");
      }
    }
    stop_watchdog();
    transport_->shutdown();
  }

 private:
  Connection() {
    role_ = role_from_env();
    NANOMX_CHECK(role_ == "worker" || role_ == "server")
        << "KVStore: DMLC_ROLE=" << role_ << " is not supported: expected worker or server (an "
        << "MPI job needs no scheduler)";
    workers_ = env_count("DMLC_NUM_WORKER");
    servers_ = env_count("DMLC_NUM_SERVER");
    NANOMX_CHECK(workers_ > 0 && servers_ > 0 && std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr)
        << "a distributed kvstore needs a launched job (DMLC_NUM_WORKER, DMLC_NUM_SERVER and an "
           "MPI rank): "
        << launch_help();
    bound_ = env::get_int("KVSTORE_BIGARRAY_BOUND", 1000000);
    NANOMX_CHECK(bound_ > 0) << "MXNET_KVSTORE_BIGARRAY_BOUND must be positive, got " << bound_;
    // NANOMX_KVSTORE_TIMEOUT in seconds; NANOMX_KVSTORE_TIMEOUT_MS (tests) wins when set.
    timeout_ = std::chrono::milliseconds(
        env::get_int("KVSTORE_TIMEOUT_MS", env::get_int("KVSTORE_TIMEOUT", 60) * 1000));
    NANOMX_CHECK(timeout_.count() > 0) << "NANOMX_KVSTORE_TIMEOUT must be positive";
    CreateTransportFn create = load_transport();
    std::string error;
    Transport* transport = create(
        [this](int source, std::vector<char>&& header, Payload payload) {
          on_message(source, std::move(header), std::move(payload));
        },
        &error);
    NANOMX_CHECK(transport != nullptr) << "KVStore: " << error;
    transport_.reset(transport);
    world_rank_ = transport_->rank();
    NANOMX_CHECK(transport_->size() == workers_ + servers_)
        << "KVStore: the MPI job has " << transport_->size()
        << " ranks, but DMLC_NUM_WORKER=" << workers_ << " and DMLC_NUM_SERVER=" << servers_ << ": "
        << launch_help();
    const bool worker_rank = world_rank_ < workers_;
    NANOMX_CHECK(worker_rank == is_worker())
        << "KVStore: MPI rank " << world_rank_ << " has DMLC_ROLE=" << role_ << ", but ranks 0.."
        << workers_ - 1 << " must be workers and the rest servers: " << launch_help();
    if (is_worker()) watchdog_ = std::thread([this] { watch(); });
  }

  void on_message(int source, std::vector<char>&& header_bytes, Payload payload) {
    Header header = decode(header_bytes);
    if (header.type == kPing) {
      Header pong = header;
      pong.type = kPong;
      OutMessage m;
      m.dest = source;
      m.header = encode(pong);
      transport_->send(std::move(m));
      return;
    }
    if (is_worker()) {
      std::lock_guard lock(mutex_);
      last_heard_[source] = std::chrono::steady_clock::now();
      if (header.type == kPong) return;
    }
    if (header.type != kReply) {
      {
        std::lock_guard lock(mutex_);
        incoming_.push_back({source, header, std::move(payload)});
      }
      incoming_cv_.notify_one();
      return;
    }
    std::function<void(const std::string&)> done;
    std::string error;
    {
      std::unique_lock lock(mutex_);
      auto it = pending_.find(header.request);
      if (it == pending_.end()) return;  // timed out already
      Pending& pending = it->second;
      if (header.error) {
        if (pending.error.empty()) pending.error.assign(payload.begin(), payload.size);
      } else if (pending.on_reply) {
        // Runs under the lock: the copy into the destination is the reply's only work.
        pending.on_reply(header, payload);
      }
      std::erase(pending.waiting, source);
      if (!pending.waiting.empty()) return;
      done = std::move(pending.on_done);
      error = std::move(pending.error);
      pending_.erase(it);
    }
    done(error);
  }

  // Fails the requests waiting on a server that has been silent for the timeout: no reply and
  // no answer to the pings sent once it has been silent for a quarter of it. A slow round (a
  // worker that pushes late in dist_sync) is not a fault: the servers still answer pings.
  void watch() {
    using Clock = std::chrono::steady_clock;
    std::unique_lock lock(mutex_);
    std::map<int, Clock::time_point> last_ping;
    while (!watchdog_stop_) {
      watchdog_cv_.wait_for(lock, std::chrono::milliseconds(100));
      const auto now = Clock::now();
      std::map<int, Clock::time_point> silent_since;  // server -> the start of its silence
      for (const auto& [id, pending] : pending_) {
        for (int server : pending.waiting) {
          auto since = std::max(pending.sent, last_heard_[server]);
          auto [it, added] = silent_since.emplace(server, since);
          if (!added) it->second = std::min(it->second, since);
        }
      }
      std::vector<int> ping;
      std::set<int> dead;
      for (const auto& [server, since] : silent_since) {
        if (now - since > timeout_) {
          dead.insert(server);
        } else if (now - since > timeout_ / 4 && now - last_ping[server] > timeout_ / 4) {
          last_ping[server] = now;
          ping.push_back(server);
        }
      }
      std::vector<std::pair<std::function<void(const std::string&)>, std::string>> expired;
      for (auto it = pending_.begin(); it != pending_.end();) {
        auto hit = std::find_if(it->second.waiting.begin(), it->second.waiting.end(),
                                [&](int server) { return dead.count(server) > 0; });
        if (hit == it->second.waiting.end()) {
          ++it;
          continue;
        }
        std::ostringstream message;
        message << "KVStore: no reply from server rank " << *hit - workers_ << " (MPI rank " << *hit
                << ") to " << it->second.what << " and no answer to pings within "
                << timeout_.count() / 1000.0
                << " s: the server died or hangs (NANOMX_KVSTORE_TIMEOUT sets the limit)";
        failure_ = message.str();
        expired.emplace_back(std::move(it->second.on_done), failure_);
        it = pending_.erase(it);
      }
      lock.unlock();
      for (int server : ping) {
        Header header;
        header.type = kPing;
        OutMessage m;
        m.dest = server;
        m.header = encode(header);
        transport_->send(std::move(m));
      }
      for (auto& [done, error] : expired) done(error);
      lock.lock();
    }
  }

  void stop_watchdog() {
    {
      std::lock_guard lock(mutex_);
      watchdog_stop_ = true;
    }
    watchdog_cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
  }

  static inline Connection* instance_ = nullptr;

  std::string role_;
  int workers_ = 0;
  int servers_ = 0;
  int world_rank_ = 0;
  int64_t bound_ = 1000000;
  std::chrono::milliseconds timeout_{60000};
  std::unique_ptr<Transport> transport_;
  std::atomic<uint64_t> next_request_{1};

  std::mutex mutex_;
  std::map<uint64_t, Pending> pending_;
  std::map<int, std::chrono::steady_clock::time_point> last_heard_;  // by server world rank
  std::string failure_;  // set by a timeout: later requests fail at once
  std::deque<Incoming> incoming_;
  std::condition_variable incoming_cv_;
  std::thread watchdog_;
  std::condition_variable watchdog_cv_;
  bool watchdog_stop_ = false;
};

// ---------------------------------------------------------------------------------------------
// The server loop.

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

// ---------------------------------------------------------------------------------------------
// The worker's store.

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
    Server server(connection_, updater_, std::move(controller));
    server.run();
  }

  void init(std::span<const int> keys, std::span<const NDArray> values) override {
    auto groups = group(keys, values, "init");
    {
      std::lock_guard lock(mutex_);
      for (const auto& [key, list] : groups) {
        NANOMX_CHECK(list.size() == 1 && !entries_.count(key))
            << "duplicate init of " << describe(key)
            << ". Please double check if you called kv.init or kv.broadcast with this key "
               "multiple times";
      }
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

std::unique_ptr<KVStore> create_dist(std::string type, bool sync) {
  return std::make_unique<DistStore>(std::move(type), sync);
}

void shutdown_dist(bool clean) {
  Connection* connection = Connection::existing();
  // After an error the other ranks may never answer: leave MPI as it is and let the launcher
  // end the job when this process exits with its error status.
  if (connection != nullptr && clean) connection->shutdown(true);
}

}  // namespace nanomx::kvstore
