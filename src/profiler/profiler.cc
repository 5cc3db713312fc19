// The profiler's state machine (config, run/stop, pause, dump), the collector that moves
// records from thread buffers into the trace file, and the hooks other layers call.
#include "nanomx/profiler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <thread>

#include "nanomx/error.h"
#include "profiler/aggregate_stats.h"
#include "profiler/clock.h"
#include "profiler/hooks.h"
#include "profiler/json_string.h"
#include "profiler/name_table.h"
#include "profiler/recording.h"
#include "profiler/thread_buffer.h"
#include "profiler/trace_writer.h"

namespace nanomx::profiler {

namespace detail {
std::atomic<uint32_t> gate{kUserBit};  // not paused, not running: user objects record (Q14)
uint64_t scope_begin_ticks() { return now_ticks(); }
}  // namespace detail

namespace {

constexpr int kMaxGpuSlots = kMaxGpuRows;
constexpr size_t kPrefaultChunks = 32;  // 4 MiB of records ready when profiling starts
// A long drain commits every piece of this size, so the file grows while it runs.
constexpr size_t kFlushPieceBytes = 2u << 20;
// Per thread and periodic flush: 256 Ki records (8 MiB of records, about 25 MB of JSON).
constexpr size_t kFlushBudgetRecords = 256u << 10;

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

struct Profiler {
  std::mutex mutex;  // config, state, collector; never taken on the hot path
  std::condition_variable wake_dump_thread;
  Config config;
  State state = State::kStopped;
  bool paused = false;
  bool output_enabled = false;
  bool exiting = false;
  std::thread dump_thread;
  uint64_t failed_flushes = 0;      // continuous flushes failed in a row (reported once)
  uint64_t commits_at_failure = 0;  // the writer's commit count at the last failure
  TraceWriter writer;
  TickConverter clock;
  std::string scope = "<unk>:";
  std::vector<ThreadStats::Snapshot> retired_stats;  // of threads that exited
  std::vector<ThreadStats::Snapshot> stats_scratch;  // dumps()'s working copy
  DropCounts retired_dropped{};                      // of threads that exited
  // The process totals when the current file was configured or the previous one finished: the
  // trace counts only the drops since (a new file does not inherit earlier files' drops).
  DropCounts file_dropped_base{};
  // When the next fresh file's recording began (its ts = 0): the last set_config, or the
  // set_state(run) that followed a finished file.
  uint64_t recording_began_ticks = 0;
  bool file_finished_since_config = false;

  NameId api_category = intern("MXNET_C_API");
  NameId api_calls_name = intern("MXNet C API Calls");
  NameId api_concurrency_name = intern("MXNet C API Concurrency");
  NameId operator_category = intern("operator");
  NameId custom_operator_category = intern("Custom Operator");
  NameId event_category = intern("event");
  NameId storage_category = intern("Device Storage");
  NameId flow_name = intern("flow");
  NameId dependency_name = intern("dependency");  // name and category of dependency flows
  NameId launch_name = intern("launch");          // name and category of launch -> device flows
  NameId operator_launch_category = intern("operator launch");
  NameId step_category = intern("ProfilerStep");

  // ---- Steps and the step schedule (docs/profiler.md#step-schedules). All under `mutex`.
  enum class StepAction { kNone, kWarmup, kRecord, kRecordAndSave };  // torch's ProfilerAction
  bool stepping = false;     // set_state(kRunning) began a step; false again after a stop
  uint64_t step_number = 0;  // the step in progress (the next one while not stepping)
  uint64_t step_begin = 0;   // its start, in ticks
  StepAction action = StepAction::kRecord;  // of the step in progress; kRecord without a schedule
  bool window_open = false;                 // a schedule's active window goes to the current file
  uint64_t window_first = 0, window_last = 0;
  std::string last_window_file;  // the base of the window finished last (a stop may resume it)
  std::function<void(const std::string&)> on_trace_ready;

  // ---- The file series (docs/profiler.md#rotating-files): the trace goes to
  // series_path(file_base, file_index); file_base is the configured file or a window's file.
  std::string file_base = config.filename;
  uint64_t file_index = 0;

  bool schedule_on() const { return stepping && config.schedule.enabled(); }
  // With a schedule configured records reach a file only inside an active window (never the
  // configured file itself, also while stopped).
  bool can_write() const { return !config.schedule.enabled() || window_open; }

