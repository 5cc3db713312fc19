#include "merge.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "json_out.h"
#include "trace_file.h"
#include "trace_model.h"

namespace nanomx::trace {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// Each file's processes get pids pid_base + p, pid_base = file index * kPidStride. Pids that do
// not fit (MXNet's 64-bit category hashes, strings) are numbered from kPidStride * 9 / 10 up.
constexpr uint64_t kPidStride = 1000000;
constexpr uint64_t kLargePidStart = kPidStride * 9 / 10;
// Async and flow ids of file k become id + k * kIdStride, so files never pair each other's spans.
constexpr uint64_t kIdStride = uint64_t{1} << 44;

struct Anchor {
  std::optional<int64_t> unix_ns, monotonic_ns;
  std::string boot_id;
};

std::optional<int64_t> read_int(object parent, const char* key) {
  element value;
  if (parent[key].get(value)) return std::nullopt;
  switch (value.type()) {
    case element_type::INT64:
      return value.get_int64().value_unsafe();
    case element_type::UINT64:
      return static_cast<int64_t>(value.get_uint64().value_unsafe());
    case element_type::DOUBLE:
      return static_cast<int64_t>(value.get_double().value_unsafe());
    default:
      return std::nullopt;
  }
}

// otherData "rotation" of a part of a rotated series (docs/trace-format.md).
struct Rotation {
  bool present = false;
  std::string series;
  int64_t index = 0;
  std::optional<std::string> previous;  // file name of part index - 1; none for part 0
};

Rotation read_rotation(const LoadedTrace& trace) {
  Rotation rotation;
  if (!trace.object_form) return rotation;
  element other, value;
  object root = trace.root;
  if (root["otherData"].get(other) || !other.is_object()) return rotation;
  if (other.get_object().value_unsafe()["rotation"].get(value)) return rotation;
  auto bad = [&](const std::string& what) {
    return TraceError(trace.path + ": otherData \"rotation\" " + what +
                      "; expected {\"series\": \"<stem>.json\", \"index\": k, \"previous\": "
                      "\"<file name of part k-1>\" or null}");
  };
  if (!value.is_object()) throw bad("is not an object");
  object fields = value.get_object().value_unsafe();
  element series, index, previous;
  if (fields["series"].get(series) || !series.is_string()) throw bad("has no \"series\" string");
  auto index_value = read_int(fields, "index");
  if (!index_value || *index_value < 0) throw bad("has no \"index\" of 0 or more");
  rotation.present = true;
  rotation.series = std::string(series.get_string().value_unsafe());
  rotation.index = *index_value;
  if (!fields["previous"].get(previous) && previous.is_string()) {
    rotation.previous = std::string(previous.get_string().value_unsafe());
  }
  return rotation;
}

Anchor read_anchor(const LoadedTrace& trace) {
  Anchor anchor;
  if (!trace.object_form) return anchor;
  element other;
  object root = trace.root;
  if (root["otherData"].get(other) || !other.is_object()) return anchor;
  object data = other.get_object().value_unsafe();
  anchor.unix_ns = read_int(data, "time_zero_unix_ns");
  anchor.monotonic_ns = read_int(data, "time_zero_monotonic_ns");
  element boot;
  if (!data["boot_id"].get(boot) && boot.is_string()) {
    anchor.boot_id = std::string(boot.get_string().value_unsafe());
  }
  return anchor;
}

std::string label_for(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  // MXNet's distributed files are named rank<r>_<name>: label them by rank.
  if (name.rfind("rank", 0) == 0) {
    size_t digits_end = name.find_first_not_of("0123456789", 4);
    if (digits_end != std::string::npos && digits_end > 4 && name[digits_end] == '_') {
      // A distributed job writes a worker's and a server's file for each rank (the kvstore's
      // profile_process='server'): a name that says which gets the role as its label.
      const std::string digits = name.substr(4, digits_end - 4);
      const std::string rest = name.substr(digits_end + 1);
      if (rest.find("server") != std::string::npos) return "server" + digits;
      if (rest.find("worker") != std::string::npos) return "worker" + digits;
      return name.substr(0, digits_end);
    }
  }
  for (const char* suffix : {".json.gz", ".json"}) {
    size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) {
      return name.substr(0, name.size() - n);
    }
  }
  return name;
}

