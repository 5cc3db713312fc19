// The profiler's state machine and its control API: configuration, run/stop, pause/resume, the
// settings read from the environment at load, and the gate word the hot path reads. MXNet's
// rules for the states are kept (docs/mxnet-compat.md#state-machine).
#include "profiler/profiler_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "nanomx/error.h"
#include "nanomx/profiler.h"
#include "profiler/clock.h"
#include "profiler/hooks.h"
#include "profiler/thread_buffer.h"

namespace nanomx::profiler {

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

void Profiler::update_gate() {
  uint32_t g = 0;
  // A schedule's wait steps (and the steps after its last cycle) record nothing.
  const bool off_step = schedule_on() && action == StepAction::kNone;
  if (state == State::kRunning && !paused && !off_step)
    g |= (config.mode & kAllModes) | detail::kRunningBit;
  if (!paused && !off_step) g |= detail::kUserBit;
  if (config.aggregate_stats) g |= detail::kAggregateBit;
  detail::gate.store(g, std::memory_order_relaxed);
}

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
  p.action = StepAction::kRecord;
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
  if (finish && p.state == State::kRunning && !p.paused) p.record_step(now_ticks());
  p.paused = true;  // MXNet: stop sets the pause flag
  p.state = state;
  struct Stop {  // the schedule stops even when writing the window fails
    Profiler& p;
    ~Stop() {
      if (!p.stepping) return;
      p.stepping = false;
      ++p.step_number;
      p.action = StepAction::kRecord;
      p.update_gate();
    }
  } stop{p};
  p.update_gate();
  if (finish) p.finish_window();
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

void set_scope(std::string_view scope) {
  std::lock_guard<std::mutex> lock(profiler().mutex);
  profiler().scope = std::string(scope);
}
std::string scope() {
  std::lock_guard<std::mutex> lock(profiler().mutex);
  return profiler().scope;
}

}  // namespace nanomx::profiler
