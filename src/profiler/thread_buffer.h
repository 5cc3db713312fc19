// Per-thread event buffers: single producer (the thread), single consumer (the collector).
//
// A buffer is a chain of fixed-size chunks. The producer writes records into its current chunk
// and publishes them by storing the chunk's `committed` count (release). When a chunk is full it
// links a new chunk from the pool and never touches the old one again, so the collector can
// hand a fully read chunk back to the pool. Chunks are allocated and pre-faulted when profiling
// is configured or started (page faults cost ~10 µs each on these VMs), never per event. When a
// burst outruns the pre-faulted chunks, new ones are carved from 2 MiB slabs backed by a
// transparent huge page where the kernel allows it: one fault per 16 chunks instead of 32 per
// chunk.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "profiler/aggregate_stats.h"
#include "profiler/record.h"

namespace nanomx::profiler {

// What a dropped event was, for the per-kind counts in the trace's otherData.
enum class DropKind : uint8_t { kOperator, kApi, kMemory, kFlow, kUser, kCount };
constexpr size_t kDropKinds = static_cast<size_t>(DropKind::kCount);
// The key of each kind in otherData.dropped_events_by_kind.
const char* drop_kind_name(DropKind kind);
using DropCounts = std::array<uint64_t, kDropKinds>;

struct Chunk {
  // 4095 records + the 16-byte header: 16 chunks fill a 2 MiB slab exactly (4096 would fit 15).
  static constexpr uint32_t kRecords = 4095;
  std::atomic<uint32_t> committed{0};
  std::atomic<Chunk*> next{nullptr};
  Record records[kRecords];
};

class ChunkPool {
 public:
  // A pre-faulted chunk, or nullptr when the memory bound is reached and none is free.
  Chunk* acquire();
  void release(Chunk* chunk);
  // Makes sure at least `count` free chunks exist (allocated and touched), within the bound.
  void prefault(size_t count);
  void set_bound(uint64_t max_bytes);
  uint64_t allocated_bytes() const;
  uint64_t bound_bytes() const;  // as configured; 0 = unbounded

 private:
  Chunk* allocate_locked();
  Chunk* carve_locked();  // a new chunk from the current slab; maps a slab when it is used up
  mutable std::mutex mutex_;
  std::vector<Chunk*> free_;
  // Chunks handed back when the bound was lowered: slab memory is never unmapped, so they wait
  // here (not counted in allocated_) until the bound allows them again.
  std::vector<Chunk*> spare_;
  char* slab_next_ = nullptr;
  size_t slab_left_ = 0;
  uint64_t allocated_ = 0;     // chunks in existence
  uint64_t bound_chunks_ = 0;  // 0 = unbounded
  uint64_t bound_bytes_ = 0;   // as configured, for messages
};

ChunkPool& chunk_pool();

struct ApiFrame {
  NameId function;
  uint64_t begin;
};

class ThreadBuffer {
 public:
  explicit ThreadBuffer(uint32_t tid);
  ~ThreadBuffer();

  // ---- producer side (owning thread only)
  // Room for `n` contiguous records, or nullptr (counted as a dropped event of `kind`) when the
  // bound is reached.
  Record* reserve(uint32_t n, DropKind kind) {
    if (write_chunk_ && write_pos_ + n <= Chunk::kRecords)
      return &write_chunk_->records[write_pos_];
    return reserve_slow(n, kind);
  }
  void commit(uint32_t n) {
    write_pos_ += n;
    write_chunk_->committed.store(write_pos_, std::memory_order_release);
  }
  ThreadStats& stats() { return stats_; }
  uint64_t next_flow_id() {
    return (static_cast<uint64_t>(tid_) << kFlowSequenceBits) | ++flow_sequence_;
  }
  // C API calls in flight on this thread (nesting is shallow; deeper calls are not recorded).
  static constexpr int kMaxApiDepth = 32;
  ApiFrame api_stack[kMaxApiDepth];
  int api_depth = 0;