class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path), temp_path_(path + ".tmp") {
    file_ = std::fopen(temp_path_.c_str(), "wb");
    if (!file_) throw TraceError(path + ": cannot create: " + std::strerror(errno));
  }
  ~Writer() {
    if (file_) {
      std::fclose(file_);
      std::remove(temp_path_.c_str());
    }
  }
  std::string& buffer() { return buffer_; }
  void maybe_flush() {
    if (buffer_.size() > (1 << 20)) flush();
  }
  void flush() {
    if (!buffer_.empty() &&
        std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
      throw TraceError(path_ + ": write error: " + std::strerror(errno));
    }
    buffer_.clear();
  }
  void commit() {
    flush();
    if (std::fclose(file_) != 0) {
      file_ = nullptr;
      throw TraceError(path_ + ": write error: " + std::strerror(errno));
    }
    file_ = nullptr;
    if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
      throw TraceError(path_ +
                       ": cannot rename the finished file into place: " + std::strerror(errno));
    }
  }

 private:
  std::string path_, temp_path_;
  FILE* file_ = nullptr;
  std::string buffer_;
};

// Rewrites one file's events into the merged output.
// Rewrites one process's files (one file, or the parts of a rotated series) into the output.
class FileRewriter {
 public:
  FileRewriter(size_t group_index, const MergedFile& first, Writer& writer, bool* first_event)
      : index_(group_index), file_(first), writer_(writer), first_event_(first_event) {}

  // One file of the group, with its own clock shift. Returns the events written. In a rotated
  // series every part repeats the metadata of the pids and tids it uses: a metadata event equal
  // to one already written is dropped (counted in `dropped`).
  size_t rewrite(const LoadedTrace& trace, int64_t shift_ns, size_t* dropped) {
    shift_ns_ = shift_ns;
    size_t written = 0;
    size_t index = 0;
    for (element value : trace.events) {
      if (!value.is_object()) {
        throw TraceError(trace.path + ": event " + std::to_string(index) + " is not a JSON object");
      }
      ++index;
      object event = value.get_object().value_unsafe();
      element ph;
      if (!event["ph"].get(ph) && ph.is_string() && ph.get_string().value_unsafe() == "M" &&
          !seen_metadata_.insert(simdjson::minify(value)).second) {
        ++*dropped;
        continue;
      }
      write_event(event);
      ++written;
      writer_.maybe_flush();
    }
    events_ += written;
    return written;
  }

  void finish() {
    // Processes the file never named still get a name that says which file they came from.
    for (const auto& [pid, text] : pid_text_) {
      if (named_pids_.count(pid)) continue;
      begin_event();
      std::string& out = writer_.buffer();
      out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
             ",\"tid\":0,\"args\":{\"name\":";
      append_json_string(&out, "pid " + text + " [" + file_.label + "]");
      out += "}}";
    }
  }

  size_t events() const { return events_; }

 private:
  void begin_event() {
    std::string& out = writer_.buffer();
    if (!*first_event_) out += ",\n";
    *first_event_ = false;
  }

  uint64_t map_pid(element value) {
    IdValue id;
    bool small = false;
    uint64_t small_value = 0;
    if (value.type() == element_type::INT64 && value.get_int64().value_unsafe() >= 0 &&
        static_cast<uint64_t>(value.get_int64().value_unsafe()) < kLargePidStart) {
      small = true;
      small_value = static_cast<uint64_t>(value.get_int64().value_unsafe());
    } else if (value.type() == element_type::UINT64 &&
               value.get_uint64().value_unsafe() < kLargePidStart) {
      small = true;
      small_value = value.get_uint64().value_unsafe();
    }
    if (small) {
      uint64_t pid = file_.pid_base + small_value;
      pid_text_.emplace(pid, std::to_string(small_value));
      return pid;
    }
    std::string key = simdjson::minify(value);
    auto found = large_pids_.find(key);
    if (found != large_pids_.end()) return found->second;
    uint64_t pid = file_.pid_base + kLargePidStart + large_pids_.size();
    large_pids_.emplace(key, pid);
    pid_text_.emplace(pid, key);
    return pid;
  }

  void write_id(std::string& out, element value) {
    switch (value.type()) {
      case element_type::INT64:
      case element_type::UINT64: {
        uint64_t id = value.type() == element_type::INT64
                          ? static_cast<uint64_t>(value.get_int64().value_unsafe())
                          : value.get_uint64().value_unsafe();
        if (id < kIdStride) {
          out += std::to_string(id + index_ * kIdStride);
        } else {
          append_json_string(&out, std::to_string(index_) + ":" + std::to_string(id));
        }
        return;
      }
      case element_type::STRING:
        append_json_string(&out, index_ == 0 ? std::string(value.get_string().value_unsafe())
                                             : std::to_string(index_) + ":" +
                                                   std::string(value.get_string().value_unsafe()));
        return;
      default:
        out += simdjson::minify(value);
    }
  }

