// The engine's seam for device backends (docs/runtime.md, "Adding a backend"). A backend whose
// operations finish after their function returns (a GPU: the function enqueues kernels on a
// stream) registers, per device type, how many workers each device gets and how a pool of them
// runs operations and completes them. The engine keeps dependencies, pools and threads; the
// backend owns its queues, streams and completion threads.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "engine/var.h"
#include "nanomx/context.h"

namespace nanomx::profiler {
class DeviceRow;
}

namespace nanomx::engine {

// Ends an operation (keeps its error, releases its variables, dispatches what became ready).
// `span_row`: the device row where the operation's span was recorded, from which its dependency
// flows leave (null: none recorded, no flows).
using FinishFn = std::function<void(OprBlock* op, ErrorRef error, bool new_error,
                                    profiler::DeviceRow* span_row)>;

// One worker pool of one device.
class DevicePool {
 public:
  virtual ~DevicePool() = default;
  // On each worker thread as it starts; returns what the thread runs as it ends.
  virtual std::function<void()> start_worker() = 0;
  // On a worker thread: runs op's function through `run` (run_opr_block, inside the profiler's
  // ranges) and completes op through the pool's FinishFn once its device work is done.
  virtual void execute(OprBlock& op, FunctionRef<ErrorRef(bool& new_error)> run) = 0;
};

class DeviceWorkers {
 public:
  virtual ~DeviceWorkers() = default;
  // Worker threads per device (`copy`: of the pool apart for copies to and from the device, as
  // MXNet's copy workers); 0 when the device type has no usable device.
  virtual int threads(bool copy) const = 0;
  // A new pool for device dev_id; `name` is its row prefix ("gpu(0)", "gpu(0) copy").
  virtual std::unique_ptr<DevicePool> make_pool(const std::string& name, int dev_id,
                                                FinishFn finish) = 0;
};

// At load, by a backend: the workers of device type `type` (not owned; lives for the process).
void register_device_workers(DeviceType type, DeviceWorkers* workers);
// Null when no backend registered workers for the type (the CPU types use the engine's own).
DeviceWorkers* device_workers(DeviceType type);

}  // namespace nanomx::engine
