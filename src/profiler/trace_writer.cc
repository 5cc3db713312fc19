#include "profiler/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "nanomx/error.h"
#include "profiler/hooks.h"
#include "profiler/json_string.h"
#include "profiler/name_table.h"

namespace nanomx::profiler {

namespace {

constexpr uint32_t kFirstCategoryPid = 1000;

const char* marker_scope_letter(uint32_t scope) {
  switch (static_cast<MarkerScope>(scope)) {
    case MarkerScope::kGlobal:
      return "g";
    case MarkerScope::kThread:
      return "t";
    default:
      return "p";  // process, task and marker scopes all draw process-wide, as MXNet
  }
}

void pwrite_all(int fd, const std::string& text, uint64_t offset, const std::string& path) {
  const char* data = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::pwrite(fd, data, left, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("profiler: cannot write trace file '", path, "': ", std::strerror(errno));
    data += n;
    left -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

}  // namespace

TraceWriter::~TraceWriter() { close(); }

void TraceWriter::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  path_.clear();
  pending_.clear();
  events_end_ = 0;
  first_event_ = true;
  described_pids_.clear();
  described_threads_.clear();
  last_row_key_ = UINT64_MAX;
}

void TraceWriter::start_file(const std::string& path, DurationEvents durations) {
  close();
  // Opened before anything is drained, so a bad path fails with the events still buffered.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("profiler: cannot open trace file '", path, "' for writing: ", std::strerror(errno));
  fd_ = fd;
  path_ = path;
  durations_ = durations;
  write_header();
}

void TraceWriter::write_header() {
  pending_ = "{\"traceEvents\":[\n";
  // Device rows first and in slot order, so cpu/0, gpu/0 … lead the timeline.
  for (int slot = 0; slot < device_slot_count(); ++slot) {
    ensure_process(static_cast<uint32_t>(slot), 0);
  }
}

void TraceWriter::begin_event() {
  if (!first_event_) pending_.append(",\n");
  first_event_ = false;
  ++events_written_;
}

void TraceWriter::append_u64(uint64_t v) {
  char buf[24];
  char* p = buf + sizeof buf;
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  pending_.append(p, static_cast<size_t>(buf + sizeof buf - p));
}

void TraceWriter::append_ts(uint64_t ns) {
  append_u64(ns / 1000);
  unsigned frac = static_cast<unsigned>(ns % 1000);
  char digits[4] = {'.', static_cast<char>('0' + frac / 100),
                    static_cast<char>('0' + frac / 10 % 10), static_cast<char>('0' + frac % 10)};
  pending_.append(digits, 4);
}

void TraceWriter::append_escaped_name(NameId id) {
  if (id >= escaped_names_.size()) escaped_names_.resize(id + 1);
  std::string& cached = escaped_names_[id];
  if (cached.empty()) append_json_string(&cached, names().lookup(id));
  pending_.append(cached);
}

uint32_t TraceWriter::pid_of_category(NameId category, bool* fresh) {
  auto [it, inserted] = category_pids_.try_emplace(
      category, kFirstCategoryPid + static_cast<uint32_t>(category_pids_.size()));
  *fresh = inserted;
  return it->second;
}

void TraceWriter::ensure_process(uint32_t pid, NameId category_for_name) {
  if (!described_pids_.insert(pid).second) return;
  begin_event();
  pending_.append("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
  append_u64(pid);
  pending_.append(",\"tid\":0,\"args\":{\"name\":");
  if (pid < kFirstCategoryPid) {
    append_json_string(&pending_, device_slot_name(static_cast<int>(pid)));
  } else {
    append_escaped_name(category_for_name);
  }
  pending_.append("}}");
  begin_event();
  pending_.append("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":");
  append_u64(pid);
  pending_.append(",\"tid\":0,\"args\":{\"sort_index\":");
  append_u64(pid);
  pending_.append("}}");
}

void TraceWriter::ensure_thread(uint32_t pid, uint32_t tid) {
  if (!described_threads_.insert((static_cast<uint64_t>(pid) << 32) | tid).second) return;
  begin_event();
  pending_.append("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
  append_u64(pid);
  pending_.append(",\"tid\":");
  append_u64(tid);
  pending_.append(",\"args\":{\"name\":");
  append_json_string(
      &pending_, tid < thread_names.size() ? thread_names[tid] : "thread " + std::to_string(tid));
  pending_.append("}}");
}

void TraceWriter::append_common_tail(uint32_t pid, uint32_t tid) {
  pending_.append(",\"pid\":");
  append_u64(pid);
  pending_.append(",\"tid\":");
  append_u64(tid);
}

void TraceWriter::append_shapes(const Record* following, uint32_t extra) {
  // Words: n_inputs, n_outputs, then per shape its rank and dims.
  const auto* words = reinterpret_cast<const int64_t*>(following);
  size_t count = static_cast<size_t>(extra) * 4;
  if (count < 2) return;
  size_t at = 2;
  auto write_list = [&](int64_t shapes) {
    pending_.push_back('[');
    for (int64_t s = 0; s < shapes && at < count; ++s) {
      if (s) pending_.push_back(',');
      int64_t ndim = words[at++];
      pending_.push_back('[');
      for (int64_t d = 0; d < ndim && at < count; ++d) {
        if (d) pending_.push_back(',');
        int64_t v = words[at++];
        if (v < 0) {
          pending_.push_back('-');
          v = -v;
        }
        append_u64(static_cast<uint64_t>(v));
      }
      pending_.push_back(']');
    }
    pending_.push_back(']');
  };
  pending_.append(",\"args\":{\"inputs\":");
  write_list(words[0]);
  pending_.append(",\"outputs\":");
  write_list(words[1]);
  pending_.push_back('}');
}

uint32_t TraceWriter::row_of(const Record& r, uint32_t tid) {
  // Consecutive records of one thread mostly land on the same row: skip the lookups then.
  bool device_row = r.kind == RecordKind::kOperator || r.kind == RecordKind::kFlowFinish;
  uint64_t row_key =
      (device_row ? (uint64_t{1} << 63) | (uint64_t{r.slot} << 32) : uint64_t{r.category} << 32) |
      tid;
  if (row_key == last_row_key_) return last_row_pid_;
  uint32_t pid;
  if (device_row) {
    pid = r.slot;
    ensure_process(pid, 0);
  } else {
    bool fresh = false;
    pid = pid_of_category(r.category, &fresh);
    ensure_process(pid, r.category);
  }
  ensure_thread(pid, tid);
  last_row_key_ = row_key;
  last_row_pid_ = pid;
  return pid;
}

void TraceWriter::open_event(const Record& r, const char* phase, uint64_t ns) {
  begin_event();
  pending_.append("{\"name\":");
  append_escaped_name(r.name);
  pending_.append(",\"cat\":");
  append_escaped_name(r.category);
  pending_.append(",\"ph\":\"");
  pending_.append(phase);
  pending_.append("\",\"ts\":");
  append_ts(ns);
}

void TraceWriter::write_duration(const Record& r, Row row, const TickConverter& clock,
                                 const Record* shapes, uint32_t shape_records) {
  uint64_t b = clock.to_ns(r.begin), e = clock.to_ns(r.value);
  if (e < b) e = b;
  if (durations_ == DurationEvents::kComplete) {
    open_event(r, "X", b);
    pending_.append(",\"dur\":");
    append_ts(e - b);
    append_common_tail(row.pid, row.tid);
    if (shapes) append_shapes(shapes, shape_records);
    pending_.push_back('}');
    return;
  }
  open_event(r, "B", b);
  append_common_tail(row.pid, row.tid);
  if (shapes) append_shapes(shapes, shape_records);
  pending_.push_back('}');
  open_event(r, "E", e);
  append_common_tail(row.pid, row.tid);
  pending_.push_back('}');
}

void TraceWriter::write_async_pair(const Record& r, Row row, const TickConverter& clock,
                                   uint64_t id) {
  uint64_t b = clock.to_ns(r.begin), e = clock.to_ns(r.value);
  if (e < b) e = b;
  for (int half = 0; half < 2; ++half) {
    open_event(r, half == 0 ? "b" : "e", half == 0 ? b : e);
    pending_.append(",\"id\":");
    append_u64(id);
    append_common_tail(row.pid, row.tid);
    pending_.push_back('}');
  }
}

void TraceWriter::write_counter(const Record& r, Row row, const TickConverter& clock) {
  open_event(r, "C", clock.to_ns(r.begin));
  append_common_tail(row.pid, row.tid);
  pending_.append(",\"args\":{");
  append_escaped_name(r.name);
  pending_.push_back(':');
  append_u64(r.value);
  pending_.append("}}");
}

void TraceWriter::write_marker(const Record& r, Row row, const TickConverter& clock) {
  open_event(r, "n", clock.to_ns(r.begin));
  pending_.append(",\"id\":");
  append_u64(row.tid);
  pending_.append(",\"s\":\"");
  pending_.append(marker_scope_letter(r.payload));
  pending_.push_back('"');
  append_common_tail(row.pid, row.tid);
  pending_.push_back('}');
}

void TraceWriter::write_flow(const Record& r, Row row, const TickConverter& clock) {
  const bool finish = r.kind == RecordKind::kFlowFinish;
  open_event(r, finish ? "f" : "s", clock.to_ns(r.begin));
  if (finish) pending_.append(",\"bp\":\"e\"");
  pending_.append(",\"id\":");
  append_u64(r.value);
  append_common_tail(row.pid, row.tid);
  pending_.push_back('}');
}

void TraceWriter::add(const Record& r, const Record* following, uint32_t extra, uint32_t tid,
                      const TickConverter& clock) {
  const Row row{row_of(r, tid), tid};
  switch (r.kind) {
    case RecordKind::kOperator:
      write_duration(r, row, clock, following, extra);
      break;
    case RecordKind::kEvent:
      write_duration(r, row, clock, nullptr, 0);
      break;
    case RecordKind::kTask:
      write_async_pair(r, row, clock, tid);
      break;
    case RecordKind::kFrame:
      write_async_pair(r, row, clock, r.payload);
      break;
    case RecordKind::kCounter:
      write_counter(r, row, clock);
      break;
    case RecordKind::kMarker:
      write_marker(r, row, clock);
      break;
    case RecordKind::kFlowStart:
    case RecordKind::kFlowFinish:
      write_flow(r, row, clock);
      break;
  }
}

void TraceWriter::flush(const std::string& other_data_fields) {
  NANOMX_CHECK(has_file()) << "profiler: no trace file to flush";
  std::string trailer =
      "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{" + other_data_fields + "}}\n";
  uint64_t events_size = pending_.size();
  pending_.append(trailer);
  try {
    pwrite_all(fd_, pending_, events_end_, path_);
  } catch (...) {
    pending_.resize(events_size);  // keep the events for a later attempt
    throw;
  }
  events_end_ += events_size;
  if (::ftruncate(fd_, static_cast<off_t>(events_end_ + trailer.size())) != 0) {
    fail("profiler: cannot truncate trace file '", path_, "': ", std::strerror(errno));
  }
  pending_.clear();
}

}  // namespace nanomx::profiler
