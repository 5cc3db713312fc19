// nanomx's profiler: the public C++ interface.
//
// What it records: operators run by the engine (on a device row such as cpu/0), C API calls,
// memory per device, and user-annotated regions (Domain / Task / Frame / Event / Counter /
// Marker, the model of MXNet's profiler and of Intel ITT / NVTX). What it writes: a Chrome
// Tracing JSON file (valid after every flush) and MXNet's aggregate table (`dumps`).
//
// Cost model: a disabled site is one relaxed atomic load and a branch. A recorded event is one
// 32-byte record appended to a thread-local buffer: no lock, no allocation, no formatting.
// Everything expensive happens in the collector (dump or the continuous-dump thread).
//
// This header is the whole user API. The hooks the runtime's own layers record through
// (operators, C API calls, memory, device rows, the gate) are internal: src/profiler/hooks.h.
//
// Quick start for C++ code:
//   nanomx::profiler::set_config({{"profile_all", "true"}, {"filename", "trace.json"}});
//   nanomx::profiler::set_state(nanomx::profiler::State::kRunning);
//   { NANOMX_PROFILE_SCOPE("load batch"); ... }
//   nanomx::profiler::set_state(nanomx::profiler::State::kStopped);
//   nanomx::profiler::dump(true);
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The C++ API: exported from libnanomx.so (nanomx/export.h).
#pragma GCC visibility push(default)