  void write_event(object event) {
    begin_event();
    std::string& out = writer_.buffer();
    std::string_view name, ph;
    element name_value, ph_value;
    if (!event["name"].get(name_value) && name_value.is_string()) {
      name = name_value.get_string().value_unsafe();
    }
    if (!event["ph"].get(ph_value) && ph_value.is_string())
      ph = ph_value.get_string().value_unsafe();
    bool process_name = ph == "M" && name == "process_name";
    bool has_pid = false;
    uint64_t pid = 0;
    out.push_back('{');
    bool first_field = true;
    for (auto field : event) {
      if (!first_field) out.push_back(',');
      first_field = false;
      append_json_string(&out, field.key);
      out.push_back(':');
      std::string_view key = field.key;
      element value = field.value;
      int64_t ts_ns;
      if (key == "ts" && ph != "M" && read_time_ns(value, &ts_ns)) {
        append_ns_as_us(&out, ts_ns + shift_ns_);
      } else if (key == "pid") {
        pid = map_pid(value);
        has_pid = true;
        out += std::to_string(pid);
      } else if (key == "id") {
        write_id(out, value);
      } else if (key == "args" && process_name && value.is_object()) {
        element original;
        std::string text = "?";
        if (!value["name"].get(original) && original.is_string()) {
          text = std::string(original.get_string().value_unsafe());
        }
        // The device prefix (cpu/0 ...) stays first so viewers still sort device rows first.
        out += "{\"name\":";
        append_json_string(&out, text + " [" + file_.label + "]");
        out += "}";
      } else {
        out += simdjson::minify(value);
      }
    }
    out.push_back('}');
    if (process_name && has_pid) named_pids_.insert(pid);
  }

  size_t index_;
  const MergedFile& file_;
  Writer& writer_;
  bool* first_event_;
  size_t events_ = 0;
  int64_t shift_ns_ = 0;
  std::set<std::string> seen_metadata_;
  std::map<std::string, uint64_t> large_pids_;
  std::map<uint64_t, std::string> pid_text_;
  std::set<uint64_t> named_pids_;
};

}  // namespace

std::string anchor_name(ClockAnchor anchor) {
  switch (anchor) {
    case ClockAnchor::kMonotonic:
      return "CLOCK_MONOTONIC";
    case ClockAnchor::kUnix:
      return "unix";
    case ClockAnchor::kNone:
      return "none";
  }
  return "none";
}

