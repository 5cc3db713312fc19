// The CUDA backend's answers to base/backend.h: devices, their memory, copies.
#pragma once

#include <cstddef>
#include <string>

#include "nanomx/context.h"
#include "nanomx/gpu.h"

namespace nanomx::cuda {

int device_count();
std::string unavailable_reason();
GpuMemoryInfo memory_info(int dev_id);
// With a GPU on either side: enqueued on the calling thread's stream on a GPU worker (the
// engine completes the operation after it), else synchronous.
void copy(void* dst, Context dst_ctx, const void* src, Context src_ctx, size_t bytes);

}  // namespace nanomx::cuda
