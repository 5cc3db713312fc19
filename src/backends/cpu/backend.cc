// The CPU backend: host memory and the engine's CPU workers are built into the storage and
// engine layers (every layer needs them), so the CPU backend registers only its kernels.
#include "backends/cpu/backend.h"

#include "backends/cpu/kernels/kernels.h"
#include "ops/kernel.h"

namespace nanomx::cpu {

void register_cpu_backend() {
  ops::register_kernel_provider(DeviceType::kCPU, ops::register_cpu_kernels);
}

}  // namespace nanomx::cpu