  static std::string stem_of(const std::string& path) {
    constexpr std::string_view kJson = ".json";
    if (path.size() > kJson.size() &&
        path.compare(path.size() - kJson.size(), kJson.size(), kJson.data(), kJson.size()) == 0)
      return path.substr(0, path.size() - kJson.size());
    return path;
  }
  static std::string series_path(const std::string& base, uint64_t index) {
    return index == 0 ? base : stem_of(base) + "." + std::to_string(index) + ".json";
  }
  static std::string base_name(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  }
  std::string current_path() const { return series_path(file_base, file_index); }

  // torch.profiler.schedule's action for step n.
  StepAction schedule_action(uint64_t n) const {
    const Config::Schedule& s = config.schedule;
    if (n < s.skip_first) return StepAction::kNone;
    n -= s.skip_first;
    const uint64_t cycle = uint64_t{s.wait} + s.warmup + s.active;
    if (s.repeat > 0 && n / cycle >= s.repeat) return StepAction::kNone;
    const uint64_t m = n % cycle;
    if (m < s.wait) return StepAction::kNone;
    if (m < uint64_t{s.wait} + s.warmup) return StepAction::kWarmup;
    return m + 1 < cycle ? StepAction::kRecord : StepAction::kRecordAndSave;
  }

  // Begins step n: its phase, a window's file when an active window starts, the gate.
  void begin_step(uint64_t n) {
    step_number = n;
    step_begin = now_ticks();
    action = schedule_on() ? schedule_action(n) : StepAction::kRecord;
    if (schedule_on() && !window_open &&
        (action == StepAction::kRecord || action == StepAction::kRecordAndSave))
      open_window();
    update_gate();
  }

  // An active window starts: what warmup recorded (and what ran on after the previous window
  // was finished) is discarded, the aggregate table starts empty, and the window's records go
  // to `<stem>.step<last active step>.json`. A window that a stop cut short and a run resumes
  // continues its file (and its table).
  void open_window() {
    const Config::Schedule& s = config.schedule;
    const uint64_t cycle = uint64_t{s.wait} + s.warmup + s.active;
    const uint64_t at = (step_number - s.skip_first) % cycle;
    window_last = step_number + (cycle - 1 - at);
    const std::string path =
        stem_of(config.filename) + ".step" + std::to_string(window_last) + ".json";
    const bool resumed = path == last_window_file;
    // (Closing a closed writer would make it forget the file finished last, which a resumed
    // window continues.)
    if (writer.has_file()) writer.close();
    discard_pending();
    if (!resumed) {
      window_first = step_number;
      if (config.aggregate_stats) {
        ThreadStats::reset_all();
        retired_stats.clear();
      }
      writer.forget_finished_file();
      recording_began_ticks = step_begin;  // the window's file counts its ts from its first step
      file_base = path;
      file_index = 0;
      ::unlink(path.c_str());  // a file of an earlier run must not pass for this window's
    }
    start_file_drop_count();
    window_open = true;
  }

  // Ends the active window at the step in progress: its file is written and finished. Returns
  // the file's path (the last of its series).
  std::string finish_window() {
    window_last = step_number;
    last_window_file = file_base;
    struct Close {  // the window ends even when the last write fails
      Profiler* p;
      ~Close() {
        p->writer.close();
        p->start_file_drop_count();
        p->window_open = false;
      }
    } close{this};
    write_pending();
    return writer.path();
  }

  // Drains every buffer without writing (between two files).
  void discard_pending() {
    std::vector<std::shared_ptr<ThreadBuffer>> buffers;
    {
      ThreadRegistry& registry = thread_registry();
      std::lock_guard<std::mutex> lock(registry.mutex);
      buffers = registry.buffers;
    }
    for (const auto& buffer : buffers)
      buffer->drain([&](const Record& r, const Record*, uint32_t) { writer.discard(r); });
  }

  // The file reached max_file_bytes: finish it and go on in the next file of the series.
  void rotate() {
    writer.write_held_finishes(clock);
    writer.commit(other_data());
    writer.close();
    start_file_drop_count();
    ++file_index;
    if (config.max_files > 0 && file_index >= config.max_files)
      ::unlink(series_path(file_base, file_index - config.max_files).c_str());
    writer.forget_finished_file();
    // The same ts = 0 as the file before: a series is stitched by concatenating its events.
    const uint64_t zero_ns = writer.zero_ns();
    writer.start_file(current_path(), config.duration_events, config.fsync, zero_ns,
                      writer.unit_ns());
  }

