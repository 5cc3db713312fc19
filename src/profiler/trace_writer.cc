#include "profiler/trace_writer.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "nanomx/error.h"
#include "profiler/hooks.h"
#include "profiler/json_string.h"
#include "profiler/name_table.h"

namespace nanomx::profiler {

namespace {

constexpr uint32_t kFirstCategoryPid = 1000;
// Flow finishes waiting for their start: in practice the operations in flight when a flush
// drained the worker before the pusher. The cap only guards against a pathological pattern.
constexpr size_t kMaxHeldFinishes = 1u << 20;

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

}  // namespace

TraceWriter::~TraceWriter() { close(); }

void TraceWriter::close() {
  if (file_.is_open() && pending_.empty()) {
    finished_ = {file_.path(), file_.body_bytes(), file_.body_bytes() + trailer_bytes_, zero_ns_,
                 unit_ns_};
  } else {
    finished_ = {};  // nothing committed, or events not written: the file cannot be continued
  }
  file_.close();
  pending_.clear();
  last_row_key_ = UINT64_MAX;
}

void TraceWriter::start_file(const std::string& path, DurationEvents durations, bool sync,
                             uint64_t zero_ns, uint64_t unit_ns) {
  const Finished finished = finished_;
  close();
  durations_ = durations;
  zero_ns_ = zero_ns;
  unit_ns_ = unit_ns == 0 ? 1 : unit_ns;
  // Continue the file this writer finished last, if it is still what was written there.
  if (!finished.path.empty() && finished.path == path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 &&
        static_cast<uint64_t>(st.st_size) == finished.file_bytes) {
      try {
        file_.reopen(path, finished.body_bytes, sync);
        records_in_file_ = 1;
        zero_ns_ = finished.zero_ns;
        unit_ns_ = finished.unit_ns;
        return;
      } catch (const Error&) {
        // Changed under us: start it afresh below.
      }
    }
  }
  // Opened before anything is drained, so a bad path fails with the events still buffered.
  file_.open(path, sync);
  first_event_ = true;
  records_in_file_ = 0;
  described_pids_.clear();
  described_threads_.clear();
  // The flow starts written so far went to earlier files: a finish of one of them is left out
  // (and counted) at once rather than held.
  for (auto& [pusher, range] : flow_starts_) range = FlowRange{range.last + 1, range.last};
  omitted_finishes_ = 0;
  write_header();
}

