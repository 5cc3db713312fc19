// The objects behind the C API's opaque handles (NDArrayHandle, ProfileHandle, OpHandle, and the
// symbol, executor, iterator and KVStore handles to come) live in handle tables. A handle is not
// a pointer but a value that names a slot and the generation of its occupant:
//
//   bits 63..56  kind (HandleKind, never 0: a real pointer or a small integer is never a handle)
//   bits 55..26  generation of the slot (starts at 1, bumped on every free)
//   bits 25..0   slot index
//
// A freed slot's generation moves on, so the handle of a freed object never matches again, even
// after its slot holds a new object; a slot whose generation is spent is retired rather than
// reused, so no handle value is ever given out twice while the process lives. A stale,
// double-freed, made-up or other-kind handle is therefore refused with an error naming the
// function, the argument and the reason, never dereferenced. See docs/c-api-handles.md.
//
// Lookups are lock-free (two acquire loads); creating and freeing take the table's spin lock
// (held only to move an object in or out: a mutex's lock and unlock calls were ~5 % of a tiny
// operator's cost from Python).
// Looking an object up while another thread frees it is a use-after-free in the caller, as with
// any handle API; the table only guarantees that a handle freed before the lookup started is
// refused.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "base/spin_lock.h"
#include "nanomx/error.h"

namespace nanomx::c_api {

static_assert(sizeof(void*) == 8, "handle values pack kind, generation and index into 64 bits");

// Every kind of handle the C API gives out; the value is stored in the handle's top byte, so a
// handle of one kind passed where another is expected is named as such in the error.
enum class HandleKind : uint8_t {
  kNDArray = 1,
  kProfileObject = 2,
  kOp = 3,
  // Reserved for the handle types MXNet has and nanomx does not yet: each gets its own table.
  kSymbol = 4,
  kExecutor = 5,
  kDataIter = 6,
  kKVStore = 7,
  kRecordIO = 8,
};

// "NDArray", "profiler object", ...; "unknown" for a byte that is no kind.
const char* handle_kind_name(uint8_t kind) noexcept;

namespace handle_bits {
inline constexpr int kIndexBits = 26;
inline constexpr int kGenerationBits = 30;
inline constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
inline constexpr uint64_t kGenerationMask = (uint64_t{1} << kGenerationBits) - 1;
inline constexpr uint32_t kMaxGeneration = static_cast<uint32_t>(kGenerationMask);

inline uint64_t value_of(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }
inline uint8_t kind_of(uint64_t value) { return static_cast<uint8_t>(value >> 56); }
inline uint32_t generation_of(uint64_t value) {
  return static_cast<uint32_t>((value >> kIndexBits) & kGenerationMask);
}
inline uint32_t index_of(uint64_t value) { return static_cast<uint32_t>(value & kIndexMask); }
inline void* make(HandleKind kind, uint32_t generation, uint32_t index) {
  const uint64_t value = uint64_t{static_cast<uint8_t>(kind)} << 56 |
                         uint64_t{generation} << kIndexBits | uint64_t{index};
  return reinterpret_cast<void*>(static_cast<uintptr_t>(value));
}
}  // namespace handle_bits

// Throws nanomx::Error "<function>: <argument> is a stale or unknown <kind> handle 0x...
// (<why>)"; `why` tells a freed handle from one of another kind and from one never given out.
[[noreturn]] void throw_bad_handle(const void* handle, HandleKind expected, bool stale,
                                   const char* function, const char* argument);

// The table of one kind of handle, holding objects of type T. One instance per kind, created on
// first use and never destroyed (handles stay valid in exit-time code).
template <typename T, HandleKind Kind>
class HandleTable {
 public:
  static constexpr uint32_t kSlotsPerBlock = 4096;
  static constexpr uint32_t kMaxBlocks = (uint32_t{1} << handle_bits::kIndexBits) / kSlotsPerBlock;

  HandleTable() : blocks_(new std::atomic<Slot*>[kMaxBlocks]()) {}
  // The process's tables are never destroyed (see above); a table that is (a test's) destroys
  // the objects still live in it and frees its blocks.
  ~HandleTable() {
    for (uint32_t b = 0; b < used_blocks_; ++b) {
      Slot* block = blocks_[b].load(std::memory_order_relaxed);
      for (uint32_t i = 0; i < kSlotsPerBlock; ++i) {
        if (block[i].stamp.load(std::memory_order_relaxed) & 1)
          std::launder(reinterpret_cast<T*>(block[i].bytes))->~T();
      }
      delete[] block;
    }
  }
  HandleTable(const HandleTable&) = delete;
  HandleTable& operator=(const HandleTable&) = delete;

