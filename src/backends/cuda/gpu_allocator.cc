// The pooled CUDA allocator (docs/cuda.md).
//
// cudaFree synchronizes the whole device, so freed blocks go to a pool per device and size class
// and are reused. A block comes back to the pool only when the engine has completed every
// operation that used it (a GPU operation completes after its stream's work is done), so a
// pooled block is never still in use by a kernel. Like MXNet, when a cudaMalloc would leave less
// than NANOMX_GPU_MEM_POOL_RESERVE percent (default 5) of the device's memory free, or fails,
// the pools are freed first.

#include "backends/cuda/gpu_allocator.h"

#include <bit>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/block_pool.h"
#include "backends/cuda/cuda_call.h"
#include "backends/cuda/gpu_memory_profile.h"
#include "nanomx/env.h"
#include "nanomx/error.h"
#include "nanomx/gpu.h"
#include "profiler/hooks.h"

namespace nanomx::storage {

GpuPoolType gpu_pool_type() {
  static const GpuPoolType type = [] {
    const std::string v = env::get("GPU_MEM_POOL_TYPE").value_or("Naive");
    if (v == "Naive") return GpuPoolType::kNaive;
    if (v == "Round") return GpuPoolType::kRound;
    if (v == "Unpooled") return GpuPoolType::kUnpooled;
    throw Error("NANOMX_GPU_MEM_POOL_TYPE (or MXNET_GPU_MEM_POOL_TYPE) is '" + v +
                "'; expected Naive, Round or Unpooled");
  }();
  return type;
}

size_t gpu_size_class(size_t size, GpuPoolType type) {
  constexpr size_t kPage = 256;  // cudaMalloc's alignment
  const size_t paged = (size + kPage - 1) / kPage * kPage;
  if (type != GpuPoolType::kRound) return paged;
  static const int cutoff = env::get_int("GPU_MEM_POOL_ROUND_LINEAR_CUTOFF", 24);
  NANOMX_CHECK(cutoff >= 8 && cutoff < 40)
      << "NANOMX_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF is " << cutoff << "; expected 8 .. 39";
  const size_t linear = size_t{1} << cutoff;
  if (paged <= linear) return std::bit_ceil(paged);
  return (paged + linear - 1) / linear * linear;
}

namespace {

class DeviceGuard {  // sets the calling thread's device for a scope
 public:
  explicit DeviceGuard(int dev_id) {
    NANOMX_CUDA_CALL(cudaGetDevice(&previous_));
    if (previous_ != dev_id) NANOMX_CUDA_CALL(cudaSetDevice(dev_id));
    dev_id_ = dev_id;
  }
  ~DeviceGuard() {
    if (previous_ != dev_id_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  int dev_id_ = 0;
};

class GpuAllocator final : public DeviceAllocator {
 public:
  Block allocate(size_t size, Context ctx) override {
    Block block;
    block.ctx = ctx;
    block.size = size;
    if (size == 0) return block;
    check_gpu_id(ctx.dev_id);
    const GpuPoolType type = gpu_pool_type();
    const size_t capacity = gpu_size_class(size, type);
    void* data = type != GpuPoolType::kUnpooled ? pool(ctx.dev_id).take(capacity) : nullptr;
    const bool reused = data != nullptr;
    if (data == nullptr) data = malloc_on(ctx, capacity);
    block.data = data;
    block.capacity = capacity;
    profiler::memory_alloc(ctx.profiler_slot(), capacity);
    if (profiler::active(profiler::kMemory)) {
      gpu_memory_profile_alloc(data, allocation_attribute(current_allocation_label()), size,
                               ctx.dev_id, capacity, reused);
    }
    return block;
  }

  void release(Block& block) override {
    if (block.data == nullptr) return;
    profiler::memory_free(block.ctx.profiler_slot(), block.capacity);
    if (profiler::active(profiler::kMemory)) gpu_memory_profile_free(block.data);
    if (gpu_pool_type() == GpuPoolType::kUnpooled) {
      DeviceGuard guard(block.ctx.dev_id);
      (void)cudaFree(block.data);  // at exit the driver may be gone: nothing to report
    } else {
      pool(block.ctx.dev_id).put(block.data, block.capacity);
    }
    block.data = nullptr;
  }

  void describe_regions(const Block& block, std::span<const ArenaRegion> regions) override {
    if (profiler::active(profiler::kMemory)) gpu_memory_profile_describe(block.data, regions);
  }

  void release_pooled() override {
    for (int d = 0; d < num_gpus(); ++d) free_pool(d);
  }

  size_t pooled_bytes() override {
    size_t total = 0;
    for (int d = 0; d < num_gpus(); ++d) total += pool(d).pooled_bytes();
    return total;
  }

  const char* name() const override { return "gpu pooled"; }

 private:
  BlockPool& pool(int dev_id) {
    static std::vector<BlockPool>* pools = new std::vector<BlockPool>(
        static_cast<size_t>(num_gpus()));  // never destroyed: blocks outlive statics
    return (*pools)[static_cast<size_t>(dev_id)];
  }

  void free_pool(int dev_id) {
    BlockPool& p = pool(dev_id);
    if (p.pooled_bytes() == 0) return;
    DeviceGuard guard(dev_id);
    p.drain([](void* data) { NANOMX_CUDA_CALL(cudaFree(data)); });
  }

  void* malloc_on(Context ctx, size_t capacity) {
    DeviceGuard guard(ctx.dev_id);
    static const int reserve = env::get_int("GPU_MEM_POOL_RESERVE", 5);
    NANOMX_CHECK(reserve >= 0 && reserve <= 100)
        << "NANOMX_GPU_MEM_POOL_RESERVE is " << reserve << "; expected a percent, 0 .. 100";
    size_t free_bytes = 0, total_bytes = 0;
    NANOMX_CUDA_CALL(cudaMemGetInfo(&free_bytes, &total_bytes));
    const size_t reserved = total_bytes / 100 * static_cast<size_t>(reserve);
    if (free_bytes < reserved + capacity) free_pool(ctx.dev_id);  // nothing when none is pooled
    void* data = nullptr;
    cudaError_t status = cudaMalloc(&data, capacity);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      free_pool(ctx.dev_id);
      status = cudaMalloc(&data, capacity);
    }
    NANOMX_CHECK(status == cudaSuccess)
        << "out of memory: cannot allocate " << capacity << " bytes on " << ctx.str()
        << " (CUDA: " << cudaGetErrorString(status) << "; " << free_bytes << " of " << total_bytes
        << " bytes were free)";
    return data;
  }
};

}  // namespace

DeviceAllocator& gpu_allocator() {
  static GpuAllocator* instance = new GpuAllocator;  // never destroyed, as the pools
  return *instance;
}

}  // namespace nanomx::storage
