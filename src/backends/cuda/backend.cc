// The CUDA backend (docs/cuda.md): what it registers with the layers below the operators, and
// its kernels.
#include "backends/cuda/backend.h"

#include "backends/cuda/device.h"
#include "backends/cuda/gpu_allocator.h"
#include "backends/cuda/gpu_memory_profile.h"
#include "backends/cuda/gpu_workers.h"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/nvtx.h"
#include "base/backend.h"
#include "nanomx/storage.h"
#include "ops/kernel.h"

namespace nanomx::cuda {
namespace {

// Only where a GPU is visible: a CUDA build on a machine without one would otherwise leave an
// empty CSV in the working directory at every dump.
void write_memory_profile(const std::string& prefix) {
  if (device_count() > 0) storage::write_gpu_memory_profile(prefix);
}

// Without a visible GPU, gpu has no allocator and cpu_pinned stays host memory from the CPU
// allocator, as in a build without CUDA.
void provide_allocators(storage::AllocatorInstall install) {
  if (device_count() == 0) return;
  install(DeviceType::kGPU, &storage::gpu_allocator());
  install(DeviceType::kCPUPinned, &storage::pinned_allocator());
}

// A function-local static: registration runs at load, before namespace-scope objects with
// dynamic initialisation are built.
const DeviceBackend& cuda_backend() {
  static const DeviceBackend backend = [] {
    DeviceBackend b;
    b.name = "cuda";
    b.type = DeviceType::kGPU;
    b.device_name = "gpu";
    b.device_count = device_count;
    b.unavailable_reason = unavailable_reason;
    b.memory_info = memory_info;
    b.copy = copy;
    b.write_memory_profile = write_memory_profile;
    return b;
  }();
  return backend;
}

}  // namespace

void register_cuda_backend() {
  register_device_backend(&cuda_backend());
  storage::register_allocator_provider(provide_allocators);
  engine::register_device_workers(DeviceType::kGPU, &gpu_workers());
  register_nvtx_ranges();
  ops::register_kernel_provider(DeviceType::kGPU, ops::register_cuda_kernels);
}

}  // namespace nanomx::cuda
