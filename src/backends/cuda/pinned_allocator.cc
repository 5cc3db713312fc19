// Page-locked host memory for cpu_pinned (docs/cuda.md), as MXNet's cpu_pinned storage: a copy
// between it and a GPU is a DMA the copy worker's stream runs asynchronously, where a copy from
// ordinary (pageable) memory is staged through the driver's own buffer on the calling thread.
// Registered for cpu_pinned only when a GPU is visible; otherwise cpu_pinned is ordinary memory
// from the CPU allocator, as in a build without CUDA.
//
// cudaHostAlloc and cudaFreeHost are slow (they map and unmap pages for the device, and
// cudaFreeHost synchronizes), so freed blocks are pooled per size class (storage::size_class).

#include <map>
#include <mutex>
#include <vector>

#include "backends/cuda/block_pool.h"
#include "backends/cuda/cuda_call.h"
#include "backends/cuda/gpu_allocator.h"
#include "nanomx/error.h"
#include "profiler/hooks.h"

namespace nanomx::storage {
namespace {

class PinnedAllocator final : public DeviceAllocator {
 public:
  Block allocate(size_t size, Context ctx) override {
    Block block;
    block.ctx = ctx;
    block.size = size;
    if (size == 0) return block;
    const size_t capacity = size_class(size);
    void* data = pool_.take(capacity);
    if (data == nullptr) {
      // Portable: pinned for every GPU, whichever device the calling thread is on.
      cudaError_t status = cudaHostAlloc(&data, capacity, cudaHostAllocPortable);
      if (status != cudaSuccess) {
        (void)cudaGetLastError();  // clear it: the retry should report its own
        release_pooled();
        status = cudaHostAlloc(&data, capacity, cudaHostAllocPortable);
      }
      NANOMX_CHECK(status == cudaSuccess)
          << "out of pinned memory: cannot allocate " << size << " bytes on " << ctx.str()
          << " (CUDA: " << cudaGetErrorString(status) << ")";
    }
    block.data = data;
    block.capacity = capacity;
    profiler::memory_alloc(ctx.profiler_slot(), capacity);
    return block;
  }

  // The engine releases a block once every operation that used it completed, copies included.
  void release(Block& block) override {
    if (block.data == nullptr) return;
    profiler::memory_free(block.ctx.profiler_slot(), block.capacity);
    pool_.put(block.data, block.capacity);
    block.data = nullptr;
  }

  void release_pooled() override {
    pool_.drain([](void* data) { (void)cudaFreeHost(data); });  // at exit the driver may be gone
  }

  size_t pooled_bytes() override { return pool_.pooled_bytes(); }

  const char* name() const override { return "cpu pinned (CUDA)"; }

 private:
  BlockPool pool_;
};

}  // namespace

DeviceAllocator& pinned_allocator() {
  static PinnedAllocator* instance = new PinnedAllocator;  // never destroyed: see storage.cc
  return *instance;
}

}  // namespace nanomx::storage
