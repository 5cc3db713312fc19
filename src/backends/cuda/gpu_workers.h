// The CUDA backend's engine workers (engine/device_workers.h).
#pragma once

#include "engine/device_workers.h"

namespace nanomx::cuda {
engine::DeviceWorkers& gpu_workers();
}  // namespace nanomx::cuda