namespace nanomx::profiler {

// ------------------------------------------------------------------------------------------
// Configuration and state (MXNet's set_config / set_state / pause / dump / dumps).

// Mode bits, as MXNet's ProfilerMode.
enum ModeBits : uint32_t {
  kSymbolic = 1,    // operators pushed by the symbolic executor
  kImperative = 2,  // operators pushed imperatively
  kApi = 4,         // C API calls
  kMemory = 8,      // allocations and frees per device
  kAllModes = 15,
};
constexpr uint32_t kDefaultMode = kSymbolic | kApi | kMemory;  // 13, as MXNet

enum class State { kStopped = 0, kRunning = 1 };
enum class ProfileProcess { kWorker = 0, kServer = 1 };
enum class StatsFormat { kTable = 0, kJson = 1 };
enum class SortBy { kTotal = 0, kAvg = 1, kMin = 2, kMax = 3, kCount = 4 };

// How a duration (operator, Event) is written to the trace: as MXNet does, a `B` and an `E`
// event; or as one `X` (complete) event, about half the bytes.
enum class DurationEvents { kBeginEnd, kComplete };

// A parsed configuration. `parse_config` validates everything before `set_config` changes
// anything, so a bad call leaves the profiler exactly as it was.
struct Config {
  uint32_t mode = kDefaultMode;
  std::string filename = "profile.json";
  bool continuous_dump = true;
  double dump_period_seconds = 1.0;
  bool aggregate_stats = false;
  ProfileProcess profile_process = ProfileProcess::kWorker;
  std::string gpu_memory_profile_filename_prefix = "gpu_memory_profile";
  // nanomx-only: upper bound on the memory of all event buffers together (0 = unbounded, only
  // through apply_config; the max_buffer_mb key accepts 1 MiB to physical memory). Events that
  // do not fit are dropped and counted per file and per kind in the trace. The default, 256 MiB,
  // holds more than one default dump period (1 s) of the heaviest load measured (~155 MB/s of
  // records: profile_all, busy threads), so the default settings do not drop, while a run
  // without a dump stays bounded (docs/profiler.md#memory-bound).
  static constexpr uint64_t kDefaultMaxBufferBytes = uint64_t{256} << 20;
  uint64_t max_buffer_bytes = kDefaultMaxBufferBytes;
  DurationEvents duration_events = DurationEvents::kBeginEnd;
  // nanomx-only: sync the trace to the disk at every flush (fdatasync of the file, fsync of its
  // directory). Off by default: a killed process never loses a committed flush either way (the
  // page cache outlives it); only a power loss or a kernel crash needs this
  // (docs/profiler.md#crash-safety).
  bool fsync = false;
  // nanomx-only: rotating files (docs/profiler.md#rotating-files). When a trace file reaches
  // max_file_bytes (0 = never) it is finished and recording goes on in `<stem>.1.json`,
  // `<stem>.2.json`, ...; max_files > 0 keeps only the last max_files files of the series.
  uint64_t max_file_bytes = 0;
  uint32_t max_files = 0;
  // nanomx-only: a step schedule as torch.profiler.schedule (docs/profiler.md#step-schedules):
  // after skip_first steps, cycles of `wait` steps off, `warmup` steps recorded and discarded
  // and `active` steps kept, each cycle's active steps in one file `<stem>.step<N>.json`;
  // repeat = 0 cycles until stopped. No schedule while active is 0.
  struct Schedule {
    uint32_t wait = 0, warmup = 0, active = 0, repeat = 0, skip_first = 0;
    bool enabled() const { return active > 0; }
  };
  Schedule schedule;
};

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// Parses MXNet's string key/value form. Throws nanomx::Error naming the key, the bad value and
// the valid choices.
Config parse_config(const KeyValues& key_values);
// The keys parse_config accepts, in the order they are documented.
const std::vector<std::string>& config_keys();

// Worker-side configuration (profile_process=worker): replaces mode and filename, deletes the
// target file (as MXNet), starts or stops the continuous-dump thread, creates or drops the
// aggregate table. Does not change the running state. apply_config first checks that the
// filename can be created (throws with the path and the system's reason otherwise, changing
// nothing; the check leaves no file behind).
void set_config(const KeyValues& key_values);
void apply_config(const Config& config);

// kRunning: enables output and clears a pause. kStopped: sets the pause flag (so later
// user-object records are dropped, as MXNet); output stays enabled so a dump still works.
void set_state(State state);
void pause();
void resume();

// Writes pending records to the configured file. Throws if output was never enabled (no run
// since the last finishing dump). `finished` writes the last flush and closes the file.
// Without continuous dump every dump finishes the file (as MXNet).
void dump(bool finished);

// The aggregate table (MXNet's layout byte for byte) or its JSON form; "" when aggregate
// stats are off. Never touches the trace file. `reset` clears the table after building the text.
std::string dumps(bool reset = false, StatsFormat format = StatsFormat::kTable,
                  SortBy sort_by = SortBy::kTotal, bool ascending = false);

// Ends the current step and begins the next (torch.profiler's step()): call it once per
// training step. Step 0 begins at set_state(kRunning); each step is a `ProfilerStep#N` span on
// the calling thread while recording. With a schedule this also moves through its phases: a
// call that ends the last active step of a window finishes that window's file, runs the
// on_trace_ready callback with its path (outside the profiler's lock) and returns the path;
// otherwise returns "". Does nothing (returns "") while the profiler is stopped.
std::string step();
// The step in progress (0 before the first run).
uint64_t current_step();
// Called with the path of each file a schedule window finished through step() (nullptr: none).
// The callback may call any profiler function except step().
void set_on_trace_ready(std::function<void(const std::string& path)> callback);

uint32_t mode();
State state();
bool paused();
// A copy of the configuration in effect, taken under the profiler's lock (a reference would
// let the caller read it while set_config changes it).
Config current_config();
// Events dropped because the buffer bound was reached, since the process started (the trace's
// otherData counts them per file).
uint64_t dropped_events();

// The process-global profiler scope (MXSetProfilerScope); default "<unk>:".
void set_scope(std::string_view scope);
std::string scope();

// ------------------------------------------------------------------------------------------
// Names: every string the hot path needs is interned once, to a small stable id.

using NameId = uint32_t;
NameId intern(std::string_view name);
std::string name_of(NameId id);

// Names the calling thread in the trace (`thread_name` metadata). Threads that never call this
// are named "thread <n>"; the first thread that records is "main" when it is the main thread.
void set_thread_name(std::string_view name);

// ------------------------------------------------------------------------------------------
// Memory per device row. `slot` is a device's row in the trace: Context::profiler_slot()
// (nanomx/context.h) gives it for a context; cpu/0 is slot 0.

// Bytes in use now and at most since the process started (tracked even while not profiling).
uint64_t memory_in_use(int slot);
uint64_t memory_peak(int slot);

// ------------------------------------------------------------------------------------------
// User objects (MXNet's Domain / Task / Frame / Event / Counter / Marker). Recording is gated
// only by the pause flag, as in MXNet: objects record before the first run, and not after stop.

enum class MarkerScope { kGlobal, kProcess, kThread, kTask, kMarker };
// "global", "process", "thread", "task", "marker"; throws listing the valid values.
MarkerScope parse_marker_scope(std::string_view text);

class Domain {
 public:
  // Throws on an empty name.
  explicit Domain(std::string_view name);
  const std::string& name() const { return name_; }
  NameId id() const { return id_; }