  void update_gate() {
    uint32_t g = 0;
    // A schedule's wait steps (and the steps after its last cycle) record nothing.
    const bool off_step = schedule_on() && action == StepAction::kNone;
    if (state == State::kRunning && !paused && !off_step)
      g |= (config.mode & kAllModes) | detail::kRunningBit;
    if (!paused && !off_step) g |= detail::kUserBit;
    if (config.aggregate_stats) g |= detail::kAggregateBit;
    detail::gate.store(g, std::memory_order_relaxed);
  }

  // The fields of otherData that never change in a process: producer, clock, host and boot id (read
  // once, not at every flush). Never destroyed: the final dump at exit runs after the destructors
  // of statics made later than the exit hook, and a static string made at the first flush would be
  // freed by then.
  static const std::string& identity_fields() {
    static const std::string* fields = new std::string([] {
      std::string s =
          "\"producer\":\"nanomx 0.1.0\",\"clock\":\"" + std::string(tick_source()) + "\"";
      char host[256] = {0};
      gethostname(host, sizeof host - 1);
      std::string boot_id;
      std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
      s += ",\"host\":";
      append_json_string(&s, host);
      s += ",\"boot_id\":";
      append_json_string(&s, boot_id);
      return s;
    }());
    return *fields;
  }

  // Events dropped by every thread since the process started, exited ones included, per kind.
  // Caller holds `mutex`.
  DropCounts total_dropped() {
    DropCounts dropped = retired_dropped;
    ThreadRegistry& registry = thread_registry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    for (const auto& b : registry.buffers) b->add_dropped(&dropped);
    return dropped;
  }

  // The next file's drop counts start from here. Caller holds `mutex`.
  void start_file_drop_count() { file_dropped_base = total_dropped(); }

  std::string other_data() {
    DropCounts dropped = total_dropped();
    uint64_t file_total = 0;
    std::string by_kind;
    for (size_t k = 0; k < kDropKinds; ++k) {
      uint64_t n = dropped[k] - file_dropped_base[k];
      file_total += n;
      by_kind += k == 0 ? "\"" : ",\"";
      by_kind.append(drop_kind_name(static_cast<DropKind>(k))).append("\":");
      by_kind += std::to_string(n);
    }
    std::string s = identity_fields();
    // The anchors of this file's ts = 0 (its zero is an offset from the process's time zero).
    const TimeZero& zero = time_zero();
    s += ",\"time_zero_unix_ns\":" + std::to_string(zero.unix_ns + writer.zero_ns());
    s += ",\"time_zero_monotonic_ns\":" + std::to_string(zero.monotonic_ns + writer.zero_ns());
    // What ts and dur are rounded to, and why: the clock's measured resolution.
    char resolution[32];
    snprintf(resolution, sizeof resolution, "%.3f", clock.resolution_ns());
    s += ",\"clock_resolution_ns\":" + std::string(resolution);
    s += ",\"ts_unit_ns\":" + std::to_string(writer.unit_ns());
    s += ",\"os_pid\":" + std::to_string(getpid());  // per flush: a forked child has its own
    s += ",\"dropped_events\":" + std::to_string(file_total);
    s += ",\"dropped_events_by_kind\":{" + by_kind + "}";
    // Finishes whose start went to an earlier file (in flight when that file was finished).
    s += ",\"flow_finishes_omitted\":" + std::to_string(writer.omitted_flow_finishes());
    if (config.max_file_bytes > 0) {
      s += ",\"rotation\":{\"series\":";
      append_json_string(&s, base_name(series_path(file_base, 0)));
      s += ",\"index\":" + std::to_string(file_index) + ",\"previous\":";
      if (file_index == 0) {
        s += "null";
      } else {
        append_json_string(&s, base_name(series_path(file_base, file_index - 1)));
      }
      s += "}";
    }
    if (window_open) {
      s += ",\"schedule\":{\"first_step\":" + std::to_string(window_first) +
           ",\"last_step\":" + std::to_string(window_last) + "}";
    }
    s += ",\"memory_peak_bytes\":{";
    bool first = true;
    for (int slot = 0; slot < device_slot_count(); ++slot) {
      uint64_t peak = memory_slots().peak[slot].load(std::memory_order_relaxed);
      if (peak == 0) continue;
      if (!first) s += ",";
      first = false;
      s.append("\"").append(device_slot_name(slot)).append("\":").append(std::to_string(peak));
    }
    s += "}";
    return s;
  }

