// Copies between device memories (docs/cuda.md).
#pragma once

#include <cstddef>

#include "nanomx/context.h"

namespace nanomx::storage {

// Copies `bytes` from src (memory of src_ctx) to dst (memory of dst_ctx): memmove between host
// memory; with a GPU on either side, a CUDA copy, enqueued on the calling thread's stream on a
// GPU engine worker (the engine completes the operation after it), else synchronous.
void copy_bytes(void* dst, Context dst_ctx, const void* src, Context src_ctx, size_t bytes);

}  // namespace nanomx::storage