 private:
  std::string name_;
  NameId id_;
};

// A duration: start() stores the time, stop() records [start, now] on the calling thread.
// stop() without a start() throws (MXNet would record garbage).
class Duration {
 public:
  void start();
  void stop();
  bool started() const { return start_ticks_ != 0; }
  NameId name_id() const { return name_; }
  std::string name() const { return name_of(name_); }

 protected:
  enum class Kind : uint8_t { kTask, kFrame, kEvent };
  Duration(Kind kind, NameId name, NameId category);

 private:
  Kind kind_;
  NameId name_;
  NameId category_;
  uint32_t instance_;  // id of a frame's async slice
  uint64_t start_ticks_ = 0;
};

class Task : public Duration {  // `b`/`e`, category = domain name
 public:
  Task(const Domain& domain, std::string_view name);
};
class Frame : public Duration {  // async slice, category = "<domain>,frame"
 public:
  Frame(const Domain& domain, std::string_view name);
};
class Event : public Duration {  // `B`/`E`, category = "event"
 public:
  explicit Event(std::string_view name);
};

// A 64-bit unsigned counter; each change records a `C` event. Going below zero wraps, as MXNet.
class Counter {
 public:
  Counter(const Domain& domain, std::string_view name);
  void set_value(uint64_t value);
  void increment(int64_t delta = 1);
  void decrement(int64_t delta = 1) { increment(-delta); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }
  NameId name_id() const { return name_; }

 private:
  void emit(uint64_t value);
  NameId name_;
  NameId category_;
  std::atomic<uint64_t> value_{0};
};

class Marker {
 public:
  Marker(const Domain& domain, std::string_view name);
  void mark(MarkerScope scope = MarkerScope::kProcess);

 private:
  NameId name_;
  NameId category_;
};

// ------------------------------------------------------------------------------------------
// Scoped annotation for C++ code: an Event-kind duration (category "event") that costs one
// load and a branch when the profiler is paused.

namespace detail {
// The profiler's gate word; only its user-object bit is read here (set while not paused), so a
// disabled scope stays inline. The other bits and their readers are internal.
extern std::atomic<uint32_t> gate;
constexpr uint32_t kUserBit = 16;
uint64_t scope_begin_ticks();  // now, on the profiler's clock
}  // namespace detail

class ScopedEvent {
 public:
  explicit ScopedEvent(NameId name)
      : name_(name),
        begin_((detail::gate.load(std::memory_order_relaxed) & detail::kUserBit) != 0
                   ? detail::scope_begin_ticks()
                   : 0) {}
  ~ScopedEvent() {
    if (begin_ != 0) finish();
  }
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;

 private:
  void finish();
  NameId name_;
  uint64_t begin_;
};

}  // namespace nanomx::profiler

#define NANOMX_PROFILE_CONCAT_INNER(a, b) a##b
#define NANOMX_PROFILE_CONCAT(a, b) NANOMX_PROFILE_CONCAT_INNER(a, b)
// NANOMX_PROFILE_SCOPE("name"): records the enclosing block as an event; the name is interned
// once per call site.
#define NANOMX_PROFILE_SCOPE(name_literal)                                                      \
  static const ::nanomx::profiler::NameId NANOMX_PROFILE_CONCAT(nanomx_scope_name_, __LINE__) = \
      ::nanomx::profiler::intern(name_literal);                                                 \
  ::nanomx::profiler::ScopedEvent NANOMX_PROFILE_CONCAT(                                        \
      nanomx_scope_, __LINE__)(NANOMX_PROFILE_CONCAT(nanomx_scope_name_, __LINE__))

#pragma GCC visibility pop
