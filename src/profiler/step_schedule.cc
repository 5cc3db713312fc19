// Steps and the step schedule (docs/profiler.md#step-schedules): step() and the windows of a
// schedule, each active window's records going to a file of its own.
#include "profiler/step_schedule.h"

#include <unistd.h>

#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include "profiler/hooks.h"
#include "profiler/profiler_state.h"

namespace nanomx::profiler {

StepAction schedule_action(const Config::Schedule& s, uint64_t n) {
  if (n < s.skip_first) return StepAction::kNone;
  n -= s.skip_first;
  const uint64_t cycle = uint64_t{s.wait} + s.warmup + s.active;
  if (s.repeat > 0 && n / cycle >= s.repeat) return StepAction::kNone;
  const uint64_t m = n % cycle;
  if (m < s.wait) return StepAction::kNone;
  if (m < uint64_t{s.wait} + s.warmup) return StepAction::kWarmup;
  return m + 1 < cycle ? StepAction::kRecord : StepAction::kRecordAndSave;
}

uint64_t window_last_step(const Config::Schedule& s, uint64_t n) {
  const uint64_t cycle = uint64_t{s.wait} + s.warmup + s.active;
  const uint64_t at = (n - s.skip_first) % cycle;
  return n + (cycle - 1 - at);
}

std::string window_file(const std::string& configured_file, uint64_t last_step) {
  return stem_of(configured_file) + ".step" + std::to_string(last_step) + ".json";
}

void Profiler::begin_step(uint64_t n) {
  step_number = n;
  step_begin = now_ticks();
  action = schedule_on() ? schedule_action(config.schedule, n) : StepAction::kRecord;
  if (schedule_on() && !window_open &&
      (action == StepAction::kRecord || action == StepAction::kRecordAndSave))
    open_window();
  update_gate();
}

// An active window starts: what warmup recorded (and what ran on after the previous window
// was finished) is discarded, the aggregate table starts empty, and the window's records go
// to `<stem>.step<last active step>.json`. A window that a stop cut short and a run resumes
// continues its file (and its table).
void Profiler::open_window() {
  window_last = window_last_step(config.schedule, step_number);
  const std::string path = window_file(config.filename, window_last);
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

std::string Profiler::finish_window() {
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

std::string step() {
  Profiler& p = profiler();
  std::string finished;
  std::function<void(const std::string&)> callback;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    if (!p.stepping) return "";
    if (p.action != StepAction::kNone && p.state == State::kRunning && !p.paused)
      p.record_step(now_ticks());
    struct Next {  // the next step begins even when writing the window fails
      Profiler& p;
      ~Next() { p.begin_step(p.step_number + 1); }
    } next{p};
    if (p.window_open && p.action == StepAction::kRecordAndSave) {
      finished = p.finish_window();
      callback = p.on_trace_ready;
    }
  }
  // Outside the lock: the callback may call dumps() or anything else but step().
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

}  // namespace nanomx::profiler