  // Builds a T from args in a free slot and returns its handle.
  template <typename... Args>
  void* emplace(Args&&... args) {
    std::lock_guard guard(lock_);
    const uint32_t index = take_index();
    Slot& slot = slot_at(index);
    try {
      new (slot.bytes) T(std::forward<Args>(args)...);
    } catch (...) {
      free_.push_back(index);
      throw;
    }
    const uint32_t generation = slot.stamp.load(std::memory_order_relaxed) >> 1;
    slot.stamp.store(generation << 1 | 1, std::memory_order_release);
    return handle_bits::make(Kind, generation, index);
  }

  // The object of a live handle of this table's kind, or null.
  T* find(const void* handle) const noexcept {
    const uint64_t value = handle_bits::value_of(handle);
    if (handle_bits::kind_of(value) != static_cast<uint8_t>(Kind)) return nullptr;
    const uint32_t index = handle_bits::index_of(value);
    const Slot* block = blocks_[index / kSlotsPerBlock].load(std::memory_order_acquire);
    if (block == nullptr) return nullptr;
    const Slot& slot = block[index % kSlotsPerBlock];
    if (slot.stamp.load(std::memory_order_acquire) != (handle_bits::generation_of(value) << 1 | 1))
      return nullptr;
    return std::launder(reinterpret_cast<T*>(const_cast<unsigned char*>(slot.bytes)));
  }

  // The object of a live handle of this table's kind; throws (see throw_bad_handle) otherwise.
  // `handle` must not be null (check that first, for the usual "must not be null" message).
  T& get(const void* handle, const char* function, const char* argument) const {
    T* object = find(handle);
    if (object == nullptr) fail(handle, function, argument);
    return *object;
  }

  // Ends a live handle: moves its object out (to be destroyed by the caller, outside the lock)
  // and retires the handle value for good. Throws for a handle that is not live.
  T release(const void* handle, const char* function, const char* argument) {
    std::lock_guard guard(lock_);
    T& object = get(handle, function, argument);
    const uint32_t index = handle_bits::index_of(handle_bits::value_of(handle));
    Slot& slot = slot_at(index);
    T out(std::move(object));
    object.~T();
    const uint32_t next = (slot.stamp.load(std::memory_order_relaxed) >> 1) + 1;
    slot.stamp.store(next << 1, std::memory_order_release);
    if (next <= handle_bits::kMaxGeneration) free_.push_back(index);  // else retired for good
    return out;
  }

  // Throws the error for a handle that find() refused: stale, of another kind, or made up.
  [[noreturn]] void fail(const void* handle, const char* function, const char* argument) const {
    const uint64_t value = handle_bits::value_of(handle);
    bool stale = false;
    if (handle_bits::kind_of(value) == static_cast<uint8_t>(Kind)) {
      const uint32_t index = handle_bits::index_of(value);
      const uint32_t generation = handle_bits::generation_of(value);
      const Slot* block = blocks_[index / kSlotsPerBlock].load(std::memory_order_acquire);
      stale =
          block != nullptr && generation >= 1 &&
          generation < (block[index % kSlotsPerBlock].stamp.load(std::memory_order_acquire) >> 1);
    }
    throw_bad_handle(handle, Kind, stale, function, argument);
  }

 private:
  struct Slot {
    alignas(T) unsigned char bytes[sizeof(T)];
    // generation << 1 | live. The generation starts at 1, so a handle value is never 0 or a
    // plausible pointer.
    std::atomic<uint32_t> stamp{2};
  };

  Slot& slot_at(uint32_t index) const {
    return blocks_[index / kSlotsPerBlock].load(std::memory_order_relaxed)[index % kSlotsPerBlock];
  }

  uint32_t take_index() {
    if (free_.empty()) {
      NANOMX_CHECK(used_blocks_ < kMaxBlocks)
          << "too many live " << handle_kind_name(static_cast<uint8_t>(Kind))
          << " handles (at most " << (kMaxBlocks * kSlotsPerBlock) << ")";
      // Reserve first so that a later push_back in release() never allocates.
      free_.reserve(size_t{used_blocks_ + 1} * kSlotsPerBlock);
      auto* block = new Slot[kSlotsPerBlock];
      blocks_[used_blocks_].store(block, std::memory_order_release);
      const uint32_t first = used_blocks_ * kSlotsPerBlock;
      ++used_blocks_;
      for (uint32_t i = kSlotsPerBlock; i-- > 0;) free_.push_back(first + i);
    }
    const uint32_t index = free_.back();
    free_.pop_back();
    return index;
  }

  base::SpinLock lock_;  // guards free_, used_blocks_ and the writes of slots
  std::unique_ptr<std::atomic<Slot*>[]> blocks_;  // freed only with the table
  uint32_t used_blocks_ = 0;
  std::vector<uint32_t> free_;
};

}  // namespace nanomx::c_api
