#include "engine/device_workers.h"

#include <array>
#include <atomic>

#include "nanomx/error.h"

namespace nanomx::engine {
namespace {
// Indexed by device type code (MXNet's codes are below 8); written at load, read when a pool
// is created.
constexpr size_t kTypeSlots = 8;
constinit std::array<std::atomic<DeviceWorkers*>, kTypeSlots> g_workers{};

size_t slot_of(DeviceType type) {
  const auto code = static_cast<size_t>(type);
  NANOMX_CHECK(code < kTypeSlots) << "engine: invalid device type code " << code;
  return code;
}
}  // namespace

void register_device_workers(DeviceType type, DeviceWorkers* workers) {
  NANOMX_CHECK((!Context{type, 0}.is_cpu()))
      << "engine: the CPU device types use the engine's own workers";
  DeviceWorkers* current = nullptr;
  const bool registered = g_workers[slot_of(type)].compare_exchange_strong(current, workers);
  NANOMX_CHECK(registered || current == workers)
      << "engine: device type " << static_cast<int>(type) << " already has workers";
}

DeviceWorkers* device_workers(DeviceType type) {
  return g_workers[slot_of(type)].load(std::memory_order_acquire);
}

}  // namespace nanomx::engine
