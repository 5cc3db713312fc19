// The distributed store's Connection (dist_connection.h): the MPI transport, loaded on first
// use, requests matched to their replies, and the watchdog that fails the requests of a server
// that went silent (docs/kvstore.md, "Faults").
#include "kvstore/dist_connection.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/plugin.h"
#include "kvstore/kvstore.h"
#include "nanomx/engine.h"
#include "nanomx/env.h"
#include "nanomx/error.h"

namespace nanomx::kvstore::dist {
namespace {

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

}  // namespace

Connection& Connection::get() {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (instance_ == nullptr) instance_ = new Connection();
  return *instance_;
}

std::vector<Part> Connection::parts_of(int key, int64_t size) const {
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

void Connection::request(std::vector<OutMessage> messages, std::string what,
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

void Connection::request_and_wait(std::vector<OutMessage> messages, std::string what,
                                  std::function<void(const Header&, const Payload&)> on_reply) {
  auto promise = std::make_shared<std::promise<std::string>>();
  auto result = promise->get_future();
  request(std::move(messages), std::move(what), std::move(on_reply),
          [promise](const std::string& error) { promise->set_value(error); });
  const std::string error = result.get();
  NANOMX_CHECK(error.empty()) << error;
}

std::vector<OutMessage> Connection::to_all_servers(const Header& header, const std::string* body) {
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

void Connection::barrier() {
  Header header;
  header.type = kBarrier;
  OutMessage m;
  m.dest = server_world_rank(0);
  m.header = encode(header);
  std::vector<OutMessage> messages;
  messages.push_back(std::move(m));
  request_and_wait(std::move(messages), "a barrier");
}

Connection::Incoming Connection::next_incoming() {
  std::unique_lock lock(mutex_);
  incoming_cv_.wait(lock, [this] { return !incoming_.empty(); });
  Incoming next = std::move(incoming_.front());
  incoming_.pop_front();
  return next;
}

void Connection::reply(int dest, const Header& request, std::string error, const void* data,
                       size_t bytes, std::shared_ptr<const void> keep) {
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

void Connection::shutdown(bool stop_servers) {
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

Connection::Connection() {
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
  Transport* transport =
      create([this](int source, std::vector<char>&& header,
                    Payload payload) { on_message(source, std::move(header), std::move(payload)); },
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

void Connection::on_message(int source, std::vector<char>&& header_bytes, Payload payload) {
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
void Connection::watch() {
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

void Connection::stop_watchdog() {
  {
    std::lock_guard lock(mutex_);
    watchdog_stop_ = true;
  }
  watchdog_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

}  // namespace nanomx::kvstore::dist
