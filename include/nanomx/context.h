// Where an NDArray lives: a device type and id (MXNet's Context), mapped to a profiler device row.
#pragma once

#include <string>

// The C++ API: exported from libnanomx.so (nanomx/export.h).
#pragma GCC visibility push(default)

namespace nanomx {

// MXNet's device type codes. The profiler, a layer below this one, names devices by these same
// integer codes (it cannot include this header); src/base/context.cc checks that they agree.
enum class DeviceType { kCPU = 1, kGPU = 2, kCPUPinned = 3, kCPUShared = 5 };

struct Context {
  DeviceType dev_type = DeviceType::kCPU;
  int dev_id = 0;

  static Context cpu(int id = 0) { return {DeviceType::kCPU, id}; }
  // Host memory: cpu, cpu_pinned, cpu_shared (a device backend's types are not).
  bool is_cpu() const {
    return dev_type == DeviceType::kCPU || dev_type == DeviceType::kCPUPinned ||
           dev_type == DeviceType::kCPUShared;
  }
  // The profiler's device slot (cpu/i, gpu/i, ...); throws for an id out of range. cpu(0), the
  // row nearly every call asks for, is always slot 0 and answered here.
  int profiler_slot() const {
    return dev_type == DeviceType::kCPU && dev_id == 0 ? 0 : profiler_slot_slow();
  }
  // "cpu(0)", "gpu(1)", "cpu_pinned(0)", "cpu_shared(0)".
  std::string str() const;
  bool operator==(const Context& other) const = default;

 private:
  int profiler_slot_slow() const;
};

// Validates a context given as MXNet's integer codes (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared);
// throws for unknown codes and for gpu(i) unless i < num_gpus() (nanomx/gpu.h).
Context make_context(int dev_type, int dev_id);

}  // namespace nanomx

#pragma GCC visibility pop
