#include "storage/cpu_allocator.h"

#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "base/spin_lock.h"
#include "nanomx/env.h"
#include "nanomx/error.h"
#include "profiler/hooks.h"

namespace nanomx::storage {
namespace {

// Pools are per process, keyed by size class; CPU device ids share host memory but each block
// is counted on the device row it was allocated for.
// A spin lock, not a std::mutex: blocks are allocated on the pushing thread and released on a
// worker, and a contended std::mutex sleeps in the kernel at once (microseconds).
// The power-of-two classes (up to 1 MiB) are found by their bit index, the rest by a hash
// lookup: a tiny operator allocates and frees one block, and the hash's division showed.
constexpr size_t kSmallClasses = 21;  // 2^0 .. 2^20 bytes (the smallest used is kAlignment)
struct Pool {
  base::SpinLock mutex;
  std::vector<void*> small_blocks[kSmallClasses];
  std::unordered_map<size_t, std::vector<void*>> large_blocks;  // multiples of 64 KiB > 1 MiB
  size_t pooled = 0;
  size_t limit = 0;
  std::vector<void*>& blocks_of(size_t capacity) {
    if (capacity <= (size_t{1} << 20)) return small_blocks[std::countr_zero(capacity)];
    return large_blocks[capacity];
  }
  // The free list of `capacity`, or null when none was ever made (no insertion).
  std::vector<void*>* find(size_t capacity) {
    if (capacity <= (size_t{1} << 20)) return &small_blocks[std::countr_zero(capacity)];
    auto it = large_blocks.find(capacity);
    return it == large_blocks.end() ? nullptr : &it->second;
  }
};

Pool& pool() {
  static Pool* instance = [] {
    auto* p = new Pool;  // never destroyed: blocks may be released during static destruction
    p->limit = static_cast<size_t>(env::get_int("CPU_POOL_MB", 2048)) << 20;
    return p;
  }();
  return *instance;
}

}  // namespace

size_t size_class(size_t size) {
  if (size <= kAlignment) return kAlignment;
  if (size <= (size_t{1} << 20)) return std::bit_ceil(size);  // powers of two up to 1 MiB
  const size_t page = size_t{1} << 16;                        // then multiples of 64 KiB
  return (size + page - 1) / page * page;
}

namespace {

class CpuAllocator final : public DeviceAllocator {
 public:
  Block allocate(size_t size, Context ctx) override;
  void release(Block& block) override;
  void release_pooled() override;
  size_t pooled_bytes() override;
  const char* name() const override { return "cpu pooled"; }
};

Block CpuAllocator::allocate(size_t size, Context ctx) {
  Block block;
  block.ctx = ctx;
  block.size = size;
  if (size == 0) return block;
  const int slot = ctx.profiler_slot();
  const size_t capacity = size_class(size);
  void* data = nullptr;
  {
    Pool& p = pool();
    std::lock_guard lock(p.mutex);
    std::vector<void*>* blocks = p.find(capacity);
    if (blocks != nullptr && !blocks->empty()) {
      data = blocks->back();
      blocks->pop_back();
      p.pooled -= capacity;
    }
  }
  if (data == nullptr) {
    data = std::aligned_alloc(kAlignment, capacity);
    if (data == nullptr) {
      release_pooled();  // this allocator's pools
      data = std::aligned_alloc(kAlignment, capacity);
    }
    NANOMX_CHECK(data != nullptr) << "out of memory: cannot allocate " << size << " bytes on "
                                  << ctx.str();
  }
  block.data = data;
  block.capacity = capacity;
  profiler::memory_alloc(slot, capacity);
  return block;
}

void CpuAllocator::release(Block& block) {
  if (block.data == nullptr) return;
  profiler::memory_free(block.ctx.profiler_slot(), block.capacity);
  Pool& p = pool();
  bool keep = false;
  {
    std::lock_guard lock(p.mutex);
    if (p.pooled + block.capacity <= p.limit) {
      p.blocks_of(block.capacity).push_back(block.data);
      p.pooled += block.capacity;
      keep = true;
    }
  }
  if (!keep) std::free(block.data);
  block.data = nullptr;
}

void CpuAllocator::release_pooled() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  for (std::vector<void*>& blocks : p.small_blocks) {
    for (void* data : blocks) std::free(data);
    blocks.clear();
  }
  for (auto& [capacity, blocks] : p.large_blocks) {
    for (void* data : blocks) std::free(data);
    blocks.clear();
  }
  p.pooled = 0;
}

size_t CpuAllocator::pooled_bytes() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  return p.pooled;
}

}  // namespace

DeviceAllocator& cpu_allocator() {
  static CpuAllocator* instance = new CpuAllocator;  // never destroyed, as the pool
  return *instance;
}

}  // namespace nanomx::storage
