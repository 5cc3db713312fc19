// The table of device backends, and the GPU queries of nanomx/gpu.h answered from it: a build
// without a GPU backend answers 0, "this build has no CUDA support".
#include "base/backend.h"

#include <array>
#include <atomic>
#include <string>

#include "nanomx/context.h"
#include "nanomx/error.h"
#include "nanomx/gpu.h"

namespace nanomx {
namespace {

// Written at load (registration), read on every query: no lock, never shrinks.
std::array<std::atomic<const DeviceBackend*>, detail::kMaxDeviceBackends>& backends() {
  static std::array<std::atomic<const DeviceBackend*>, detail::kMaxDeviceBackends> table{};
  return table;
}

const DeviceBackend* gpu_backend() { return device_backend(DeviceType::kGPU); }

}  // namespace

void register_device_backend(const DeviceBackend* backend) {
  NANOMX_CHECK(backend != nullptr && backend->device_count != nullptr &&
               backend->unavailable_reason != nullptr)
      << "register_device_backend: a backend needs a device_count and an unavailable_reason";
  NANOMX_CHECK(backend->type != DeviceType::kCPU && backend->type != DeviceType::kCPUPinned &&
               backend->type != DeviceType::kCPUShared)
      << "register_device_backend: " << backend->name
      << " cannot take a CPU device type (host memory and CPU kernels are built in)";
  const DeviceBackend* existing = device_backend(backend->type);
  NANOMX_CHECK(existing == nullptr)
      << "register_device_backend: device type " << static_cast<int>(backend->type)
      << " already has backend " << existing->name << "; cannot register " << backend->name;
  for (auto& slot : backends()) {
    const DeviceBackend* empty = nullptr;
    if (slot.compare_exchange_strong(empty, backend, std::memory_order_acq_rel)) return;
  }
  NANOMX_THROW() << "register_device_backend: more than " << detail::kMaxDeviceBackends
                 << " backends; cannot register " << backend->name;
}

const DeviceBackend* device_backend(DeviceType type) {
  for (auto& slot : backends()) {
    const DeviceBackend* b = slot.load(std::memory_order_acquire);
    if (b == nullptr) return nullptr;
    if (b->type == type) return b;
  }
  return nullptr;
}

const DeviceBackend* detail::device_backend_at(size_t i) {
  return i < backends().size() ? backends()[i].load(std::memory_order_acquire) : nullptr;
}

bool cuda_built() { return gpu_backend() != nullptr; }

int num_gpus() {
  const DeviceBackend* b = gpu_backend();
  return b != nullptr ? b->device_count() : 0;
}

std::string gpu_unavailable_reason() {
  const DeviceBackend* b = gpu_backend();
  if (b == nullptr) return "this build has no CUDA support";
  return b->device_count() > 0 ? "" : b->unavailable_reason();
}

void check_gpu_id(int dev_id) {
  NANOMX_CHECK(dev_id >= 0) << "negative device id " << dev_id << " for gpu(" << dev_id << ")";
  const int n = num_gpus();
  NANOMX_CHECK(n > 0) << "gpu(" << dev_id << ") requested, but " << gpu_unavailable_reason();
  NANOMX_CHECK(dev_id < n) << "gpu(" << dev_id << ") requested, but only " << n << " GPU"
                           << (n == 1 ? " is" : "s are") << " visible (gpu(0) .. gpu(" << n - 1
                           << "))";
}

GpuMemoryInfo gpu_memory_info(int dev_id) {
  check_gpu_id(dev_id);
  const DeviceBackend* b = gpu_backend();
  return b->memory_info != nullptr ? b->memory_info(dev_id) : GpuMemoryInfo{};
}

}  // namespace nanomx
