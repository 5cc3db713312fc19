// Writes records as Chrome Tracing JSON (docs/trace-format.md).
//
// The file only ever changes by whole commits (CrashSafeFile): the events are its body, the
// closing part (`]`, displayTimeUnit, otherData, `}`) the trailer each commit replaces, so a
// process killed at any moment, or a write that fails, leaves the last committed file. A flow
// finish is written only once its start is in the same file (held back until then), so no file
// has an arrow without a tail. Formatting is hand-rolled (no iostreams, no printf per event).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "nanomx/profiler.h"
#include "profiler/clock.h"
#include "profiler/crash_safe_file.h"
#include "profiler/record.h"

namespace nanomx::profiler {

class TraceWriter {
 public:
  ~TraceWriter();
  // Closes the current file and starts `path`: continues it when it is the file this writer
  // finished last (a later dump never erases an earlier one), else starts it afresh (visible at
  // the first commit) with `ts = 0` at `zero_ns` (nanoseconds since the process's time zero): a
  // file's timestamps count from when its recording began, not from when the library loaded, so
  // they stay short in long-running processes. Timestamps and durations are rounded to `unit_ns`
  // (timestamp_unit_ns of the clock's resolution), so they carry no digit the clock cannot
  // resolve. A continued file keeps its zero and unit. Throws nanomx::Error when it cannot be
  // opened, leaving no file current.
  void start_file(const std::string& path, DurationEvents durations, bool sync,
                  uint64_t zero_ns = 0, uint64_t unit_ns = 1);
  // The current file's zero, in nanoseconds since the process's time zero.
  uint64_t zero_ns() const { return zero_ns_; }
  // What the current file's timestamps are rounded to, in nanoseconds.
  uint64_t unit_ns() const { return unit_ns_; }
  bool has_file() const { return file_.is_open(); }
  // Finishes the current file; the next start_file of the same path continues it.
  void close();
  // The next start_file starts afresh whatever its path (a new configuration).
  void forget_finished_file() { finished_ = {}; }

  // Formats one drained record of thread `tid` into the pending text. `following` points at
  // `extra` records of an operator's shape words.
  void add(const Record& record, const Record* following, uint32_t extra, uint32_t tid,
           const TickConverter& clock);
  // Moves the pending text into the file, not yet visible. Throws nanomx::Error on an I/O
  // failure, keeping the pending text for the next attempt.
  void write_pending();
  // Writes the held flow finishes whose starts are now in the file (and counts those whose
  // start went to an earlier file). Called before the closing part is computed, so that its
  // counts include them.
  void write_held_finishes(const TickConverter& clock);
  // Makes everything written plus the closing part the file's visible content. Throws
  // nanomx::Error on an I/O failure (the file keeps its previous content; nothing is lost).
  void commit(const std::string& other_data_fields);
  // Forgets a drained record without writing it (a schedule's warmup), between two files: a
  // flow finish whose start is discarded so is then left out of the next file, not held.
  void discard(const Record& record);
  size_t pending_bytes() const { return pending_.size(); }
  // The current file's size once the pending text is written (without its closing part).
  uint64_t file_bytes() const { return file_.body_bytes() + pending_.size(); }
  const std::string& path() const { return file_.path(); }
  uint64_t commits() const { return commits_; }  // successful commits, all files
  uint64_t events_written() const { return events_written_; }
  // Records added to the current file (any positive number for a continued file).
  uint64_t records_in_file() const { return records_in_file_; }
  // Flow finishes waiting for their start (recorded by another thread, not yet drained).
  size_t held_flow_finishes() const { return held_finishes_.size(); }
  // Flow finishes left out of this file because their start went to an earlier file.
  uint64_t omitted_flow_finishes() const { return omitted_finishes_; }

  // Names of threads, refreshed by the collector before each flush (index = tid).
  std::vector<std::string> thread_names;

