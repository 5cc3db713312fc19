#include "backends/cuda/nvml_process_memory.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <vector>

namespace nanomx::storage {

namespace {

// The few NVML entry points used, declared from NVML's documented C ABI (the toolkit here ships
// no nvml.h): return codes are ints (0 success, 7 insufficient size), devices opaque pointers,
// and a process entry is {pid, usedGpuMemory, gpuInstanceId, computeInstanceId} (the layout of
// the _v2 and _v3 process queries).
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlInsufficientSize = 7;
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;  // ULLONG_MAX: not available
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
using NvmlDevice = void*;

struct Nvml {
  int (*init)() = nullptr;
  int (*device_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  int (*compute_processes)(NvmlDevice, unsigned int*, ProcessInfo*) = nullptr;
  const char* (*error_string)(int) = nullptr;
  std::string failure;  // why NVML cannot be used ("" when it can)
};

template <typename Fn>
bool resolve(void* handle, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  return fn != nullptr;
}

const Nvml& nvml() {
  static const Nvml library = [] {
    Nvml n;
    void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      n.failure = std::string("NVML is not available (") + (error ? error : "dlopen failed") + ")";
      return n;
    }
    // _v3 first; a driver older than that has the _v2 query with the same entry layout.
    if (!resolve(handle, "nvmlInit_v2", n.init) ||
        !resolve(handle, "nvmlDeviceGetHandleByPciBusId_v2", n.device_by_pci_bus_id) ||
        !(resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v3", n.compute_processes) ||
          resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v2", n.compute_processes)) ||
        !resolve(handle, "nvmlErrorString", n.error_string)) {
      n.failure = "NVML lacks an entry point nanomx needs (driver too old)";
      return n;
    }
    if (const int rc = n.init(); rc != kNvmlSuccess) {
      n.failure = std::string("nvmlInit failed: ") + n.error_string(rc);
    }
    return n;
  }();
  return library;
}

}  // namespace

std::optional<uint64_t> nvml_process_memory(int dev_id, std::string* why) {
  const Nvml& n = nvml();
  if (!n.failure.empty()) {
    *why = n.failure;
    return std::nullopt;
  }
  // CUDA's device numbers follow CUDA_VISIBLE_DEVICES, NVML's do not: the PCI bus id is common.
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, dev_id) != cudaSuccess) {
    *why = "cannot get the PCI bus id of gpu(" + std::to_string(dev_id) + ")";
    return std::nullopt;
  }
  NvmlDevice device = nullptr;
  if (const int rc = n.device_by_pci_bus_id(bus_id, &device); rc != kNvmlSuccess) {
    *why = std::string("NVML does not know the device at ") + bus_id + ": " + n.error_string(rc);
    return std::nullopt;
  }
  std::vector<ProcessInfo> processes(64);
  for (int attempt = 0;; ++attempt) {
    auto count = static_cast<unsigned int>(processes.size());
    const int rc = n.compute_processes(device, &count, processes.data());
    if (rc == kNvmlInsufficientSize && attempt < 4) {
      processes.resize(count + 16);  // processes come and go between the two calls
      continue;
    }
    if (rc != kNvmlSuccess) {
      *why = std::string("NVML cannot list the processes of gpu(") + std::to_string(dev_id) +
             "): " + n.error_string(rc);
      return std::nullopt;
    }
    processes.resize(count);
    break;
  }
  const auto self = static_cast<unsigned int>(::getpid());
  for (const ProcessInfo& p : processes) {
    if (p.pid != self) continue;
    if (p.used_gpu_memory == ULLONG_MAX) {
      *why = "the driver does not report per-process memory on gpu(" + std::to_string(dev_id) + ")";
      return std::nullopt;
    }
    return p.used_gpu_memory;
  }
  *why = "NVML does not list this process (pid " + std::to_string(self) + ") on gpu(" +
         std::to_string(dev_id) + ")";
  return std::nullopt;
}

}  // namespace nanomx::storage