  // Moves every committed record into the trace file and commits it (the file changes only
  // here, as a whole). Caller holds `mutex`.
  //
  // A periodic flush drains at most kFlushBudgetRecords per thread: threads that record as fast
  // as the collector writes would otherwise hold it (and set_state, dump, config) forever; what
  // is left waits for the next period, and the buffer bound drops what does not fit. The last
  // flush of a file drains everything.
  void write_pending(bool everything = true) {
    clock.anchor_now();
    if (!writer.has_file()) {
      writer.start_file(current_path(), config.duration_events, config.fsync,
                        clock.to_ns(std::min(recording_began_ticks, earliest_pending_begin())),
                        timestamp_unit_ns(clock.resolution_ns()));
    }
    // Text that a failed write left goes first. While it cannot be written nothing more is
    // drained: the records wait in the thread buffers, bounded by max_buffer_mb, instead of
    // piling up here.
    if (writer.pending_bytes() > 0) writer.write_pending();
    const size_t budget = everything ? SIZE_MAX : kFlushBudgetRecords;
    drain_all(budget);
    // A flow finish drained before its start (the worker's buffer came before the pusher's)
    // waits in the writer; one more pass picks up the starts recorded meanwhile.
    if (writer.held_flow_finishes() > 0) drain_all(budget);
    writer.write_held_finishes(clock);
    writer.commit(other_data());
    forget_exited_threads();
  }

  void drain_all(size_t budget) {
    std::vector<std::shared_ptr<ThreadBuffer>> buffers;
    {
      ThreadRegistry& registry = thread_registry();
      std::lock_guard<std::mutex> lock(registry.mutex);
      buffers = registry.buffers;
      writer.thread_names = registry.thread_names;
    }
    for (const auto& buffer : buffers) {
      uint32_t tid = buffer->tid();
      buffer->drain(
          [&](const Record& r, const Record* following, uint32_t extra) {
            // Before formatting the record: a write that throws leaves it in its buffer. Each
            // piece is committed, so the file grows during a long drain too.
            if (writer.pending_bytes() > kFlushPieceBytes) writer.commit(other_data());
            if (config.max_file_bytes != 0 && writer.file_bytes() >= config.max_file_bytes &&
                writer.records_in_file() > 0)
              rotate();
            writer.add(r, following, extra, tid, clock);
          },
          budget);
    }
  }

  // The earliest begin of every record still buffered (a record made before the recording
  // began, e.g. a user object before set_config, belongs in the next file too).
  uint64_t earliest_pending_begin() {
    ThreadRegistry& registry = thread_registry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    uint64_t earliest = UINT64_MAX;
    for (const auto& b : registry.buffers)
      earliest = std::min(earliest, b->earliest_pending_begin());
    return earliest;
  }

