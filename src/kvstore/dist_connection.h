// What the pieces of the distributed KVStore (MXNet's KVStoreDist and KVStoreDistServer) share:
// the message header of the protocol, how a value is split over the servers, and the
// process-wide Connection over the MPI transport (transport.h). docs/kvstore.md describes the
// roles, the protocol and the faults.
//
// One MPI job holds W worker ranks (0..W-1) and S server ranks (W..W+S-1). A value of at least
// MXNET_KVSTORE_BIGARRAY_BOUND elements is split into S contiguous parts, one per server;
// a smaller one lives whole on server (key * 9973) mod S. The Connection owns the transport; on
// a worker it matches replies to requests (on the communication thread) and fails requests
// left unanswered for NANOMX_KVSTORE_TIMEOUT seconds (default 60), naming the server; on a
// server it queues requests for run_server's loop (dist_server.cc), which runs on the thread
// that called it (Python's main thread, where the optimizer's updater may take the GIL).
//
// The pieces: dist_connection.cc (the Connection), dist_server.cc (the server loop), dist.cc
// (the worker's store, create_dist and shutdown_dist).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kvstore/transport.h"
#include "nanomx/error.h"

namespace nanomx::kvstore::dist {

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

// The header of every message, copied as bytes: every rank runs the same build.
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

inline std::vector<char> encode(const Header& header) {
  std::vector<char> bytes(sizeof(Header));
  std::memcpy(bytes.data(), &header, sizeof(Header));
  return bytes;
}

inline Header decode(const std::vector<char>& bytes) {
  NANOMX_CHECK(bytes.size() == sizeof(Header))
      << "KVStore: a message header of " << bytes.size() << " bytes, expected " << sizeof(Header)
      << " (ranks built from different nanomx versions?)";
  Header header;
  std::memcpy(&header, bytes.data(), sizeof(Header));
  return header;
}

// The part of a value that one server keeps.
struct Part {
  int server = 0;
  int64_t offset = 0;
  int64_t length = 0;
};

class Connection {
 public:
  // Made on first use (the first dist store of the process); lives until shutdown, at exit.
  static Connection& get();
  // The connection if one was made, else nullptr.
  static Connection* existing() { return instance_; }

  bool is_worker() const { return role_ == "worker"; }
  int num_workers() const { return workers_; }
  int num_servers() const { return servers_; }
  int rank() const { return is_worker() ? world_rank_ : world_rank_ - workers_; }
  int server_world_rank(int server) const { return workers_ + server; }
  int64_t bigarray_bound() const { return bound_; }
  Transport& transport() { return *transport_; }

  // The parts of a value of `size` elements under `key`: one per server from the big-array
  // bound on, else the whole value on the key's server.
  std::vector<Part> parts_of(int key, int64_t size) const;

  // Sends `messages` (one per server) and calls on_done once every server replied (or with the
  // first error, or the timeout's). on_reply runs on the communication thread.
  void request(std::vector<OutMessage> messages, std::string what,
               std::function<void(const Header&, const Payload&)> on_reply,
               std::function<void(const std::string&)> on_done);

  // The blocking form; throws the error.
  void request_and_wait(std::vector<OutMessage> messages, std::string what,
                        std::function<void(const Header&, const Payload&)> on_reply = {});

  // A message for every server.
  std::vector<OutMessage> to_all_servers(const Header& header, const std::string* body);

  void barrier();

  // Server side: the next request (blocks until one arrives).
  struct Incoming {
    int source;
    Header header;
    Payload payload;
  };
  Incoming next_incoming();

  // Answers `request` from `dest`: with `error` when it is not empty, else with `bytes` bytes
  // at `data`, which `keep` holds alive until they are sent.
  void reply(int dest, const Header& request, std::string error, const void* data = nullptr,
             size_t bytes = 0, std::shared_ptr<const void> keep = nullptr);

  // Ends this process's part of the job (see shutdown_dist).
  void shutdown(bool stop_servers);

 private:
  // A request waiting for replies from `waiting` servers (by world rank).
  struct Pending {
    std::vector<int> waiting;
    std::string error;
    std::string what;  // for the timeout message
    std::function<void(const Header&, const Payload&)> on_reply;
    std::function<void(const std::string& error)> on_done;
    std::chrono::steady_clock::time_point sent;
  };

  Connection();
  void on_message(int source, std::vector<char>&& header_bytes, Payload payload);
  void watch();
  void stop_watchdog();

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

}  // namespace nanomx::kvstore::dist
