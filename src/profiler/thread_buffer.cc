#include "profiler/thread_buffer.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <new>

namespace nanomx::profiler {

// ---------------------------------------------------------------------------------------------
// Chunk pool

ChunkPool& chunk_pool() {
  static ChunkPool* pool = new ChunkPool();  // never destroyed: used by exit-time dumps
  return *pool;
}

namespace {

constexpr size_t kSlabBytes = size_t{2} << 20;  // one transparent huge page on x86-64
constexpr size_t kPageBytes = 4096;
static_assert(kSlabBytes / sizeof(Chunk) == 16, "a slab holds 16 chunks");

// A 2 MiB-aligned anonymous mapping of kSlabBytes, asked to be one huge page; null when the
// system has no memory for it.
char* map_slab() {
  void* p =
      mmap(nullptr, 2 * kSlabBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (base + kSlabBytes - 1) & ~(kSlabBytes - 1);
  if (aligned > base) munmap(p, aligned - base);
  const uintptr_t end = base + 2 * kSlabBytes;
  if (end > aligned + kSlabBytes) {
    munmap(reinterpret_cast<void*>(aligned + kSlabBytes), end - (aligned + kSlabBytes));
  }
  auto* slab = reinterpret_cast<char*>(aligned);
  madvise(slab, kSlabBytes, MADV_HUGEPAGE);  // advice only: 4 KiB pages work the same
  return slab;
}

}  // namespace

Chunk* ChunkPool::carve_locked() {
  if (slab_left_ < sizeof(Chunk)) {
    slab_next_ = map_slab();
    if (!slab_next_) return nullptr;
    slab_left_ = kSlabBytes;
  }
  // Default-initialized, not value-initialized: `Chunk()` would zero its 128 KiB of records,
  // which are always written before they are read (the slab comes zeroed from mmap anyway).
  Chunk* chunk = new (slab_next_) Chunk;
  slab_next_ += sizeof(Chunk);
  slab_left_ -= sizeof(Chunk);
  // Touch every page now so that recording never takes a first-touch fault (with a huge page
  // the first touch maps the whole slab).
  auto* bytes = reinterpret_cast<volatile char*>(chunk->records);
  for (size_t offset = 0; offset < sizeof(chunk->records); offset += kPageBytes) bytes[offset] = 0;
  return chunk;
}

Chunk* ChunkPool::allocate_locked() {
  if (bound_chunks_ != 0 && allocated_ >= bound_chunks_) return nullptr;
  Chunk* chunk = nullptr;
  if (!spare_.empty()) {
    chunk = spare_.back();
    spare_.pop_back();
  } else {
    chunk = carve_locked();
    if (!chunk) return nullptr;
  }
  ++allocated_;
  return chunk;
}

Chunk* ChunkPool::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!free_.empty()) {
    Chunk* chunk = free_.back();
    free_.pop_back();
    return chunk;
  }
  return allocate_locked();
}

void ChunkPool::release(Chunk* chunk) {
  chunk->committed.store(0, std::memory_order_relaxed);
  chunk->next.store(nullptr, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  if (bound_chunks_ != 0 && allocated_ > bound_chunks_) {  // the bound was lowered
    --allocated_;
    spare_.push_back(chunk);
    return;
  }
  free_.push_back(chunk);
}

void ChunkPool::prefault(size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (free_.size() < count) {
    Chunk* chunk = allocate_locked();
    if (!chunk) break;
    free_.push_back(chunk);
  }
}

void ChunkPool::set_bound(uint64_t max_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  bound_bytes_ = max_bytes;
  bound_chunks_ = max_bytes == 0 ? 0 : std::max<uint64_t>(1, max_bytes / sizeof(Chunk));
  while (bound_chunks_ != 0 && allocated_ > bound_chunks_ && !free_.empty()) {
    spare_.push_back(free_.back());
    free_.pop_back();
    --allocated_;
  }
}

uint64_t ChunkPool::bound_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bound_bytes_;
}

uint64_t ChunkPool::allocated_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocated_ * sizeof(Chunk);
}

// ---------------------------------------------------------------------------------------------
// Thread buffers

ThreadBuffer::ThreadBuffer(uint32_t tid) : tid_(tid) {}

ThreadBuffer::~ThreadBuffer() {
  Chunk* chunk = read_chunk_ ? read_chunk_ : published_first_.load();
  while (chunk) {
    Chunk* next = chunk->next.load();
    chunk_pool().release(chunk);
    chunk = next;
  }
}

const char* drop_kind_name(DropKind kind) {
  switch (kind) {
    case DropKind::kOperator:
      return "operator";
    case DropKind::kApi:
      return "api";
    case DropKind::kMemory:
      return "memory";
    case DropKind::kFlow:
      return "flow";
    case DropKind::kUser:
      return "user";
    case DropKind::kCount:
      break;
  }
  return "unknown";
}

