// The profiler's one control object: configuration, the run/stop and pause state machine, the
// steps, the trace file series and the collector's state. One mutex guards all of it; the hot
// path never takes it (it reads the gate word, which every state change recomputes, and the
// interned category names, which never change).
//
// The methods are defined by concept:
//   profiler_state.cc  the control API (config, run/stop, pause) and the gate
//   step_schedule.cc   steps and the schedule's windows
//   file_rotation.cc   moving to the next file of a series
//   collector.cc       moving records into the trace file, the continuous-dump thread, dumps
//   profiler.cc        the instance and the record paths (hooks.h, recording.h)
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nanomx/profiler.h"
#include "profiler/aggregate_stats.h"
#include "profiler/clock.h"
#include "profiler/file_rotation.h"
#include "profiler/step_schedule.h"
#include "profiler/thread_buffer.h"
#include "profiler/trace_writer.h"

namespace nanomx::profiler {

// Chunks made ready whenever profiling is configured or started (4 MiB of records), so that the
// first records do not pay page faults.
constexpr size_t kPrefaultChunks = 32;

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

  // The names the record paths carry, interned once when the profiler is made.
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

  // ---- Steps and the step schedule (docs/profiler.md#step-schedules).
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
  std::string current_path() const { return series_path(file_base, file_index); }

  // ---- profiler_state.cc
  // Recomputes the gate word the hot path reads from the state, the pause flag, the mode and
  // the step's phase.
  void update_gate();

  // ---- step_schedule.cc
  // Begins step n: its phase, a window's file when an active window starts, the gate.
  void begin_step(uint64_t n);
  // An active window starts: what came before it is discarded and its file is opened (or the
  // file of a window that a stop cut short is resumed).
  void open_window();
  // Ends the active window at the step in progress: its file is written and finished. Returns
  // the file's path (the last of its series).
  std::string finish_window();

  // ---- file_rotation.cc
  // The file reached max_file_bytes: finish it and go on in the next file of the series.
  void rotate();

  // ---- collector.cc (with `mutex` held, except at_exit)
  // Moves every committed record into the trace file and commits it; a periodic flush
  // (everything = false) drains a bounded number of records per thread.
  void write_pending(bool everything = true);
  // Moves up to `budget` records of each thread into the writer, rotating a full file.
  void drain_all(size_t budget);
  // Drains every buffer without writing (between two files).
  void discard_pending();
  // The earliest begin of every record still buffered.
  uint64_t earliest_pending_begin();
  // Threads that exited and whose records are all written: keep their statistics and drop
  // their buffers.
  void forget_exited_threads();
  // Events dropped by every thread since the process started, exited ones included, per kind.
  DropCounts total_dropped();
  // The next file's drop counts start from here.
  void start_file_drop_count();
  // The fields of the trace's otherData for the file being written.
  std::string other_data();
  // Finishes the configured file; the next run starts a fresh recording.
  void finish_output();
  // dump(): flushes, and finishes the file when `finished` or without continuous dump.
  void dump_locked(bool finished);
  // Starts the continuous-dump thread once; it sleeps while continuous_dump is off.
  void ensure_dump_thread();
  // After failed continuous flushes: says once on stderr that flushing works again.
  void report_recovery();
  // The final dump, from the exit hook (without `mutex`: it joins the dump thread first).
  void at_exit();

  // ---- profiler.cc
  // The step in progress as a `ProfilerStep#N` span on the calling thread, ending at `end`.
  void record_step(uint64_t end);
};

// The one instance, made on first use and never destroyed (the exit hook finishes it).
Profiler& profiler();

}  // namespace nanomx::profiler
