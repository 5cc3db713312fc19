// The MPI transport of the distributed KVStore (transport.h), built as its own shared library and
// dlopened by dist.cc on first use.
//
// Thread level: MPI_THREAD_FUNNELED. Every MPI call, MPI_Init_thread and MPI_Finalize included,
// is made by the one communication thread this file starts, so FUNNELED (the initialising thread
// is the only caller) is all it needs; MULTIPLE would cost locking inside Open MPI for nothing.
// Other threads hand messages over through a queue, and receive them through the Receiver
// callback, which runs on the communication thread.
//
// Each message is a header message (tag kHeaderTag; it starts with the payload size) followed,
// when the payload is not empty, by a payload message (tag kPayloadTag) from the same source,
// which MPI's non-overtaking rule keeps in order. Sends are non-blocking (MPI_Isend); receives
// are probed (MPI_Improbe) so that the thread never blocks waiting for a peer.
#include <mpi.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kvstore/transport.h"

namespace nanomx::kvstore {
namespace {

constexpr int kHeaderTag = 1;
constexpr int kPayloadTag = 2;

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

const char* level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

// Received payloads' memory, kept for reuse by size (up to kCachedBytes in all).
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static constexpr size_t kCachedBytes = size_t{1} << 30;
  ~BufferPool() {
    for (auto& [size, data] : free_) delete[] data;
  }
  Payload take(size_t size) {
    char* data = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto it = free_.find(size);
      if (it != free_.end()) {
        data = it->second;
        cached_ -= size;
        free_.erase(it);
      }
    }
    if (data == nullptr) data = new char[size];
    auto self = shared_from_this();
    return {std::shared_ptr<char>(data, [self, size](char* p) { self->give_back(p, size); }), size};
  }

