// The CUDA allocator (docs/cuda.md): registered for gpu when a GPU is visible.
#pragma once

#include <string>

#include "nanomx/storage.h"

namespace nanomx::storage {
DeviceAllocator& gpu_allocator();
// Page-locked host memory for cpu_pinned (pinned_allocator.cc), registered with the GPU's.
DeviceAllocator& pinned_allocator();
// How requests map to pooled blocks: NANOMX_GPU_MEM_POOL_TYPE (or MXNET_GPU_MEM_POOL_TYPE).
// Naive: a pool per exact size (rounded to 256 bytes, cudaMalloc's alignment); Round: sizes
// rounded up to a power of two (from NANOMX_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF's 2^cutoff bytes up,
// multiples of that), fewer distinct sizes to pool; Unpooled: cudaMalloc/cudaFree every time.
enum class GpuPoolType { kNaive, kRound, kUnpooled };
GpuPoolType gpu_pool_type();
size_t gpu_size_class(size_t size, GpuPoolType type);
}  // namespace nanomx::storage
