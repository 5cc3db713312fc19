// The profiler's recording hooks for the runtime's own layers (engine, storage, ndarray, ops,
// C API): the gate, the clock, operator / C API / memory records and the device rows. Internal:
// included through the src/ include path, never installed. The user API is nanomx/profiler.h.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "nanomx/profiler.h"

namespace nanomx::profiler {

// ------------------------------------------------------------------------------------------
// Device rows. Slots follow MXNet: cpu/0..cpu/N-1, gpu/0..gpu/G-1, "cpu pinned/",
// "cpu shared/"; N = hardware threads, G = 0 until a CUDA-enabled layer sets it.

// Devices are named by MXNet's integer device type codes, not by nanomx::DeviceType: that enum
// lives with Context in the base layer (nanomx/context.h), above the profiler, and a lower layer
// never includes a higher one. src/base/context.cc checks that the two sets of codes agree.
namespace device_code {
constexpr int kCPU = 1;
constexpr int kGPU = 2;
constexpr int kCPUPinned = 3;
constexpr int kCPUShared = 5;
}  // namespace device_code
// Throws on an unknown type code or an id out of range.
int device_slot(int device_type, int device_id);
// Slots 0..device_slot_count()-1: the CPUs, room for 64 GPUs, cpu pinned, cpu shared. The layout
// never changes; a GPU slot is configured once set_gpu_slot_count covers it.
int device_slot_count();
int cpu_device_count();  // cpu(0)..cpu(n-1): one per hardware thread
bool device_slot_configured(int slot);
std::string device_slot_name(int slot);
constexpr int kMaxGpuRows = 64;
// How many GPU slots device_slot() accepts (at most kMaxGpuRows): set by the runtime when it
// learns the GPU count.
void set_gpu_slot_count(int count);

// ------------------------------------------------------------------------------------------
// Hooks for the runtime's layers (engine, storage, C API). All are cheap when disabled.

namespace detail {
// Bits of the gate word: the four mode bits (set only while running and not paused), kUserBit
// (set while not paused: user objects), kAggregateBit (aggregate table enabled), kRunningBit.
// (kUserBit and the gate itself are declared in nanomx/profiler.h, for ScopedEvent.)
constexpr uint32_t kAggregateBit = 32;
// Set while running and not paused, whatever the mode: MXNet's CachedOp static path (the
// symbolic executor) profiles its ops under this condition (docs/mxnet-compat.md).
constexpr uint32_t kRunningBit = 64;
uint64_t now_ticks_slow();
extern bool use_tsc;  // set once at load, before any record
}  // namespace detail

// True when events of these mode bits are being recorded: one relaxed load and a branch.
inline bool active(uint32_t mode_bits) {
  return (detail::gate.load(std::memory_order_relaxed) & mode_bits) == mode_bits;
}

// The profiler's clock: TSC ticks where the TSC is invariant, else CLOCK_MONOTONIC ns. Ticks
// become nanoseconds since the trace's time zero only in the collector.
inline uint64_t now_ticks() {
#if defined(__x86_64__)
  if (detail::use_tsc) return __builtin_ia32_rdtsc();
#endif
  return detail::now_ticks_slow();
}

// C API calls (category MXNET_C_API). Each call records the counters "MXNet C API Calls" and
// "MXNet C API Concurrency" and a `b`/`e` task named after the function. Tolerant of the state
// changing in the middle of a call.
void api_enter(NameId function);
void api_exit(NameId function);
class ApiCallScope {
 public:
  explicit ApiCallScope(NameId function) : function_(function), on_(active(kApi)) {
    if (on_) api_enter(function_);
  }
  ~ApiCallScope() {
    if (on_) api_exit(function_);
  }
  ApiCallScope(const ApiCallScope&) = delete;
  ApiCallScope& operator=(const ApiCallScope&) = delete;

