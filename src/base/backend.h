// A device backend as the layers below the operators see it (docs/runtime.md, "Adding a
// backend"). A backend lives in its own folder under src/backends/ and registers, at load, one
// DeviceBackend here plus what the storage, engine, profiler and operator layers take from it
// (an allocator provider, its worker pools, range hooks, kernels). base, storage and engine
// never include a backend's headers: they ask this table.
#pragma once

#include <cstddef>
#include <string>

#include "nanomx/context.h"
#include "nanomx/gpu.h"

namespace nanomx {

struct DeviceBackend {
  const char* name = "";               // "cuda": for messages and Features()
  DeviceType type = DeviceType::kCPU;  // the device type whose contexts it serves
  const char* device_name = "";        // "gpu": Context::str's name of that type
  // How many devices of `type` this process can use, and why none when it is 0. Asked lazily
  // (a backend may load a driver to answer); the answer may be cached by the backend.
  int (*device_count)() = nullptr;
  std::string (*unavailable_reason)() = nullptr;
  // Free and total memory of device dev_id (dev_id already checked).
  GpuMemoryInfo (*memory_info)(int dev_id) = nullptr;
  // Copies `bytes` between two memories of which at least one is this backend's: on the
  // calling worker's queue when it has one (the engine completes the operation after it),
  // synchronously otherwise.
  void (*copy)(void* dst, Context dst_ctx, const void* src, Context src_ctx,
               size_t bytes) = nullptr;
  // Optional: writes the backend's memory profile files under `prefix` (profiler dump).
  void (*write_memory_profile)(const std::string& prefix) = nullptr;
};

// Registers `backend` (not copied: it must live as long as the process) for its device type;
// throws when that type already has one. Backends register at load, before any other code of
// the process runs (src/backends/backends.cc).
void register_device_backend(const DeviceBackend* backend);
// The backend of a device type; null when none is registered (the CPU types have none: host
// memory and the CPU kernels are built in).
const DeviceBackend* device_backend(DeviceType type);
// Every registered backend, in registration order.
template <typename F>
void for_each_device_backend(F&& f);

namespace detail {
constexpr size_t kMaxDeviceBackends = 8;
const DeviceBackend* device_backend_at(size_t i);
}  // namespace detail

template <typename F>
void for_each_device_backend(F&& f) {
  for (size_t i = 0; i < detail::kMaxDeviceBackends; ++i) {
    const DeviceBackend* b = detail::device_backend_at(i);
    if (b == nullptr) return;
    f(*b);
  }
}

}  // namespace nanomx
