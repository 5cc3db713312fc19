// What the NVIDIA driver accounts to this process on a GPU (NVML's per-process usedGpuMemory),
// for the GPU memory profile's `nvml_amend` row (docs/cuda.md): the memory the process holds
// beyond its allocations (the CUDA context, cuBLAS' workspaces, ...). NVML is the driver's own
// library (libnvidia-ml.so.1): it is opened at the first query, never linked, so that nothing
// changes on machines without the driver.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace nanomx::storage {

// The bytes on gpu(dev_id) that NVML lists for this process, or nullopt with `why` saying why
// not: no CUDA support or no NVML, the device or the process not found (in a container whose
// PID namespace is not the host's, NVML lists the host's pids), or the driver does not report
// per-process memory.
std::optional<uint64_t> nvml_process_memory(int dev_id, std::string* why);

}  // namespace nanomx::storage
