#include "nanomx/context.h"

#include "base/backend.h"
#include "nanomx/error.h"
#include "nanomx/gpu.h"
#include "profiler/hooks.h"

namespace nanomx {

static_assert(static_cast<int>(DeviceType::kCPU) == profiler::device_code::kCPU &&
                  static_cast<int>(DeviceType::kGPU) == profiler::device_code::kGPU &&
                  static_cast<int>(DeviceType::kCPUPinned) == profiler::device_code::kCPUPinned &&
                  static_cast<int>(DeviceType::kCPUShared) == profiler::device_code::kCPUShared,
              "the profiler's device codes must be MXNet's, as DeviceType's");

int Context::profiler_slot_slow() const {
  return profiler::device_slot(static_cast<int>(dev_type), dev_id);
}

std::string Context::str() const {
  std::string name;
  switch (dev_type) {
    case DeviceType::kCPU:
      name = "cpu";
      break;
    case DeviceType::kGPU:
      name = "gpu";
      break;
    case DeviceType::kCPUPinned:
      name = "cpu_pinned";
      break;
    case DeviceType::kCPUShared:
      name = "cpu_shared";
      break;
    default:  // a backend's own device type
      const DeviceBackend* backend = device_backend(dev_type);
      name = backend != nullptr ? std::string(backend->device_name)
                                : "device_type_" + std::to_string(static_cast<int>(dev_type));
  }
  return name + "(" + std::to_string(dev_id) + ")";
}

Context make_context(int dev_type, int dev_id) {
  NANOMX_CHECK(dev_type == 1 || dev_type == 2 || dev_type == 3 || dev_type == 5)
      << "unknown device type " << dev_type << " (valid: 1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared)";
  NANOMX_CHECK(dev_id >= 0) << "negative device id " << dev_id;
  if (dev_type == 2) check_gpu_id(dev_id);
  Context ctx{static_cast<DeviceType>(dev_type), dev_id};
  ctx.profiler_slot();  // throws for an id beyond the device rows
  return ctx;
}

}  // namespace nanomx