 private:
  void begin_event();
  void append_escaped_name(NameId id);
  // `ns` since the process's time zero as an offset from the file's zero, rounded to the unit
  // (monotonic, so rounding keeps every order and nesting; half a unit rounds away from zero).
  int64_t file_offset(uint64_t ns) const;
  // A timestamp (`ns` since the process's time zero) relative to the file's zero; a record
  // older than the zero (a user object recorded before the profiler was configured) gets a
  // negative one.
  void append_ts(uint64_t ns);
  // The duration from `b` to `e` (ns since the process's time zero) as the difference of their
  // rounded offsets, so that ts + dur is exactly the rounded end.
  void append_duration(uint64_t b, uint64_t e);
  // Microseconds with as many fraction digits as the nanoseconds need (none, one, two or three):
  // exact, and a few bytes shorter than a fixed three.
  void append_micros(uint64_t ns);
  void append_u64(uint64_t v);
  void ensure_process(uint32_t pid, NameId category_for_name);
  void ensure_thread(uint32_t pid, uint32_t tid);
  uint32_t pid_of_category(NameId category, bool* fresh);
  void append_common_tail(uint32_t pid, uint32_t tid);
  void append_shapes(const Record* following, uint32_t extra);

  // The trace row (pid) of a record, writing the row's metadata the first time it is used.
  uint32_t row_of(const Record& r, uint32_t tid);
  // One writer per record kind; each appends the record's event(s) to the pending text.
  struct Row {
    uint32_t pid, tid;
  };
  void open_event(const Record& r, const char* phase, uint64_t ns);
  // Operators (with their `shape_records` records of shape words) and Events: B/E or X.
  void write_duration(const Record& r, Row row, const TickConverter& clock, const Record* shapes,
                      uint32_t shape_records);
  void write_async_pair(const Record& r, Row row, const TickConverter& clock, uint64_t id);
  void write_counter(const Record& r, Row row, const TickConverter& clock);
  void write_marker(const Record& r, Row row, const TickConverter& clock);
  void write_flow(const Record& r, Row row, const TickConverter& clock);
  void write_step(const Record& r, Row row, const TickConverter& clock);
  void write_header();
  // Whether the start of flow `id` is in this file: yes, no (in an earlier file: never), or
  // not yet (still in its thread's buffer).
  enum class FlowStart { kWritten, kNever, kNotYet };
  FlowStart flow_start_of(uint64_t id) const;

  CrashSafeFile file_;
  DurationEvents durations_ = DurationEvents::kBeginEnd;
  bool first_event_ = true;
  uint64_t events_written_ = 0;
  uint64_t records_in_file_ = 0;
  uint64_t zero_ns_ = 0;
  uint64_t unit_ns_ = 1;
  std::string pending_;
  // Per file: which process and thread rows already have their metadata in it.
  std::unordered_set<uint32_t> described_pids_;
  std::unordered_set<uint64_t> described_threads_;
  uint64_t last_row_key_ = UINT64_MAX;  // the (row, thread) of the previous record
  uint32_t last_row_pid_ = 0;
  // Per file: the flow ids written as starts, per pushing thread (ids are tid << 40 | a
  // sequence number the thread counts up, so a range per thread says it all).
  struct FlowRange {
    uint64_t first, last;
  };
  std::unordered_map<uint32_t, FlowRange> flow_starts_;
  struct HeldFinish {
    Record record;
    uint32_t tid;
  };
  std::vector<HeldFinish> held_finishes_;
  uint64_t omitted_finishes_ = 0;
  size_t trailer_bytes_ = 0;  // of the last commit
  uint64_t commits_ = 0;
  // The file finished last, continued by a later start_file of the same path.
  struct Finished {
    std::string path;
    uint64_t body_bytes = 0, file_bytes = 0, zero_ns = 0, unit_ns = 1;
  };
  Finished finished_;
  // Per process: JSON-escaped names by id, and the pid given to each category.
  std::vector<std::string> escaped_names_;
  std::unordered_map<NameId, uint32_t> category_pids_;
};

}  // namespace nanomx::profiler