MergeResult merge_traces(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty()) throw TraceError("merge: no input files");
  std::vector<std::unique_ptr<LoadedTrace>> traces;
  std::vector<Anchor> anchors;
  for (const std::string& path : inputs) {
    traces.push_back(load_trace(path));
    anchors.push_back(read_anchor(*traces.back()));
  }

  // One boot for all (same non-empty boot_id, all with a monotonic zero): the monotonic clock
  // lines them up exactly. Otherwise Unix time, as good as the hosts' clock sync.
  bool all_monotonic = true;
  for (const Anchor& anchor : anchors) {
    if (!anchor.monotonic_ns || anchor.boot_id.empty() || anchor.boot_id != anchors[0].boot_id) {
      all_monotonic = false;
    }
  }
  MergeResult result;
  result.anchor = all_monotonic ? ClockAnchor::kMonotonic : ClockAnchor::kUnix;
  auto zero_of = [&](const Anchor& anchor) -> std::optional<int64_t> {
    return all_monotonic ? anchor.monotonic_ns : anchor.unix_ns;
  };
  std::optional<int64_t> reference;
  size_t reference_file = 0;
  for (size_t i = 0; i < anchors.size(); ++i) {
    auto zero = zero_of(anchors[i]);
    if (zero && (!reference || *zero < *reference)) {
      reference = zero;
      reference_file = i;
    }
  }
  if (!reference) result.anchor = ClockAnchor::kNone;

  // Groups: each rotated series (by folder and series name) is one group, in index order; every
  // other file is a group of its own. Groups keep the order of their first file on the command
  // line.
  std::vector<Rotation> rotations;
  for (const auto& trace : traces) rotations.push_back(read_rotation(*trace));
  std::vector<std::vector<size_t>> groups;
  std::map<std::pair<std::string, std::string>, size_t> series_group;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!rotations[i].present) {
      groups.push_back({i});
      continue;
    }
    std::string folder = std::filesystem::path(inputs[i]).parent_path().string();
    auto [found, inserted] = series_group.try_emplace({folder, rotations[i].series}, groups.size());
    if (inserted) groups.emplace_back();
    groups[found->second].push_back(i);
  }
  for (auto& group : groups) {
    std::stable_sort(group.begin(), group.end(),
                     [&](size_t a, size_t b) { return rotations[a].index < rotations[b].index; });
    // Consecutive parts only: a missing middle part would silently lose its events.
    for (size_t k = 1; k < group.size(); ++k) {
      const Rotation& before = rotations[group[k - 1]];
      const Rotation& part = rotations[group[k]];
      if (part.index == before.index) {
        throw TraceError(inputs[group[k]] + ": part " + std::to_string(part.index) +
                         " of the rotated series " + part.series + " is also given as " +
                         inputs[group[k - 1]]);
      }
      if (part.index != before.index + 1) {
        std::string missing =
            part.previous ? *part.previous : "part " + std::to_string(part.index - 1);
        throw TraceError(inputs[group[k]] + ": part " + std::to_string(part.index) +
                         " of the rotated series " + part.series + " follows " + missing +
                         ", which is not among the inputs (given: part " +
                         std::to_string(before.index) + ", " + inputs[group[k - 1]] +
                         "); add it, or merge the parts before and after the gap apart");
      }
    }
  }

  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i : groups[g]) {
      MergedFile file;
      file.path = inputs[i];
      file.label = label_for(rotations[i].present ? rotations[i].series : inputs[i]);
      auto zero = zero_of(anchors[i]);
      file.anchor = zero ? result.anchor : ClockAnchor::kNone;
      file.shift_ns = zero ? *zero - *reference : 0;
      file.pid_base = g * kPidStride;
      if (rotations[i].present) {
        file.series = rotations[i].series;
        file.rotation_index = rotations[i].index;
        file.series_starts_late = i == groups[g].front() && rotations[i].index > 0;
      }
      result.files.push_back(file);
    }
  }
  // Two groups with the same label (a.json in two folders) get their group index appended.
  std::map<std::string, std::set<uint64_t>> label_groups;
  for (const auto& file : result.files) label_groups[file.label].insert(file.pid_base);
  for (auto& file : result.files) {
    if (label_groups[file.label].size() > 1) {
      file.label += "#" + std::to_string(file.pid_base / kPidStride);
    }
  }

  Writer writer(output);
  writer.buffer() = "{\"traceEvents\":[\n";
  bool first_event = true;
  size_t position = 0;  // in result.files, which lists the files group by group
  for (size_t g = 0; g < groups.size(); ++g) {
    FileRewriter rewriter(g, result.files[position], writer, &first_event);
    for (size_t i : groups[g]) {
      MergedFile& file = result.files[position++];
      file.events = rewriter.rewrite(*traces[i], file.shift_ns, &file.dropped_metadata);
      result.events += file.events;
      traces[i].reset();  // free each input as soon as it is written
    }
    rewriter.finish();
  }
  std::string& out = writer.buffer();
  out += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"nanomx-trace merge\",";
  out += "\"clock\":" + json_string(anchor_name(result.anchor));
  const Anchor& ref = anchors[reference_file];
  if (result.anchor != ClockAnchor::kNone) {
    // The merged file's ts = 0 is the reference file's time zero.
    if (ref.unix_ns) out += ",\"time_zero_unix_ns\":" + std::to_string(*ref.unix_ns);
    if (result.anchor == ClockAnchor::kMonotonic) {
      out += ",\"time_zero_monotonic_ns\":" + std::to_string(*ref.monotonic_ns);
      out += ",\"boot_id\":" + json_string(ref.boot_id);
    }
  }
  out += ",\"merged_from\":[";
  for (size_t i = 0; i < result.files.size(); ++i) {
    const MergedFile& file = result.files[i];
    if (i) out += ",";
    out += "{\"file\":" + json_string(file.path) + ",\"label\":" + json_string(file.label) +
           ",\"anchor\":" + json_string(anchor_name(file.anchor)) +
           ",\"shift_ns\":" + std::to_string(file.shift_ns) +
           ",\"pid_base\":" + std::to_string(file.pid_base) +
           ",\"events\":" + std::to_string(file.events);
    if (!file.series.empty()) {
      out += ",\"series\":" + json_string(file.series) +
             ",\"index\":" + std::to_string(file.rotation_index) +
             ",\"dropped_metadata\":" + std::to_string(file.dropped_metadata);
    }
    out += "}";
  }
  out += "]}}\n";
  writer.commit();
  return result;
}

}  // namespace nanomx::trace