  // Threads that exited and whose records are all written: keep their statistics and drop
  // their buffers.
  void forget_exited_threads() {
    ThreadRegistry& registry = thread_registry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto& list = registry.buffers;
    for (size_t i = 0; i < list.size();) {
      if (list[i]->retired.load(std::memory_order_acquire) && list[i]->fully_drained()) {
        list[i]->stats().snapshot(&retired_stats);
        list[i]->add_dropped(&retired_dropped);
        list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }

  void finish_output() {
    writer.close();
    start_file_drop_count();
    output_enabled = false;
    file_finished_since_config = true;
  }

  void dump_locked(bool finished) {
    if (!can_write()) return;  // a schedule between windows: nothing goes to any file
    bool last = finished || !config.continuous_dump;
    write_pending();
    if (!last) return;
    if (config.schedule.enabled()) {
      writer.close();  // the window's file; the schedule goes on (a later flush continues it)
    } else {
      finish_output();
    }
  }

  void ensure_dump_thread() {
    if (dump_thread.joinable()) return;
    dump_thread = std::thread([this] {
      set_thread_name("profiler dump");
      using Clock = std::chrono::steady_clock;
      std::unique_lock<std::mutex> lock(mutex);
      // The first flush comes one period after continuous dump starts (min below).
      Clock::time_point deadline = Clock::time_point::max();
      while (!exiting) {
        if (!config.continuous_dump) {
          wake_dump_thread.wait(lock);
          deadline = Clock::time_point::max();
          continue;
        }
        // parse_config keeps the period in [1 ms, 1 day]; apply_config takes any Config, and a
        // period wait_until cannot represent (inf, 1e300) would make it return at once, forever.
        double seconds = config.dump_period_seconds;
        if (!(seconds >= 0.001)) seconds = 0.001;
        if (seconds > 86400.0) seconds = 86400.0;
        const auto period =
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
        // Flushes start a period apart, however long each takes (a wake-up by a config or
        // state change keeps the deadline; a shorter new period takes effect at once).
        deadline = std::min(deadline, Clock::now() + period);
        if (wake_dump_thread.wait_until(lock, deadline) == std::cv_status::no_timeout) continue;
        const auto now = Clock::now();
        deadline += period;
        // Behind (a flush took longer than a period): the next one starts soon, leaving the
        // lock free for a moment so that set_state, dump and config calls get their turn.
        if (deadline < now + period / 10) deadline = now + period / 10;
        if (exiting || !config.continuous_dump || !output_enabled || !can_write()) continue;
        try {
          write_pending(/*everything=*/false);
          report_recovery();
        } catch (const std::exception& e) {
          // A long flush commits piece by piece: a failure after some pieces went in is a new
          // failure after a recovery, not the same one.
          if (writer.commits() != commits_at_failure) report_recovery();
          commits_at_failure = writer.commits();
          // Once per run of failures (a full disk fails every period): the file keeps its last
          // committed content and each period retries.
          if (failed_flushes++ == 0) {
            std::fprintf(stderr,
                         "nanomx profiler: continuous dump failed: %s (the trace keeps its last "
                         "complete flush; retrying every period, reported again on recovery)\n",
                         e.what());
          }
        }
      }
    });
  }

  void report_recovery() {
    if (failed_flushes > 0) {
      std::fprintf(stderr,
                   "nanomx profiler: continuous dump works again after %llu failed flush(es)\n",
                   static_cast<unsigned long long>(failed_flushes));
    }
    failed_flushes = 0;
  }

  void at_exit() {
    std::thread thread;
    {
      std::lock_guard<std::mutex> lock(mutex);
      exiting = true;
      wake_dump_thread.notify_all();
      thread = std::move(dump_thread);
    }
    if (thread.joinable()) thread.join();
    std::lock_guard<std::mutex> lock(mutex);
    if (!output_enabled) return;
    try {
      dump_locked(true);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "nanomx profiler: final dump at exit failed: %s\n", e.what());
    }
  }
};

Profiler& profiler() {
  static Profiler* instance = new Profiler();  // never destroyed; the exit hook finishes it
  return *instance;
}

}  // namespace

// Without it a run that never dumps keeps every exited thread's ThreadBuffer (about 3.5 KiB
// each with its statistics table): with threads replaced ~200 times a second, RSS grew by
// 0.7 MiB/s past the buffer bound (docs/profiler.md#memory-bound). A busy collector already
// does this at its next flush, hence try_lock: a new thread never waits for a flush.
void forget_exited_threads_if_idle() {
  Profiler& p = profiler();
  std::unique_lock<std::mutex> lock(p.mutex, std::try_to_lock);
  if (lock.owns_lock()) p.forget_exited_threads();
}

namespace {

const char* env_setting(const char* nanomx_name, const char* mxnet_name) {
  const char* v = std::getenv(nanomx_name);
  return v ? v : std::getenv(mxnet_name);
}

// Runs after the clock's constructor (priority 101) and before user code: reads the
// environment, and registers the exit hook first so that it runs after every later-registered
// exit handler and static destructor (the engine is joined before the final dump).
__attribute__((constructor(102))) void init_profiler_from_environment() {
  Profiler& p = profiler();
  std::atexit([] { profiler().at_exit(); });
  if (const char* mode = env_setting("NANOMX_PROFILER_MODE", "MXNET_PROFILER_MODE")) {
    char* end = nullptr;
    long m = std::strtol(mode, &end, 10);
    if (*mode != '\0' && *end == '\0' && m >= 0 && m <= 15) {
      p.config.mode = static_cast<uint32_t>(m);
    } else {
      std::fprintf(stderr,
                   "nanomx profiler: ignoring MXNET_PROFILER_MODE='%s' (expected an integer "
                   "0..15: 1 symbolic, 2 imperative, 4 api, 8 memory, summed)\n",
                   mode);
    }
  }
  if (const char* autostart = env_setting("NANOMX_PROFILER_AUTOSTART", "MXNET_PROFILER_AUTOSTART");
      autostart && std::atoi(autostart) != 0) {
    // As MXNet: running from the start, profile.json written at exit, no continuous dump, no
    // aggregate table.
    p.config.filename = "profile.json";
    p.config.continuous_dump = false;
    p.config.aggregate_stats = false;
    p.state = State::kRunning;
    p.output_enabled = true;
    p.stepping = true;
    p.begin_step(0);
    chunk_pool().prefault(kPrefaultChunks);
  }
  p.update_gate();
}

// Appends `count` records (already filled by `fill`) to this thread's buffer; drops when full.
template <typename Fill>
inline void append_record(DropKind kind, Fill&& fill) {
  ThreadBuffer* buffer = this_thread_buffer();
  Record* r = buffer->reserve(1, kind);
  if (!r) return;
  fill(*r);
  buffer->commit(1);
}

// The step in progress as a `ProfilerStep#N` span on the calling thread, ending at `end`.
void record_step(Profiler& p, uint64_t end) {
  append_record(DropKind::kUser, [&](Record& r) {
    r = Record{p.step_begin,
               end,
               p.step_category,
               p.step_category,
               static_cast<uint32_t>(p.step_number),
               RecordKind::kStep,
               0,
               0};
  });
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

// ---------------------------------------------------------------------------------------------
// Control

namespace {

// Refuses a trace path that cannot be created, at config time rather than at the first dump
// (which may be far later, in the dump thread, where the error only reaches stderr). Kept out
// of parse_config, which the config fuzzer calls and which must not touch the file system.
// Leaves no file behind: an existing file is only opened (apply_config deletes it next, as
// MXNet does), a missing one is created exclusively and removed at once.
void check_trace_path(const std::string& path) {
  auto refuse = [&path](int error) {
    NANOMX_THROW() << "Invalid Parameter value for filename: cannot create the trace file '" << path
                   << "': " << std::strerror(error);
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) refuse(EISDIR);
    // The file is deleted and created again: what matters is its directory.
    std::string dir = path;
    size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
    if (::access(dir.c_str(), W_OK | X_OK) != 0) refuse(errno);
    return;
  }
  if (errno != ENOENT) refuse(errno);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) refuse(errno);
  ::close(fd);
  ::unlink(path.c_str());
}

}  // namespace

void set_config(const KeyValues& key_values) { apply_config(parse_config(key_values)); }

void apply_config(const Config& config) {
  // Here rather than in set_config so that every way in (C API, Python, C++) is checked.
  check_trace_path(config.filename);
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  bool had_aggregate = p.config.aggregate_stats;
  p.config = config;
  // Steps count again from 0, and the trace goes to the configured file.
  p.window_open = false;
  p.last_window_file.clear();
  p.stepping = false;
  p.step_number = 0;
  p.action = Profiler::StepAction::kRecord;
  p.file_base = config.filename;
  p.file_index = 0;
  // As MXNet: the configured file is deleted at once, and the next write starts it afresh
  // (each file gets its own header and metadata, unlike MXNet).
  p.writer.close();
  p.writer.forget_finished_file();  // a new configuration starts its file afresh (as MXNet)
  p.start_file_drop_count();
  p.recording_began_ticks = now_ticks();
  p.file_finished_since_config = false;
  ::unlink(config.filename.c_str());
  chunk_pool().set_bound(config.max_buffer_bytes);
  chunk_pool().prefault(kPrefaultChunks);
  // The table keeps its contents while aggregation stays on; turning it on starts it empty.
  if (config.aggregate_stats != had_aggregate) ThreadStats::reset_all();
  if (p.state == State::kRunning) {
    p.stepping = true;
    p.begin_step(0);
  }
  p.update_gate();
  if (config.continuous_dump) {
    p.ensure_dump_thread();
    if (p.output_enabled && p.can_write()) p.write_pending();
  }
  p.wake_dump_thread.notify_all();
}

void set_state(State state) {
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (state == State::kRunning) {
    chunk_pool().prefault(kPrefaultChunks);
    if (p.file_finished_since_config) {  // a fresh recording after a finished file
      p.recording_began_ticks = now_ticks();
      p.file_finished_since_config = false;
    }
    p.output_enabled = true;
    p.paused = false;  // MXNet: run clears a pause
    p.state = state;
    if (!p.stepping) {  // steps count on from where a stop left them
      p.stepping = true;
      p.begin_step(p.step_number);
    }
    p.update_gate();
    return;
  }
  // A stop ends the step in progress; a schedule's window is finished with it, its last step
  // cut at the stop (no on_trace_ready: that runs for the windows step() completes). Without a
  // schedule only step() records steps: a run that never calls it has none.
  const bool finish = p.stepping && p.window_open;
  if (finish && p.state == State::kRunning && !p.paused) record_step(p, now_ticks());
  p.paused = true;  // MXNet: stop sets the pause flag
  p.state = state;
  struct Stop {  // the schedule stops even when writing the window fails
    Profiler& p;
    ~Stop() {
      if (!p.stepping) return;
      p.stepping = false;
      ++p.step_number;
      p.action = Profiler::StepAction::kRecord;
      p.update_gate();
    }
  } stop{p};
  p.update_gate();
  if (finish) p.finish_window();
}

std::string step() {
  Profiler& p = profiler();
  std::string finished;
  std::function<void(const std::string&)> callback;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    if (!p.stepping) return "";
    if (p.action != Profiler::StepAction::kNone && p.state == State::kRunning && !p.paused)
      record_step(p, now_ticks());
    struct Next {  // the next step begins even when writing the window fails
      Profiler& p;
      ~Next() { p.begin_step(p.step_number + 1); }
    } next{p};
    if (p.window_open && p.action == Profiler::StepAction::kRecordAndSave) {
      finished = p.finish_window();
      callback = p.on_trace_ready;
    }
  }
  if (callback) callback(finished);
  return finished;
}

uint64_t current_step() {
  std::lock_guard<std::mutex> lock(profiler().mutex);
  return profiler().step_number;
}

void set_on_trace_ready(std::function<void(const std::string& path)> callback) {
  std::lock_guard<std::mutex> lock(profiler().mutex);
  profiler().on_trace_ready = std::move(callback);
}

void pause() {
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.paused = true;
  p.update_gate();
}

void resume() {
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.paused = false;
  p.update_gate();
}

void dump(bool finished) {
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  NANOMX_CHECK(p.output_enabled) << "Profiler hasn't been run. Config and start profiler first";
  p.dump_locked(finished);
}

std::string dumps(bool reset, StatsFormat format, SortBy sort_by, bool ascending) {
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (!p.config.aggregate_stats) return "";
  // Reused between calls: fresh pages cost a fault each (~10 µs on VMs) and this is 72 bytes
  // per (thread, name).
  std::vector<ThreadStats::Snapshot>& entries = p.stats_scratch;
  entries.assign(p.retired_stats.begin(), p.retired_stats.end());
  {
    ThreadRegistry& registry = thread_registry();
    std::lock_guard<std::mutex> registry_lock(registry.mutex);
    for (const auto& b : registry.buffers) b->stats().snapshot(&entries);
  }
  p.clock.anchor_now();
  double ns_per_tick = static_cast<double>(p.clock.to_ns(now_ticks())) /
                       static_cast<double>(now_ticks() - time_zero().ticks);
  if (!detail::use_tsc) ns_per_tick = 1.0;
  std::string text = format_aggregate(entries, ns_per_tick, format, sort_by, ascending);
  if (reset) {
    ThreadStats::reset_all();
    p.retired_stats.clear();
  }
  return text;
}

uint32_t mode() {
  std::lock_guard<std::mutex> lock(profiler().mutex);
  return profiler().config.mode;
}
State state() {
  std::lock_guard<std::mutex> lock(profiler().mutex);
  return profiler().state;
}
bool paused() {
  std::lock_guard<std::mutex> lock(profiler().mutex);
  return profiler().paused;
}
Config current_config() {
  std::lock_guard<std::mutex> lock(profiler().mutex);
  return profiler().config;
}

uint64_t dropped_events() {
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  uint64_t total = 0;
  for (uint64_t n : p.total_dropped()) total += n;
  return total;
}

void set_scope(std::string_view scope) {
  std::lock_guard<std::mutex> lock(profiler().mutex);
  profiler().scope = std::string(scope);
}
std::string scope() {
  std::lock_guard<std::mutex> lock(profiler().mutex);
  return profiler().scope;
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