void ThreadBuffer::drop(DropKind kind) {
  dropped_[static_cast<size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
  // Said once per process, at the first drop, even when no dump ever runs: the user learns
  // which setting to raise while the run is still going.
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true, std::memory_order_relaxed)) {
    std::fprintf(stderr,
                 "nanomx profiler: the event buffer bound (max_buffer_mb=%llu) is reached; "
                 "events are being dropped and counted in the trace's otherData "
                 "(dropped_events). Raise max_buffer_mb or shorten dump_period to keep them.\n",
                 static_cast<unsigned long long>(chunk_pool().bound_bytes() >> 20));
  }
}

Record* ThreadBuffer::reserve_slow(uint32_t n, DropKind kind) {
  if (n > Chunk::kRecords) {
    drop(kind);
    return nullptr;
  }
  Chunk* chunk = chunk_pool().acquire();
  if (!chunk) {
    drop(kind);
    return nullptr;
  }
  if (write_chunk_) {
    write_chunk_->next.store(chunk, std::memory_order_release);
  } else {
    published_first_.store(chunk, std::memory_order_release);
  }
  write_chunk_ = chunk;
  write_pos_ = 0;
  return &chunk->records[0];
}

uint64_t ThreadBuffer::earliest_pending_begin() const {
  uint64_t earliest = UINT64_MAX;
  const Chunk* chunk = read_chunk_ ? read_chunk_ : published_first_.load(std::memory_order_acquire);
  uint32_t pos = read_chunk_ ? read_pos_ : 0;
  while (chunk) {
    const uint32_t committed = chunk->committed.load(std::memory_order_acquire);
    while (pos < committed) {
      const Record& r = chunk->records[pos];
      earliest = std::min(earliest, r.begin);
      pos += 1 + (r.kind == RecordKind::kOperator ? r.payload : 0);
    }
    chunk = chunk->next.load(std::memory_order_acquire);
    pos = 0;
  }
  return earliest;
}

bool ThreadBuffer::fully_drained() const {
  Chunk* chunk = read_chunk_ ? read_chunk_ : published_first_.load(std::memory_order_acquire);
  if (!chunk) return true;
  return chunk->next.load(std::memory_order_acquire) == nullptr &&
         chunk->committed.load(std::memory_order_acquire) == (read_chunk_ ? read_pos_ : 0);
}

ThreadRegistry& thread_registry() {
  static ThreadRegistry* registry = [] {
    auto* r = new ThreadRegistry();    // never destroyed: used by exit-time dumps
    r->thread_names.emplace_back("");  // tid 0 is the metadata row, never a thread
    return r;
  }();
  return *registry;
}

thread_local ThreadBuffer* t_buffer = nullptr;

namespace {

// Owns the thread's buffer and marks it retired at thread exit; the registry keeps it until
// the collector has written everything it holds.
struct ThreadBufferOwner {
  std::shared_ptr<ThreadBuffer> buffer;
  ~ThreadBufferOwner() {
    if (buffer) buffer->retired.store(true, std::memory_order_release);
    t_buffer = nullptr;
  }
};
thread_local ThreadBufferOwner t_owner;

}  // namespace

ThreadBuffer* register_this_thread() {
  forget_exited_threads_if_idle();  // before the registry lock: the collector takes it second
  ThreadRegistry& registry = thread_registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  uint32_t tid = static_cast<uint32_t>(registry.thread_names.size());
  bool is_main = getpid() == static_cast<pid_t>(syscall(SYS_gettid));
  std::string name = is_main ? "main" : "thread " + std::to_string(tid);
  registry.thread_names.push_back(name);
  auto buffer = std::make_shared<ThreadBuffer>(tid);
  registry.buffers.push_back(buffer);
  t_owner.buffer = buffer;
  t_buffer = buffer.get();
  return t_buffer;
}

std::shared_ptr<ThreadBuffer> register_device_row(std::string name) {
  forget_exited_threads_if_idle();
  ThreadRegistry& registry = thread_registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  const auto tid = static_cast<uint32_t>(registry.thread_names.size());
  registry.thread_names.push_back(std::move(name));
  auto buffer = std::make_shared<ThreadBuffer>(tid);
  registry.buffers.push_back(buffer);
  return buffer;
}

void set_thread_name(std::string_view name) {
  ThreadBuffer* buffer = this_thread_buffer();
  ThreadRegistry& registry = thread_registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.thread_names[buffer->tid()] = std::string(name);
}

}  // namespace nanomx::profiler