  // ---- consumer side (collector, under the collector's lock)
  // Calls visit(record, following records available) for every committed record, in order,
  // and recycles chunks it has finished. Stops after about `budget` records (a thread that
  // records as fast as they are drained would otherwise keep the collector here forever).
  template <typename Visit>
  void drain(Visit&& visit, size_t budget = SIZE_MAX);
  bool fully_drained() const;
  // The earliest begin tick of the records not yet drained (UINT64_MAX when there are none),
  // leaving them in place: a fresh trace file puts its ts = 0 no later than this. O(records).
  uint64_t earliest_pending_begin() const;

  uint32_t tid() const { return tid_; }
  // Adds this buffer's drops per kind to `counts`.
  void add_dropped(DropCounts* counts) const {
    for (size_t k = 0; k < kDropKinds; ++k)
      (*counts)[k] += dropped_[k].load(std::memory_order_relaxed);
  }
  std::atomic<bool> retired{false};  // the thread has exited

 private:
  Record* reserve_slow(uint32_t n, DropKind kind);
  void drop(DropKind kind);

  const uint32_t tid_;
  Chunk* write_chunk_ = nullptr;
  uint32_t write_pos_ = 0;
  uint64_t flow_sequence_ = 0;
  std::atomic<uint64_t> dropped_[kDropKinds] = {};
  ThreadStats stats_;

  std::atomic<Chunk*> published_first_{nullptr};
  Chunk* read_chunk_ = nullptr;
  uint32_t read_pos_ = 0;
};

// The pointer the hot path reads. Not initial-exec: that marks the whole library STATIC_TLS, so
// that dlopen (every Python import) must fit all of its thread-locals (~1.5 KB) into glibc's
// small static-TLS surplus, and a library loaded after it that needs static TLS itself
// (libgomp: torch, PIL) then failed to load with "cannot allocate memory in static TLS block".
// GCC builds use TLS descriptors (-mtls-dialect=gnu2, CMakeLists.txt), which keep the access a
// load and an indirect call that returns the offset.
extern thread_local ThreadBuffer* t_buffer;
ThreadBuffer* register_this_thread();

// A buffer for a row that is not a thread (profiler::DeviceRow), registered and named as a
// thread's; its owner marks it retired.
std::shared_ptr<ThreadBuffer> register_device_row(std::string name);

// The calling thread's buffer, registering the thread on first use.
inline ThreadBuffer* this_thread_buffer() {
  if (t_buffer) [[likely]]
    return t_buffer;
  return register_this_thread();
}

// Every buffer, for the collector. The name of a thread outlives its buffer.
struct ThreadRegistry {
  std::mutex mutex;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::vector<std::string> thread_names;  // index = tid
};
ThreadRegistry& thread_registry();
// The collector (collector.cc) drops the buffers of exited threads whose records are all written,
// keeping their statistics and drop counts; skipped when the collector is busy. Called when a
// thread registers, so that thread churn without dumps does not grow the registry.
void forget_exited_threads_if_idle();

template <typename Visit>
void ThreadBuffer::drain(Visit&& visit, size_t budget) {
  if (!read_chunk_) {
    read_chunk_ = published_first_.load(std::memory_order_acquire);
    if (!read_chunk_) return;
    read_pos_ = 0;
  }
  for (;;) {
    uint32_t committed = read_chunk_->committed.load(std::memory_order_acquire);
    while (read_pos_ < committed) {
      if (budget == 0) return;
      const Record* r = &read_chunk_->records[read_pos_];
      uint32_t extra = r->kind == RecordKind::kOperator ? r->payload : 0;
      visit(*r, r + 1, extra);
      read_pos_ += 1 + extra;
      budget -= std::min<size_t>(budget, 1 + extra);
    }
    Chunk* next = read_chunk_->next.load(std::memory_order_acquire);
    if (!next) return;
    // The producer stored its last commit to this chunk before linking `next`.
    if (read_chunk_->committed.load(std::memory_order_acquire) > read_pos_) continue;
    chunk_pool().release(read_chunk_);
    read_chunk_ = next;
    read_pos_ = 0;
  }
}

}  // namespace nanomx::profiler
