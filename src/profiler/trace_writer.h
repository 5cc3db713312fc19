// Writes records as Chrome Tracing JSON (docs/trace-format.md).
//
// The file is valid JSON after every flush: each flush writes its events where the previous
// flush's events ended, followed by the closing part (`]`, displayTimeUnit, otherData, `}`), in
// one pwrite, so a process killed between flushes leaves a complete file. Formatting is
// hand-rolled (no iostreams, no printf per event) into one growing string per flush.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "nanomx/profiler.h"
#include "profiler/clock.h"
#include "profiler/record.h"

namespace nanomx::profiler {

class TraceWriter {
 public:
  ~TraceWriter();
  // Closes the current file and creates (truncates) `path`; throws nanomx::Error when it
  // cannot be opened, leaving no file current.
  void start_file(const std::string& path, DurationEvents durations);
  bool has_file() const { return !path_.empty(); }
  void close();

  // Formats one drained record of thread `tid` into the pending text. `following` points at
  // `extra` records of an operator's shape words.
  void add(const Record& record, const Record* following, uint32_t extra, uint32_t tid,
           const TickConverter& clock);
  // Writes the pending text plus the closing part. Throws nanomx::Error on an I/O failure
  // (the pending text is kept).
  void flush(const std::string& other_data_fields);
  size_t pending_bytes() const { return pending_.size(); }
  uint64_t events_written() const { return events_written_; }

  // Names of threads, refreshed by the collector before each flush (index = tid).
  std::vector<std::string> thread_names;

 private:
  void begin_event();
  void append_escaped_name(NameId id);
  void append_ts(uint64_t ns);
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
  void write_header();

  std::string path_;
  DurationEvents durations_ = DurationEvents::kBeginEnd;
  int fd_ = -1;
  uint64_t events_end_ = 0;  // file offset where the next flush's events go
  bool first_event_ = true;
  uint64_t events_written_ = 0;
  std::string pending_;
  // Per file: which process and thread rows already have their metadata in it.
  std::unordered_set<uint32_t> described_pids_;
  std::unordered_set<uint64_t> described_threads_;
  uint64_t last_row_key_ = UINT64_MAX;  // the (row, thread) of the previous record
  uint32_t last_row_pid_ = 0;
  // Per process: JSON-escaped names by id, and the pid given to each category.
  std::vector<std::string> escaped_names_;
  std::unordered_map<NameId, uint32_t> category_pids_;
};

}  // namespace nanomx::profiler