void TraceWriter::write_header() {
  pending_ = "{\"traceEvents\":[\n";
  // Device rows first and in slot order, so cpu/0, gpu/0 … lead the timeline.
  for (int slot = 0; slot < device_slot_count(); ++slot) {
    if (device_slot_configured(slot)) ensure_process(static_cast<uint32_t>(slot), 0);
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

int64_t TraceWriter::file_offset(uint64_t ns) const {
  const int64_t offset = static_cast<int64_t>(ns - zero_ns_);
  if (unit_ns_ == 1) return offset;
  const int64_t unit = static_cast<int64_t>(unit_ns_);
  const int64_t units = offset >= 0 ? (offset + unit / 2) / unit : -((unit / 2 - offset) / unit);
  return units * unit;
}

void TraceWriter::append_ts(uint64_t ns) {
  const int64_t offset = file_offset(ns);
  if (offset >= 0) {
    append_micros(static_cast<uint64_t>(offset));
  } else {
    pending_.push_back('-');
    append_micros(static_cast<uint64_t>(-offset));
  }
}

void TraceWriter::append_duration(uint64_t b, uint64_t e) {
  append_micros(static_cast<uint64_t>(file_offset(e) - file_offset(b)));
}

void TraceWriter::append_micros(uint64_t ns) {
  append_u64(ns / 1000);
  unsigned frac = static_cast<unsigned>(ns % 1000);
  if (frac == 0) return;
  char digits[4] = {'.', static_cast<char>('0' + frac / 100),
                    static_cast<char>('0' + frac / 10 % 10), static_cast<char>('0' + frac % 10)};
  size_t length = frac % 100 == 0 ? 2 : frac % 10 == 0 ? 3 : 4;
  pending_.append(digits, length);
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
  bool device_row = r.kind == RecordKind::kOperator || r.kind == RecordKind::kFlowFinish ||
                    r.kind == RecordKind::kDependencyStart;
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
    append_duration(b, e);
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
  const bool finish = r.kind == RecordKind::kFlowFinish;  // else kFlowStart or kDependencyStart
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
  ++records_in_file_;
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
    case RecordKind::kDependencyStart: {
      const uint32_t pusher = static_cast<uint32_t>(r.value >> kFlowSequenceBits);
      const uint64_t sequence = r.value & kFlowSequenceMask;
      auto [it, fresh] = flow_starts_.try_emplace(pusher, FlowRange{sequence, sequence});
      if (!fresh) it->second.last = sequence;
      write_flow(r, row, clock);
      break;
    }
    case RecordKind::kStep:
      write_step(r, row, clock);
      break;
    case RecordKind::kFlowFinish:
      switch (flow_start_of(r.value)) {
        case FlowStart::kWritten:
          write_flow(r, row, clock);
          break;
        case FlowStart::kNever:
          ++omitted_finishes_;
          break;
        case FlowStart::kNotYet:
          if (held_finishes_.size() < kMaxHeldFinishes) {
            held_finishes_.push_back({r, tid});
          } else {
            ++omitted_finishes_;
          }
          break;
      }
      break;
  }
}

void TraceWriter::discard(const Record& r) {
  if (r.kind != RecordKind::kFlowStart && r.kind != RecordKind::kDependencyStart) return;
  const uint32_t pusher = static_cast<uint32_t>(r.value >> kFlowSequenceBits);
  const uint64_t sequence = r.value & kFlowSequenceMask;
  // Only between files (no start of the next file is written yet): every start of this pusher
  // up to `sequence` is then in no file that is still to be written.
  flow_starts_[pusher] = FlowRange{sequence + 1, sequence};
}

void TraceWriter::write_step(const Record& r, Row row, const TickConverter& clock) {
  uint64_t b = clock.to_ns(r.begin), e = clock.to_ns(r.value);
  if (e < b) e = b;
  begin_event();
  pending_.append("{\"name\":\"ProfilerStep#");
  append_u64(r.payload);
  pending_.append("\",\"cat\":");
  append_escaped_name(r.category);
  pending_.append(",\"ph\":\"X\",\"ts\":");
  append_ts(b);
  pending_.append(",\"dur\":");
  append_duration(b, e);
  append_common_tail(row.pid, row.tid);
  pending_.push_back('}');
}

TraceWriter::FlowStart TraceWriter::flow_start_of(uint64_t id) const {
  auto it = flow_starts_.find(static_cast<uint32_t>(id >> kFlowSequenceBits));
  const uint64_t sequence = id & kFlowSequenceMask;
  if (it == flow_starts_.end() || sequence > it->second.last) return FlowStart::kNotYet;
  return sequence >= it->second.first ? FlowStart::kWritten : FlowStart::kNever;
}

void TraceWriter::write_held_finishes(const TickConverter& clock) {
  size_t kept = 0;
  for (const HeldFinish& held : held_finishes_) {
    switch (flow_start_of(held.record.value)) {
      case FlowStart::kWritten:
        write_flow(held.record, Row{row_of(held.record, held.tid), held.tid}, clock);
        break;
      case FlowStart::kNever:
        ++omitted_finishes_;
        break;
      case FlowStart::kNotYet:
        held_finishes_[kept++] = held;
        break;
    }
  }
  held_finishes_.resize(kept);
}

void TraceWriter::write_pending() {
  NANOMX_CHECK(has_file()) << "profiler: no trace file to write";
  file_.append(pending_);  // throws with pending_ intact
  pending_.clear();
}

void TraceWriter::commit(const std::string& other_data_fields) {
  NANOMX_CHECK(has_file()) << "profiler: no trace file to flush";
  write_pending();
  std::string trailer =
      "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{" + other_data_fields + "}}\n";
  file_.commit(trailer);
  trailer_bytes_ = trailer.size();
  ++commits_;
}

}  // namespace nanomx::profiler
