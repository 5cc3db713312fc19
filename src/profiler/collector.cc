// The collector (docs/profiler.md#collector): moves the records of every thread buffer into the
// trace file and commits it, from dump(), from the continuous-dump thread and at process exit;
// and dumps(), the aggregate table merged from every thread's statistics.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nanomx/error.h"
#include "nanomx/profiler.h"
#include "profiler/aggregate_stats.h"
#include "profiler/clock.h"
#include "profiler/hooks.h"
#include "profiler/json_string.h"
#include "profiler/profiler_state.h"
#include "profiler/thread_buffer.h"

namespace nanomx::profiler {

namespace {

// A long drain commits every piece of this size, so the file grows while it runs.
constexpr size_t kFlushPieceBytes = 2u << 20;
// Per thread and periodic flush: 256 Ki records (8 MiB of records, about 25 MB of JSON).
constexpr size_t kFlushBudgetRecords = 256u << 10;

// The fields of otherData that never change in a process: producer, clock, host and boot id (read
// once, not at every flush). Never destroyed: the final dump at exit runs after the destructors
// of statics made later than the exit hook, and a static string made at the first flush would be
// freed by then.
const std::string& identity_fields() {
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

}  // namespace

DropCounts Profiler::total_dropped() {
  DropCounts dropped = retired_dropped;
  ThreadRegistry& registry = thread_registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  for (const auto& b : registry.buffers) b->add_dropped(&dropped);
  return dropped;
}

void Profiler::start_file_drop_count() { file_dropped_base = total_dropped(); }

std::string Profiler::other_data() {
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
    uint64_t peak = memory_peak(slot);
    if (peak == 0) continue;
    if (!first) s += ",";
    first = false;
    s.append("\"").append(device_slot_name(slot)).append("\":").append(std::to_string(peak));
  }
  s += "}";
  return s;
}

// The file changes only here, as a whole (each commit).
//
// A periodic flush drains at most kFlushBudgetRecords per thread: threads that record as fast
// as the collector writes would otherwise hold it (and set_state, dump, config) forever; what
// is left waits for the next period, and the buffer bound drops what does not fit. The last
// flush of a file drains everything.
void Profiler::write_pending(bool everything) {
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

void Profiler::drain_all(size_t budget) {
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

void Profiler::discard_pending() {
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  {
    ThreadRegistry& registry = thread_registry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    buffers = registry.buffers;
  }
  for (const auto& buffer : buffers)
    buffer->drain([&](const Record& r, const Record*, uint32_t) { writer.discard(r); });
}

// A record made before the recording began (e.g. a user object before set_config) belongs in
// the next file too, so a fresh file's ts = 0 is no later than it.
uint64_t Profiler::earliest_pending_begin() {
  ThreadRegistry& registry = thread_registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  uint64_t earliest = UINT64_MAX;
  for (const auto& b : registry.buffers) earliest = std::min(earliest, b->earliest_pending_begin());
  return earliest;
}

void Profiler::forget_exited_threads() {
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

void Profiler::finish_output() {
  writer.close();
  start_file_drop_count();
  output_enabled = false;
  file_finished_since_config = true;
}

void Profiler::dump_locked(bool finished) {
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

void Profiler::ensure_dump_thread() {
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

void Profiler::report_recovery() {
  if (failed_flushes > 0) {
    std::fprintf(stderr,
                 "nanomx profiler: continuous dump works again after %llu failed flush(es)\n",
                 static_cast<unsigned long long>(failed_flushes));
  }
  failed_flushes = 0;
}

void Profiler::at_exit() {
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

// Without it a run that never dumps would keep every exited thread's ThreadBuffer (about
// 3.5 KiB each with its statistics table): with threads replaced ~200 times a second, RSS would
// grow by 0.7 MiB/s past the buffer bound (docs/profiler.md#memory-bound). A busy collector
// already does this at its next flush, hence try_lock: a new thread never waits for a flush.
void forget_exited_threads_if_idle() {
  Profiler& p = profiler();
  std::unique_lock<std::mutex> lock(p.mutex, std::try_to_lock);
  if (lock.owns_lock()) p.forget_exited_threads();
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

uint64_t dropped_events() {
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  uint64_t total = 0;
  for (uint64_t n : p.total_dropped()) total += n;
  return total;
}

}  // namespace nanomx::profiler
