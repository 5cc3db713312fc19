// The message transport of the distributed KVStore: ordered byte messages between the ranks of
// one job. The MPI implementation lives in its own shared library (libnanomx_kvstore_mpi.so,
// mpi_transport.cc) that the dist store dlopens on first use, so that a process that never
// creates a dist store never loads or initialises MPI (docs/kvstore.md, "How the distributed store
// works").
//
// Header-only: the plugin includes it without linking any nanomx layer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace nanomx::kvstore {

// One message: a small header and an optional payload that is sent without a copy (`keep` holds
// its owner alive until the send completed).
struct OutMessage {
  int dest = 0;
  std::vector<char> header;
  const void* payload = nullptr;
  size_t payload_bytes = 0;
  std::shared_ptr<const void> keep;
};

// A received payload: `size` bytes at `data` (not zero-filled). The memory goes back to the
// transport's pool when the last copy is dropped: the same big values arrive every round, and a
// reused buffer saves the page faults of a fresh allocation of that size.
struct Payload {
  std::shared_ptr<char> data;
  size_t size = 0;
  const char* begin() const { return data.get(); }
  const char* end() const { return data.get() + size; }
};

class Transport {
 public:
  // Called on the communication thread for every message, in order per source.
  using Receiver = std::function<void(int source, std::vector<char>&& header, Payload payload)>;
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The thread level MPI granted (for the docs and tests).
  virtual std::string thread_level() const = 0;
  // Thread-safe; returns at once (the communication thread sends it).
  virtual void send(OutMessage message) = 0;
  // Sends what is queued, finalises MPI and joins the communication thread. Idempotent.
  virtual void shutdown() = 0;
  virtual uint64_t bytes_sent() const = 0;
  virtual uint64_t bytes_received() const = 0;
};

// The plugin's entry point (extern "C", name kCreateTransportSymbol): starts the communication
// thread, which initialises MPI; returns null with *error set on failure.
using CreateTransportFn = Transport* (*)(Transport::Receiver receiver, std::string* error);
inline constexpr const char* kCreateTransportSymbol = "nanomx_kvstore_create_mpi_transport";
inline constexpr const char* kTransportLibrary = "libnanomx_kvstore_mpi.so";

}  // namespace nanomx::kvstore