 private:
  void give_back(char* data, size_t size) {
    {
      std::lock_guard lock(mutex_);
      if (cached_ + size <= kCachedBytes) {
        free_.emplace(size, data);
        cached_ += size;
        return;
      }
    }
    delete[] data;
  }
  std::mutex mutex_;
  std::multimap<size_t, char*> free_;
  size_t cached_ = 0;
};

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(Receiver receiver) : receiver_(std::move(receiver)) {}
  ~MpiTransport() override { shutdown(); }

  // Starts the thread and waits until MPI is initialised; "" or the error.
  std::string start() {
    thread_ = std::thread([this] { run(); });
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return started_; });
    return start_error_;
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string thread_level() const override { return level_name(provided_); }

  void send(OutMessage message) override {
    {
      std::lock_guard lock(mutex_);
      outgoing_.push_back(std::move(message));
    }
    cv_.notify_all();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      if (!thread_.joinable()) return;
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  uint64_t bytes_sent() const override { return sent_.load(std::memory_order_relaxed); }
  uint64_t bytes_received() const override { return received_.load(std::memory_order_relaxed); }

 private:
  struct InFlight {
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    OutMessage message;
    std::vector<char> wire_header;
  };

  void run() {
    int provided = MPI_THREAD_SINGLE;
    int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    {
      std::lock_guard lock(mutex_);
      if (code != MPI_SUCCESS) {
        start_error_ = "MPI_Init_thread failed: " + mpi_error(code);
      } else if (provided < MPI_THREAD_FUNNELED) {
        start_error_ = std::string("MPI_Init_thread granted ") + level_name(provided) +
                       ", the KVStore's communication thread needs MPI_THREAD_FUNNELED";
      } else {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &size_);
        provided_ = provided;
      }
      started_ = true;
    }
    cv_.notify_all();
    if (code != MPI_SUCCESS) return;

    auto last_activity = std::chrono::steady_clock::now();
    for (;;) {
      bool busy = false;
      std::deque<OutMessage> batch;
      bool stopping = false;
      {
        std::lock_guard lock(mutex_);
        batch.swap(outgoing_);
        stopping = stopping_;
      }
      for (OutMessage& message : batch) {
        post(std::move(message));
        busy = true;
      }
      busy |= receive_some();
      busy |= complete_sends();
      if (stopping && batch.empty() && in_flight_.empty()) {
        std::lock_guard lock(mutex_);
        if (outgoing_.empty()) break;
      }
      const auto now = std::chrono::steady_clock::now();
      if (busy) {
        last_activity = now;
        continue;
      }
      // Idle: spin briefly (a reply usually follows within microseconds), then sleep a little,
      // woken at once by a new outgoing message. Ranks share cores, so a long spin would steal
      // them from the engine's workers.
      const auto idle = now - last_activity;
      if (idle < std::chrono::microseconds(200)) {
        sched_yield();
      } else {
        const auto nap = idle < std::chrono::milliseconds(50) ? std::chrono::microseconds(50)
                                                              : std::chrono::microseconds(500);
        std::unique_lock lock(mutex_);
        cv_.wait_for(lock, nap, [this] { return !outgoing_.empty() || stopping_; });
      }
    }
    MPI_Finalize();
  }

  void post(OutMessage message) {
    auto& entry = in_flight_.emplace_back();
    entry.message = std::move(message);
    const uint64_t payload_bytes = entry.message.payload_bytes;
    entry.wire_header.resize(sizeof(uint64_t) + entry.message.header.size());
    std::memcpy(entry.wire_header.data(), &payload_bytes, sizeof(uint64_t));
    std::memcpy(entry.wire_header.data() + sizeof(uint64_t), entry.message.header.data(),
                entry.message.header.size());
    MPI_Isend(entry.wire_header.data(), static_cast<int>(entry.wire_header.size()), MPI_BYTE,
              entry.message.dest, kHeaderTag, MPI_COMM_WORLD, &entry.requests[0]);
    if (payload_bytes > 0) {
      // Payloads above 2 GiB would need a derived datatype; a KVStore value part never is one
      // here (the dist store checks it before sending).
      MPI_Isend(const_cast<void*>(entry.message.payload), static_cast<int>(payload_bytes), MPI_BYTE,
                entry.message.dest, kPayloadTag, MPI_COMM_WORLD, &entry.requests[1]);
    }
    sent_.fetch_add(entry.wire_header.size() + payload_bytes, std::memory_order_relaxed);
  }

  bool complete_sends() {
    bool any = false;
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      int done = 0;
      MPI_Testall(2, it->requests, &done, MPI_STATUSES_IGNORE);
      if (done) {
        it = in_flight_.erase(it);
        any = true;
      } else {
        ++it;
      }
    }
    return any;
  }

  bool receive_some() {
    bool any = false;
    for (int i = 0; i < 16; ++i) {
      int flag = 0;
      MPI_Message handle;
      MPI_Status status;
      MPI_Improbe(MPI_ANY_SOURCE, kHeaderTag, MPI_COMM_WORLD, &flag, &handle, &status);
      if (!flag) break;
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      std::vector<char> wire(static_cast<size_t>(count));
      MPI_Mrecv(wire.data(), count, MPI_BYTE, &handle, MPI_STATUS_IGNORE);
      uint64_t payload_bytes = 0;
      std::memcpy(&payload_bytes, wire.data(), sizeof(uint64_t));
      std::vector<char> header(wire.begin() + sizeof(uint64_t), wire.end());
      Payload payload;
      if (payload_bytes > 0) {
        payload = pool_->take(payload_bytes);
        // The payload was posted right after the header: receiving it now keeps the order.
        MPI_Recv(payload.data.get(), static_cast<int>(payload_bytes), MPI_BYTE, status.MPI_SOURCE,
                 kPayloadTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
      received_.fetch_add(static_cast<uint64_t>(count) + payload_bytes, std::memory_order_relaxed);
      receiver_(status.MPI_SOURCE, std::move(header), std::move(payload));
      any = true;
    }
    return any;
  }

  Receiver receiver_;
  std::shared_ptr<BufferPool> pool_ = std::make_shared<BufferPool>();
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool started_ = false;
  bool stopping_ = false;
  std::string start_error_;
  std::deque<OutMessage> outgoing_;
  std::list<InFlight> in_flight_;  // only the communication thread touches it
  int rank_ = -1;
  int size_ = 0;
  int provided_ = MPI_THREAD_SINGLE;
  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> received_{0};
};

}  // namespace
}  // namespace nanomx::kvstore

extern "C" __attribute__((visibility("default"))) nanomx::kvstore::Transport*
nanomx_kvstore_create_mpi_transport(nanomx::kvstore::Transport::Receiver receiver,
                                    std::string* error) {
  auto transport = std::make_unique<nanomx::kvstore::MpiTransport>(std::move(receiver));
  std::string failure = transport->start();
  if (!failure.empty()) {
    transport->shutdown();
    if (error) *error = failure;
    return nullptr;
  }
  return transport.release();
}
