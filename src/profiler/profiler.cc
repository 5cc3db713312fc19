// The profiler instance and the record paths: the hooks the runtime's layers call (hooks.h),
// the user objects' records (recording.h), the device slots and their memory counters. This is
// the hot path (docs/profiler.md#hot-path): it stays in the file that defines profiler(), so
// that reading the interned names is an inlined load, not a call. The state machine, steps,
// rotation and collector are in the files profiler_state.h lists.
#include "nanomx/profiler.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <thread>

#include "nanomx/error.h"
#include "profiler/aggregate_stats.h"
#include "profiler/clock.h"
#include "profiler/hooks.h"
#include "profiler/name_table.h"
#include "profiler/profiler_state.h"
#include "profiler/recording.h"
#include "profiler/thread_buffer.h"

namespace nanomx::profiler {

namespace detail {
// Not paused and not running: user objects record before the first run, as in MXNet
// (docs/mxnet-compat.md#state-machine).
std::atomic<uint32_t> gate{kUserBit};
uint64_t scope_begin_ticks() { return now_ticks(); }
}  // namespace detail

Profiler& profiler() {
  static Profiler* instance = new Profiler();  // never destroyed; the exit hook finishes it
  return *instance;
}

namespace {

constexpr int kMaxGpuSlots = kMaxGpuRows;

int cpu_slot_count() {
  static const int count = [] {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 64 : static_cast<int>(n);  // MXNet's fallback
  }();
  return count;
}

std::atomic<int> g_gpu_slots{0};

// Per device slot: bytes in use and the peak, always tracked.
struct MemorySlots {
  std::atomic<uint64_t> in_use[4096 + kMaxGpuSlots + 2];
  std::atomic<uint64_t> peak[4096 + kMaxGpuSlots + 2];
  std::atomic<NameId> counter_name[4096 + kMaxGpuSlots + 2];  // 0 until first needed
};
MemorySlots& memory_slots() {
  static MemorySlots* slots = new MemorySlots();
  return *slots;
}

std::atomic<uint64_t> g_api_calls{0};
std::atomic<int64_t> g_api_concurrency{0};

// Appends a record (filled by `fill`) to this thread's buffer; drops it when the buffer is full.
template <typename Fill>
inline void append_record(DropKind kind, Fill&& fill) {
  ThreadBuffer* buffer = this_thread_buffer();
  Record* r = buffer->reserve(1, kind);
  if (!r) return;
  fill(*r);
  buffer->commit(1);
}

void record_counter(DropKind kind, NameId category, NameId name, uint64_t value, uint64_t ticks) {
  ThreadBuffer* buffer = this_thread_buffer();
  if (Record* r = buffer->reserve(1, kind)) {
    *r = Record{ticks, value, name, category, 0, RecordKind::kCounter, 0, 0};
    buffer->commit(1);
  }
  if (detail::gate.load(std::memory_order_relaxed) & detail::kAggregateBit)
    buffer->stats().add_counter(category, name, value, ticks);
}

}  // namespace

void Profiler::record_step(uint64_t end) {
  append_record(DropKind::kUser, [&](Record& r) {
    r = Record{step_begin,
               end,
               step_category,
               step_category,
               static_cast<uint32_t>(step_number),
               RecordKind::kStep,
               0,
               0};
  });
}

// ---------------------------------------------------------------------------------------------
// Device slots

// The layout is fixed whatever the GPU count: cpu/0.. then kMaxGpuSlots GPU slots, then cpu
// pinned and cpu shared. The GPU count is learnt when the runtime first asks CUDA (base's GPU
// query), which may come after pinned memory was counted or a trace began: nothing may move then.
int device_slot_count() { return cpu_slot_count() + kMaxGpuSlots + 2; }

int cpu_device_count() { return cpu_slot_count(); }

bool device_slot_configured(int slot) {
  const int cpus = cpu_slot_count();
  return slot >= 0 && slot < device_slot_count() &&
         (slot < cpus || slot >= cpus + kMaxGpuSlots || slot - cpus < g_gpu_slots.load());
}

void set_gpu_slot_count(int count) {
  NANOMX_CHECK(count >= 0 && count <= kMaxGpuSlots)
      << "profiler: GPU slot count " << count << " is out of range 0.." << kMaxGpuSlots;
  g_gpu_slots.store(count);
}

int device_slot(int device_type, int device_id) {
  const int cpus = cpu_slot_count(), gpus = g_gpu_slots.load();
  switch (device_type) {
    case device_code::kCPU:
      NANOMX_CHECK(device_id >= 0 && device_id < cpus)
          << "profiler: device cpu(" << device_id << ") has no row; this machine has " << cpus
          << " CPU rows (cpu/0..cpu/" << cpus - 1 << ")";
      return device_id;
    case device_code::kGPU:
      NANOMX_CHECK(device_id >= 0 && device_id < gpus)
          << "profiler: device gpu(" << device_id << ") has no row; " << gpus
          << " GPU rows are configured";
      return cpus + device_id;
    case device_code::kCPUPinned:
      return cpus + kMaxGpuSlots;
    case device_code::kCPUShared:
      return cpus + kMaxGpuSlots + 1;
  }
  fail("profiler: unknown device type ", device_type,
       " (expected cpu=1, gpu=2, cpu_pinned=3, cpu_shared=5)");
}

std::string device_slot_name(int slot) {
  const int cpus = cpu_slot_count();
  NANOMX_CHECK(slot >= 0 && slot < device_slot_count())
      << "profiler: device slot " << slot << " is out of range 0.." << device_slot_count() - 1;
  if (slot < cpus) return "cpu/" + std::to_string(slot);
  if (slot < cpus + kMaxGpuSlots) return "gpu/" + std::to_string(slot - cpus);
  return slot == cpus + kMaxGpuSlots ? "cpu pinned/" : "cpu shared/";
}

// ---------------------------------------------------------------------------------------------
// Hooks

void api_enter(NameId function) {
  Profiler& p = profiler();
  uint64_t calls = g_api_calls.fetch_add(1, std::memory_order_relaxed) + 1;
  int64_t concurrency = g_api_concurrency.fetch_add(1, std::memory_order_relaxed) + 1;
  uint64_t t = now_ticks();
  record_counter(DropKind::kApi, p.api_category, p.api_calls_name, calls, t);
  record_counter(DropKind::kApi, p.api_category, p.api_concurrency_name,
                 static_cast<uint64_t>(concurrency), t);
  ThreadBuffer* buffer = this_thread_buffer();
  if (buffer->api_depth < ThreadBuffer::kMaxApiDepth)
    buffer->api_stack[buffer->api_depth] = {function, now_ticks()};
  ++buffer->api_depth;
}

void api_exit(NameId function) {
  Profiler& p = profiler();
  uint64_t end = now_ticks();
  ThreadBuffer* buffer = this_thread_buffer();
  // Tolerant of profiling being switched on or off in the middle of a call (MXNet CHECK-fails).
  if (buffer->api_depth > 0) {
    --buffer->api_depth;
    if (buffer->api_depth < ThreadBuffer::kMaxApiDepth && active(kApi)) {
      const ApiFrame& frame = buffer->api_stack[buffer->api_depth];
      if (frame.function == function) {
        append_record(DropKind::kApi, [&](Record& r) {
          r = Record{frame.begin, end, function, p.api_category, 0, RecordKind::kTask, 0, 0};
        });
        if (active(detail::kAggregateBit))
          buffer->stats().add_duration(p.api_category, function, end - frame.begin);
      }
    }
  }
  int64_t concurrency = g_api_concurrency.fetch_sub(1, std::memory_order_relaxed) - 1;
  if (active(kApi))
    record_counter(DropKind::kApi, p.api_category, p.api_concurrency_name,
                   static_cast<uint64_t>(concurrency < 0 ? 0 : concurrency), now_ticks());
}

size_t packed_shape_words(const OperatorShapes& shapes) {
  size_t words = 2;
  for (const auto& s : shapes.inputs) words += 1 + static_cast<size_t>(s.ndim);
  for (const auto& s : shapes.outputs) words += 1 + static_cast<size_t>(s.ndim);
  return words;
}

size_t pack_operator_shapes(const OperatorShapes& shapes, int64_t* words, size_t capacity) {
  if (shapes.inputs.empty() && shapes.outputs.empty()) return 0;
  const size_t padded = (packed_shape_words(shapes) + 3) & ~size_t{3};
  if (padded > capacity || padded > kMaxShapeWords) return 0;
  size_t at = 0;
  words[at++] = static_cast<int64_t>(shapes.inputs.size());
  words[at++] = static_cast<int64_t>(shapes.outputs.size());
  for (const auto* list : {&shapes.inputs, &shapes.outputs}) {
    for (const auto& s : *list) {
      words[at++] = s.ndim;
      for (int d = 0; d < s.ndim; ++d) words[at++] = s.dims[d];
    }
  }
  while (at < padded) words[at++] = 0;
  return padded;
}

namespace {
// An operator's category: "Custom Operator" for a custom operator's sub-operations.
NameId operator_category_of(const Profiler& p, NameId name) {
  return names().is_custom_operator(name) ? p.custom_operator_category : p.operator_category;
}

// A flow that ends where an operator span begins (written when `id` is non-zero); category 0:
// the operator's own (a push flow is started in it, and a flow pairs on category and id).
struct FlowFinish {
  uint64_t id = 0;
  NameId name = 0;
  NameId category = 0;
};

// Writes the finishes with an id at r, for a span of `category` beginning at begin_ticks on
// device row `slot`; returns the record after them.
[[gnu::always_inline]] inline Record* write_flow_finishes(
    Record* r, uint64_t begin_ticks, int slot, NameId category,
    std::initializer_list<FlowFinish> finishes) {
  for (const FlowFinish& f : finishes) {
    if (f.id == 0) continue;
    *r++ = Record{begin_ticks, f.id,
                  f.name,      f.category ? f.category : category,
                  0,           RecordKind::kFlowFinish,
                  0,           static_cast<uint16_t>(slot)};
  }
  return r;
}

[[gnu::always_inline]] inline uint32_t count_flows(std::initializer_list<FlowFinish> finishes) {
  uint32_t n = 0;
  for (const FlowFinish& f : finishes) n += f.id != 0 ? 1 : 0;
  return n;
}

// An operator span (category "operator" or "Custom Operator") with its packed shape words and
// the flows that end at its start, in one reservation of `buffer`; its duration goes to the
// buffer's aggregate statistics. Inlined: it is the profiled operator's hot path, and its flow
// lists are constants the compiler then unrolls.
[[gnu::always_inline]] inline void append_operator(const Profiler& p, ThreadBuffer* buffer,
                                                   NameId name, int slot, uint64_t begin_ticks,
                                                   uint64_t end_ticks, const int64_t* words,
                                                   size_t num_words,
                                                   std::initializer_list<FlowFinish> finishes) {
  const NameId category = operator_category_of(p, name);
  const uint32_t extra = static_cast<uint32_t>(num_words / 4);
  const uint32_t flows = count_flows(finishes);
  if (Record* r = buffer->reserve(flows + 1 + extra, DropKind::kOperator)) {
    r = write_flow_finishes(r, begin_ticks, slot, category, finishes);
    *r = Record{begin_ticks, end_ticks,
                name,        category,
                extra,       RecordKind::kOperator,
                0,           static_cast<uint16_t>(slot)};
    // A few words, a record (4 words) at a time: fixed-size copies the compiler inlines (a
    // memcpy call costs more than the copy).
    auto* out = reinterpret_cast<int64_t*>(r + 1);
    for (size_t i = 0; i < extra; ++i) std::memcpy(out + 4 * i, words + 4 * i, 4 * sizeof *words);
    buffer->commit(flows + 1 + extra);
  }
  if (active(detail::kAggregateBit))
    buffer->stats().add_duration(category, name, end_ticks - begin_ticks);
}
}  // namespace

void record_operator_packed(NameId name, int slot, uint64_t begin_ticks, uint64_t end_ticks,
                            const int64_t* words, size_t num_words, uint64_t flow_id,
                            uint64_t dependency_flow_id) {
  Profiler& p = profiler();
  append_operator(
      p, this_thread_buffer(), name, slot, begin_ticks, end_ticks, words, num_words,
      {{flow_id, p.flow_name, 0}, {dependency_flow_id, p.dependency_name, p.dependency_name}});
}

void record_operator(NameId name, int slot, uint64_t begin_ticks, uint64_t end_ticks,
                     const OperatorShapes& shapes, uint64_t flow_id) {
  int64_t words[kMaxShapeWords];
  const size_t n = pack_operator_shapes(shapes, words, kMaxShapeWords);
  record_operator_packed(name, slot, begin_ticks, end_ticks, words, n, flow_id);
}

uint64_t record_operator_launch(NameId name, int slot, uint64_t begin_ticks, uint64_t end_ticks,
                                uint64_t flow_id, uint64_t dependency_flow_id) {
  Profiler& p = profiler();
  ThreadBuffer* buffer = this_thread_buffer();
  const NameId category = p.operator_launch_category;
  // The push flow was started in the operator's category.
  const std::initializer_list<FlowFinish> finishes = {
      {flow_id, p.flow_name, operator_category_of(p, name)},
      {dependency_flow_id, p.dependency_name, p.dependency_name}};
  const uint32_t flows = count_flows(finishes);
  uint64_t launch_flow = 0;
  if (Record* r = buffer->reserve(flows + 2, DropKind::kOperator)) {
    r = write_flow_finishes(r, begin_ticks, slot, category, finishes);
    *r++ = Record{begin_ticks, end_ticks,
                  name,        category,
                  0,           RecordKind::kOperator,
                  0,           static_cast<uint16_t>(slot)};
    // The arrow to the device execution leaves from the launch's end, on the launch's row (a
    // dependency-start record is a flow start bound to a device row).
    launch_flow = buffer->next_flow_id();
    *r = Record{end_ticks,
                launch_flow,
                p.launch_name,
                p.launch_name,
                0,
                RecordKind::kDependencyStart,
                0,
                static_cast<uint16_t>(slot)};
    buffer->commit(flows + 2);
  }
  if (active(detail::kAggregateBit))
    buffer->stats().add_duration(category, name, end_ticks - begin_ticks);
  return launch_flow;
}

DeviceRow::DeviceRow(std::string name) : buffer_(register_device_row(std::move(name))) {}

DeviceRow::~DeviceRow() { buffer_->retired.store(true, std::memory_order_release); }

uint32_t DeviceRow::tid() const { return buffer_->tid(); }

void DeviceRow::record_operator(NameId name, int slot, uint64_t begin_ticks, uint64_t end_ticks,
                                const int64_t* words, size_t num_words, uint64_t launch_flow_id) {
  Profiler& p = profiler();
  append_operator(p, buffer_.get(), name, slot, begin_ticks, end_ticks, words, num_words,
                  {{launch_flow_id, p.launch_name, p.launch_name}});
}

uint64_t flow_start(NameId category, uint32_t mode_bits) {
  if (!active(mode_bits)) return 0;
  ThreadBuffer* buffer = this_thread_buffer();
  uint64_t id = buffer->next_flow_id();
  uint64_t t = now_ticks();
  Record* r = buffer->reserve(1, DropKind::kFlow);
  // A dropped start returns no id, so no finish is recorded for it: an arrow without its tail
  // would make the trace invalid.
  if (!r) return 0;
  *r = Record{t, id, profiler().flow_name, category, 0, RecordKind::kFlowStart, 0, 0};
  buffer->commit(1);
  return id;
}

namespace {
uint64_t dependency_flow_start_in(ThreadBuffer* buffer, int slot, uint64_t end_ticks) {
  Record* r = buffer->reserve(1, DropKind::kFlow);
  if (!r) return 0;  // as flow_start: no id for a dropped start, so no finish without its start
  const uint64_t id = buffer->next_flow_id();
  const NameId name = profiler().dependency_name;
  *r = Record{
      end_ticks, id, name, name, 0, RecordKind::kDependencyStart, 0, static_cast<uint16_t>(slot)};
  buffer->commit(1);
  return id;
}
}  // namespace

uint64_t dependency_flow_start(int slot, uint64_t end_ticks) {
  return dependency_flow_start_in(this_thread_buffer(), slot, end_ticks);
}

uint64_t DeviceRow::dependency_flow_start(int slot, uint64_t end_ticks) {
  return dependency_flow_start_in(buffer_.get(), slot, end_ticks);
}

namespace {
// "Memory: <slot>", interned on first use and then read without a lock.
NameId memory_counter_name(int slot) {
  MemorySlots& m = memory_slots();
  NameId name = m.counter_name[slot].load(std::memory_order_relaxed);
  if (name == 0) {
    name = intern("Memory: " + device_slot_name(slot));
    m.counter_name[slot].store(name, std::memory_order_relaxed);
  }
  return name;
}
}  // namespace

void memory_alloc(int slot, uint64_t bytes) {
  MemorySlots& m = memory_slots();
  NANOMX_CHECK(slot >= 0 && slot < device_slot_count())
      << "profiler: memory_alloc on device slot " << slot << ", expected 0.."
      << device_slot_count() - 1;
  uint64_t now = m.in_use[slot].fetch_add(bytes, std::memory_order_relaxed) + bytes;
  uint64_t peak = m.peak[slot].load(std::memory_order_relaxed);
  while (now > peak && !m.peak[slot].compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  if (!active(kMemory) || bytes == 0) return;
  record_counter(DropKind::kMemory, profiler().storage_category, memory_counter_name(slot), now,
                 now_ticks());
}

void memory_free(int slot, uint64_t bytes) {
  MemorySlots& m = memory_slots();
  NANOMX_CHECK(slot >= 0 && slot < device_slot_count())
      << "profiler: memory_free on device slot " << slot << ", expected 0.."
      << device_slot_count() - 1;
  // Never below zero: a free of memory allocated before tracking began clamps to 0, as MXNet.
  uint64_t before = m.in_use[slot].load(std::memory_order_relaxed);
  uint64_t after;
  do {
    after = before > bytes ? before - bytes : 0;
  } while (!m.in_use[slot].compare_exchange_weak(before, after, std::memory_order_relaxed));
  if (!active(kMemory)) return;
  record_counter(DropKind::kMemory, profiler().storage_category, memory_counter_name(slot), after,
                 now_ticks());
}

uint64_t memory_in_use(int slot) {
  NANOMX_CHECK(slot >= 0 && slot < device_slot_count()) << "profiler: bad device slot " << slot;
  return memory_slots().in_use[slot].load(std::memory_order_relaxed);
}
uint64_t memory_peak(int slot) {
  NANOMX_CHECK(slot >= 0 && slot < device_slot_count()) << "profiler: bad device slot " << slot;
  return memory_slots().peak[slot].load(std::memory_order_relaxed);
}

// Shared by the user objects (user_objects.cc).
namespace internal {
void record_duration(RecordKind kind, NameId category, NameId name, uint32_t payload,
                     uint64_t begin, uint64_t end) {
  ThreadBuffer* buffer = this_thread_buffer();
  if (Record* r = buffer->reserve(1, DropKind::kUser)) {
    *r = Record{begin, end, name, category, payload, kind, 0, 0};
    buffer->commit(1);
  }
  if (active(detail::kAggregateBit)) buffer->stats().add_duration(category, name, end - begin);
}
void record_user_counter(NameId category, NameId name, uint64_t value) {
  record_counter(DropKind::kUser, category, name, value, now_ticks());
}
void record_marker(NameId category, NameId name, MarkerScope scope) {
  ThreadBuffer* buffer = this_thread_buffer();
  uint64_t t = now_ticks();
  if (Record* r = buffer->reserve(1, DropKind::kUser)) {
    *r = Record{t, 0, name, category, static_cast<uint32_t>(scope), RecordKind::kMarker, 0, 0};
    buffer->commit(1);
  }
  // MXNet creates the category entry for markers but never prints a row for them.
  if (active(detail::kAggregateBit)) buffer->stats().add_other(category, name);
}
NameId event_category() { return profiler().event_category; }
}  // namespace internal

void ScopedEvent::finish() {
  uint64_t end = now_ticks();
  if (!active(detail::kUserBit)) return;
  internal::record_duration(RecordKind::kEvent, internal::event_category(), name_, 0, begin_, end);
}

}  // namespace nanomx::profiler
