// The built-in CPU allocator (pooled per size class), registered for the CPU device types.
#pragma once

#include "nanomx/storage.h"

namespace nanomx::storage {
DeviceAllocator& cpu_allocator();
}  // namespace nanomx::storage
