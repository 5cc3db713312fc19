// Device memory: one allocator per device type behind one interface (DeviceAllocator), found
// through a registry, and arenas (one block carved into many arrays by byte offset) beside the
// per-array allocation.
//
// The CPU allocator (registered for cpu, cpu_pinned and cpu_shared) hands out 64-byte aligned
// blocks, keeps freed blocks in a pool per size class for reuse, and reports every block handed
// out and returned to the memory profiler under the context's device row ("Memory: cpu/0").
// A device backend (src/backends/) provides its own allocator for its device type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "nanomx/context.h"

// The C++ API: exported from libnanomx.so (nanomx/export.h).
#pragma GCC visibility push(default)

namespace nanomx::storage {

// A block of device memory. `size` is what was asked for; `capacity` what the block holds (the
// size class), which is also what the memory profiler counts.
struct Block {
  void* data = nullptr;
  size_t size = 0;
  size_t capacity = 0;
  Context ctx;
};

constexpr size_t kAlignment = 64;

// What an allocation is for, as the GPU memory profile names it (MXNet's "Attribute Name" =
// scope + name, docs/cuda.md): `tensordot:in_arg:A`, `init:_random_uniform`. Whoever allocates
// says so with an AllocationLabelScope; allocators read the calling thread's label only when
// they record the allocation (memory profiling on), so labelling costs two thread-local writes.
struct AllocationLabel {
  std::string_view scope;  // "outer:inner:"; empty: the profiler's scope when allocating
  std::string_view name;   // empty: "unknown" (MXNet's default)
};

// Sets the calling thread's label and returns the one it replaces.
AllocationLabel exchange_allocation_label(AllocationLabel label);

// Labels the calling thread's allocations while alive (the views must outlive it); the previous
// label comes back at the end, so labels nest (the innermost wins). With `enabled` false it does
// nothing: a hot caller labels only while memory profiling records (profiler::kMemory).
class AllocationLabelScope {
 public:
  explicit AllocationLabelScope(AllocationLabel label, bool enabled = true) : enabled_(enabled) {
    if (enabled_) previous_ = exchange_allocation_label(label);
  }
  ~AllocationLabelScope() {
    if (enabled_) exchange_allocation_label(previous_);
  }
  AllocationLabelScope(const AllocationLabelScope&) = delete;
  AllocationLabelScope& operator=(const AllocationLabelScope&) = delete;

 private:
  bool enabled_;
  AllocationLabel previous_;
};

// The calling thread's label (both views empty when none is set).
AllocationLabel current_allocation_label();
// scope + name with the defaults filled in: the profiler's current scope, "unknown".
std::string allocation_attribute(AllocationLabel label);

// Part of an arena used for one purpose (an array, or several whose lifetimes do not overlap),
// described for the GPU memory profile, which shows an arena as its regions.
struct ArenaRegion {
  std::string attribute;  // scope + name, as allocation_attribute gives
  size_t offset = 0;
  size_t bytes = 0;  // requested
};

// The memory of one device type. Implementations are thread-safe: blocks are allocated on the
// pushing thread and released on engine workers. An allocator reports what it hands out to
// the memory profiler (profiler::memory_alloc / memory_free on the context's device slot).
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  // `size` bytes on ctx, aligned to at least kAlignment; a zero-byte request gives a null
  // block. Throws on failure.
  virtual Block allocate(size_t size, Context ctx) = 0;
  // Takes back a block this allocator made (null data: nothing); sets block.data to null.
  virtual void release(Block& block) = 0;
  // Frees every pooled (unused) block; what is still in use stays.
  virtual void release_pooled() = 0;
  // Bytes held in pools, not in use.
  virtual size_t pooled_bytes() = 0;
  virtual const char* name() const = 0;  // "cpu pooled", for messages
  // What the regions of `block` (an arena's, sorted by offset, inside it) hold, for the memory
  // profile; an allocator that keeps no per-block record ignores it.
  virtual void describe_regions(const Block& block, std::span<const ArenaRegion> regions) {
    (void)block;
    (void)regions;
  }
};

// Makes `allocator` the one for device type `type` (null: none). The allocator is not owned
// and must outlive every block it made; at most one per type (the CPU one is built in).
void register_allocator(DeviceType type, DeviceAllocator* allocator);
// A device backend's allocators, installed when the storage table is first used (not at
// registration: a backend may need its device count, which can load a driver, to decide).
// `install(type, allocator)` replaces the built-in one for that type (cpu_pinned: page-locked
// memory once a GPU is visible). Providers run in registration order; register at load.
using AllocatorInstall = void (*)(DeviceType type, DeviceAllocator* allocator);
void register_allocator_provider(void (*provider)(AllocatorInstall install));
// The allocator of a device type; throws naming the device type when this build has none.
DeviceAllocator& allocator_for(DeviceType type);

// Through allocator_for(ctx.dev_type): allocates `size` bytes on ctx (a zero-byte request
// gives a null block); throws on failure.
Block allocate(size_t size, Context ctx);
// Returns a block to the allocator of its context.
void release(Block& block);
// Every registered allocator: frees the pooled blocks / the bytes pooled.
void release_pooled();
size_t pooled_bytes();
// The size class a request of `size` bytes is served from (CPU allocator).
size_t size_class(size_t size);

// An arena: one block from a device allocator, carved into regions by byte offset, so that a
// memory planner can place many arrays in one block (regions of arrays whose lifetimes do not
// overlap may share bytes). The block is counted once by the memory profiler and freed when the
// arena is; arrays placed in it (NDArray::in_arena) hold the arena until they are freed.
class Arena {
 public:
  // One block of `planned_bytes` on ctx (zero bytes: no block, only empty regions).
  static std::shared_ptr<Arena> create(size_t planned_bytes, Context ctx);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  size_t planned_bytes() const { return block_.size; }
  Context ctx() const { return block_.ctx; }
  // The start of region [offset, offset + bytes): throws unless it lies inside the arena and
  // offset is a multiple of `alignment` (a power of two, at most kAlignment).
  void* region(size_t offset, size_t bytes, size_t alignment = kAlignment) const;
  // Names the arena's regions for the GPU memory profile (DeviceAllocator::describe_regions);
  // throws unless they are sorted by offset, do not overlap and lie inside the arena.
  void describe(std::span<const ArenaRegion> regions) const;

 private:
  explicit Arena(Block block) : block_(block) {}
  Block block_;
};

// Lays regions out one after another, each aligned: the offsets and the planned bytes of an
// arena whose regions all live at once.
class ArenaLayout {
 public:
  // The offset of a new region of `bytes`, aligned to `alignment` (a power of two, at most
  // kAlignment).
  size_t add(size_t bytes, size_t alignment = kAlignment);
  size_t planned_bytes() const { return end_; }

 private:
  size_t end_ = 0;
};

}  // namespace nanomx::storage

#pragma GCC visibility pop