 private:
  NameId function_;
  bool on_;
};

// Operators (category "operator", or "Custom Operator" for names with "::"). Recorded on the
// calling (worker) thread under the device slot's row, with the shapes in `args`. A non-zero
// flow id links the op to the thread that pushed it (see flow_start).
struct ShapeView {
  const int64_t* dims;
  int ndim;
};
struct OperatorShapes {
  std::span<const ShapeView> inputs;
  std::span<const ShapeView> outputs;
};
void record_operator(NameId name, int slot, uint64_t begin_ticks, uint64_t end_ticks,
                     const OperatorShapes& shapes = {}, uint64_t flow_id = 0);

// Records the start of a flow arrow on the calling thread and returns its id (never 0).
// Returns 0 (nothing recorded) when `mode_bits` are not active.
uint64_t flow_start(NameId category, uint32_t mode_bits);

// The same operator record for an engine that pushes on one thread and runs on another: the
// shapes are packed once, at push, into the words the record carries (`n_in, n_out`, then
// `rank, dims...` of each shape, zero-padded to a multiple of 4); `record_operator_packed` then
// appends the flow finish, the operator and its shape words with one reservation and one
// commit. `pack_operator_shapes` returns the number of words (a multiple of 4), or 0 when they
// need more than `capacity` or more than kMaxShapeWords (the op is then recorded without shapes).
constexpr size_t kMaxShapeWords = 256;
size_t packed_shape_words(const OperatorShapes& shapes);  // before padding; may exceed the max
size_t pack_operator_shapes(const OperatorShapes& shapes, int64_t* words, size_t capacity);
// `dependency_flow_id` (non-zero) also finishes the dependency flow that
// dependency_flow_start returned for this operation.
void record_operator_packed(NameId name, int slot, uint64_t begin_ticks, uint64_t end_ticks,
                            const int64_t* words, size_t num_words, uint64_t flow_id,
                            uint64_t dependency_flow_id = 0);

// Dependency flows (docs/trace-format.md#dependency-flows): the engine calls this on the thread
// that ran operation A, when A's completion made operation B ready; it records the flow's start
// on A's device row `slot` at A's end (`end_ticks`) and returns its id (never 0), which B's
// record_operator_packed finishes at B's start. Returns 0 (nothing recorded) when the record is
// dropped. One record per dependency; the engine calls it only for profiled operations.
uint64_t dependency_flow_start(int slot, uint64_t end_ticks);

// GPU operators (docs/cuda.md, "Profiler"): the worker's CPU time launching an operator and the
// device's time running it are two spans. The launch goes on the worker's thread under the
// device row, in category "operator launch", finishing the push and dependency flows as an
// operator record does; it returns the id of a flow (category "launch") from the launch's end
// to the device execution (0: nothing recorded, so no finish may be recorded either).
uint64_t record_operator_launch(NameId name, int slot, uint64_t begin_ticks, uint64_t end_ticks,
                                uint64_t flow_id, uint64_t dependency_flow_id);

class ThreadBuffer;
// A row of its own under a device (a CUDA stream's: "gpu(0) stream 1") for work that runs on
// the device, not on a thread: records made through it go to a buffer registered and named as a
// thread's. One thread at a time may record through a row (single producer, as a thread's).
class DeviceRow {
 public:
  explicit DeviceRow(std::string name);
  ~DeviceRow();  // the row's records are still written; the name stays
  DeviceRow(const DeviceRow&) = delete;
  DeviceRow& operator=(const DeviceRow&) = delete;

  // The operator's device execution [begin, end] (profiler ticks) with its packed shapes, in the
  // operator's category (and its aggregate row), finishing the launch's flow `launch_flow_id`.
  void record_operator(NameId name, int slot, uint64_t begin_ticks, uint64_t end_ticks,
                       const int64_t* words, size_t num_words, uint64_t launch_flow_id);
  // dependency_flow_start recorded on this row (at the device span's end) instead of the
  // calling thread's.
  uint64_t dependency_flow_start(int slot, uint64_t end_ticks);
  uint32_t tid() const;

 private:
  std::shared_ptr<ThreadBuffer> buffer_;
};

// Memory per device slot: in-use bytes are always tracked (so the peak is true); while kMemory
// is active each change also records the counter "Memory: <slot>" in category "Device Storage".
// (memory_in_use and memory_peak, the queries, are public: nanomx/profiler.h.)
void memory_alloc(int slot, uint64_t bytes);
void memory_free(int slot, uint64_t bytes);

}  // namespace nanomx::profiler
