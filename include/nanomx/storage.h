// Device memory. The CPU allocator hands out 64-byte aligned blocks, keeps freed blocks in a pool
// per size class for reuse, and reports every block handed out and returned to the memory
// profiler under the context's device row ("Memory: cpu/0").
#pragma once

#include <cstddef>
#include <cstdint>

#include "nanomx/context.h"

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

// Allocates `size` bytes on ctx (a zero-byte request gives a null block). Throws on failure.
Block allocate(size_t size, Context ctx);
// Returns a block to its pool (or to the system when the pool is over its limit).
void release(Block& block);
// Frees every pooled (unused) block; what is still in use stays.
void release_pooled();
// Bytes held in the pools, not in use.
size_t pooled_bytes();
// The size class a request of `size` bytes is served from.
size_t size_class(size_t size);

}  // namespace nanomx::storage
