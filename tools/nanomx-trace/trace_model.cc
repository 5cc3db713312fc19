#include "trace_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <utility>

namespace nanomx::trace {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

uint64_t hash_text(std::string_view text) { return std::hash<std::string_view>{}(text); }

uint64_t mix(uint64_t a, uint64_t b) {
  return a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
}

bool read_number(element value, double* out) {
  switch (value.type()) {
    case element_type::INT64:
      *out = static_cast<double>(value.get_int64().value_unsafe());
      return true;
    case element_type::UINT64:
      *out = static_cast<double>(value.get_uint64().value_unsafe());
      return true;
    case element_type::DOUBLE:
      *out = value.get_double().value_unsafe();
      return true;
    case element_type::STRING: {
      // Some writers quote numbers ("ts": "12.5"); accept them when the whole text is a number.
      std::string text(value.get_string().value_unsafe());
      char* end = nullptr;
      double parsed = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size()) return false;
      *out = parsed;
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

bool read_time_ns(element value, int64_t* ns) {
  constexpr int64_t kMax = static_cast<int64_t>(kMaxTimeUs);
  switch (value.type()) {
    case element_type::INT64: {
      int64_t us = value.get_int64().value_unsafe();
      if (us > kMax || us < -kMax) return false;
      *ns = us * 1000;
      return true;
    }
    case element_type::UINT64:
      return false;  // simdjson uses UINT64 only above INT64_MAX: out of range
    default: {
      double us;
      if (!read_number(value, &us)) return false;
      if (!(us <= kMaxTimeUs && us >= -kMaxTimeUs)) return false;  // also NaN and infinities
      *ns = us_to_ns(us);
      return true;
    }
  }
}

namespace {

IdValue read_id(element value) {
  IdValue id;
  switch (value.type()) {
    case element_type::INT64:
      id.kind = IdValue::Kind::kInt;
      id.bits = static_cast<uint64_t>(value.get_int64().value_unsafe());
      id.text = std::to_string(value.get_int64().value_unsafe());
      break;
    case element_type::UINT64:
      id.kind = IdValue::Kind::kInt;
      id.bits = value.get_uint64().value_unsafe();
      id.text = std::to_string(id.bits);
      break;
    case element_type::DOUBLE: {
      double d = value.get_double().value_unsafe();
      id.kind = IdValue::Kind::kInt;
      std::memcpy(&id.bits, &d, sizeof d);
      char buffer[40];
      std::snprintf(buffer, sizeof buffer, "%.17g", d);
      id.text = buffer;
      break;
    }
    case element_type::STRING:
      id.kind = IdValue::Kind::kString;
      id.text = std::string(value.get_string().value_unsafe());
      id.bits = hash_text(id.text);
      break;
    case element_type::OBJECT: {  // id2: {"local": x} or {"global": x}
      object inner = value.get_object().value_unsafe();
      for (auto field : inner) return read_id(field.value);
      break;
    }
    default:
      break;
  }
  return id;
}

// The fields of one event that the tool uses. Strings point into the DOM.
struct RawEvent {
  std::string_view name, cat;
  char ph = 0;
  int64_t ts = 0, dur = 0;  // nanoseconds
  bool has_ts = false, has_dur = false;
  element pid, tid, id, args;
  bool has_pid = false, has_tid = false, has_id = false, has_args = false;
  char scope = 't';
  bool bind_enclosing = false;
};

// Exact key match without a library call: keys are a few bytes long.
template <size_t N>
bool key_is(std::string_view key, const char (&literal)[N]) {
  if (key.size() != N - 1) return false;
  for (size_t i = 0; i < N - 1; ++i) {
    if (key[i] != literal[i]) return false;
  }
  return true;
}

// Why a "ts" or "dur" value was refused by read_time_ns.
[[noreturn]] void throw_bad_time(element value, const char* key, size_t index,
                                 const std::string& label) {
  double number = 0;
  std::string what = "is not a number";
  if (value.type() == element_type::UINT64 || read_number(value, &number)) {
    std::string text = simdjson::minify(value);
    what = "is " + text.substr(0, 40) + ", out of range: expected a finite number of " +
           "microseconds within +-4e15 (about 127 years)";
  }
  throw TraceError(label + ": event " + std::to_string(index) + ": \"" + key + "\" " + what);
}

void read_event(object event, size_t index, const std::string& label, RawEvent* out) {
  for (auto field : event) {
    std::string_view key = field.key;
    element value = field.value;
    if (key.empty()) continue;
    switch (key[0]) {
      case 'n':
        if (key_is(key, "name") && value.is_string()) out->name = value.get_string().value_unsafe();
        break;
      case 'c':
        if (key_is(key, "cat") && value.is_string()) out->cat = value.get_string().value_unsafe();
        break;
      case 'p':
        if (key_is(key, "ph")) {
          if (value.is_string()) {
            std::string_view ph = value.get_string().value_unsafe();
            if (!ph.empty()) out->ph = ph[0];
          }
        } else if (key_is(key, "pid")) {
          out->pid = value;
          out->has_pid = true;
        }
        break;
      case 't':
        if (key_is(key, "ts")) {
          out->has_ts = read_time_ns(value, &out->ts);
          if (!out->has_ts) throw_bad_time(value, "ts", index, label);
        } else if (key_is(key, "tid")) {
          out->tid = value;
          out->has_tid = true;
        }
        break;
      case 'd':
        if (key_is(key, "dur")) {
          out->has_dur = read_time_ns(value, &out->dur);
          if (!out->has_dur) throw_bad_time(value, "dur", index, label);
        }
        break;
      case 'i':
        if ((key_is(key, "id") || key_is(key, "id2")) && !out->has_id) {
          out->id = value;
          out->has_id = true;
        }
        break;
      case 'a':
        if (key_is(key, "args")) {
          out->args = value;
          out->has_args = true;
        }
        break;
      case 's':
        if (key_is(key, "s") && value.is_string()) {
          std::string_view s = value.get_string().value_unsafe();
          if (!s.empty()) out->scope = s[0];
        }
        break;
      case 'b':
        if (key_is(key, "bp") && value.is_string()) {
          out->bind_enclosing = value.get_string().value_unsafe() == "e";
        }
        break;
      default:
        break;
    }
  }
}

struct PairHash {
  size_t operator()(const std::pair<uint64_t, uint64_t>& key) const {
    return static_cast<size_t>(mix(key.first, key.second));
  }
};

// An open B event.
struct SyncRecord {
  int64_t ts_ns;
  uint32_t track;
  uint32_t name;
  uint32_t cat;
  uint32_t args;
};

struct OpenAsync {
  int64_t start_ns;
  uint32_t name, cat, args, track;
};

class ModelBuilder {
 public:
  ModelBuilder(const std::string& label, const ModelOptions& options, TraceModel* model)
      : label_(label), options_(options), model_(*model) {
    model_.strings.emplace_back();  // id 0: ""
    interned_.emplace(std::string(), 0);
    model_.args_json.emplace_back();
  }

  // One element of the events array; `index` is its position in the array.
  void add(element value, size_t index) {
    if (!value.is_object()) {
      throw TraceError(label_ + ": event " + std::to_string(index) + " is not a JSON object");
    }
    RawEvent event;
    read_event(value.get_object().value_unsafe(), index, label_, &event);
    if (event.ph == 0) {
      throw TraceError(label_ + ": event " + std::to_string(index) +
                       " has no \"ph\": expected a one-letter phase string such as \"X\", "
                       "\"B\", \"E\", \"i\" or \"M\"");
    }
    uint64_t max_name = read_limits().max_name_bytes;
    if (event.name.size() > max_name || event.cat.size() > max_name) {
      bool is_name = event.name.size() > max_name;
      throw TraceError(label_ + ": event " + std::to_string(index) + ": \"" +
                       (is_name ? "name" : "cat") + "\" is " +
                       std::to_string(is_name ? event.name.size() : event.cat.size()) +
                       " bytes long; the limit is " + std::to_string(max_name));
    }
    if (event.ph != 'M' && event.has_ts) {
      int64_t ts = event.ts;
      int64_t end = event.ph == 'X' && event.has_dur ? ts + event.dur : ts;
      if (!have_ts_) {
        model_.min_ts_ns = ts;
        model_.max_ts_ns = end;
        have_ts_ = true;
      }
      model_.min_ts_ns = std::min(model_.min_ts_ns, ts);
      model_.max_ts_ns = std::max(model_.max_ts_ns, end);
    }
    handle(event, index);
  }

  void finish(size_t total_events) {
    model_.total_events = total_events;
    for (auto& stack : open_sync_) model_.unclosed_begins += stack.size();
    for (auto& [key, stack] : open_async_) model_.unclosed_begins += stack.size();
    for (auto& series : model_.counters) {
      std::stable_sort(
          series.samples.begin(), series.samples.end(),
          [](const CounterSample& a, const CounterSample& b) { return a.ts_ns < b.ts_ns; });
    }
    for (auto& process : model_.processes) {
      if (!process.named) process.name = "pid " + process.pid.text;
    }
    for (auto& track : model_.tracks) {
      if (!track.named) track.name = "thread " + track.tid.text;
    }
    if (options_.assign_lanes) assign_lanes();
  }

 private:
  void add_slice(const Slice& slice) {
    uint64_t key = (uint64_t{slice.cat} << 33) | (uint64_t{slice.name} << 1) |
                   (slice.kind == SliceKind::kAsync ? 1 : 0);
    auto [found, inserted] =
        duration_index_.try_emplace(key, static_cast<uint32_t>(model_.duration_stats.size()));
    if (inserted) {
      DurationStat stat;
      stat.cat = slice.cat;
      stat.name = slice.name;
      stat.kind = slice.kind;
      model_.duration_stats.push_back(stat);
    }
    DurationStat& stat = model_.duration_stats[found->second];
    ++stat.count;
    // Saturates: each duration is within range, but a sum of many need not be.
    if (__builtin_add_overflow(stat.total_ns, slice.dur_ns, &stat.total_ns)) {
      stat.total_ns = INT64_MAX;
    }
    stat.min_ns = std::min(stat.min_ns, slice.dur_ns);
    stat.max_ns = std::max(stat.max_ns, slice.dur_ns);
    if (options_.keep_slices) model_.slices.push_back(slice);
  }

  uint32_t intern(std::string_view text) {
    auto found = interned_.find(text);
    if (found != interned_.end()) return found->second;
    uint32_t id = static_cast<uint32_t>(model_.strings.size());
    model_.strings.emplace_back(text);
    interned_.emplace(std::string(text), id);
    return id;
  }

  uint32_t intern_owned(const std::string& text) {
    auto found = owned_interned_.find(text);
    if (found != owned_interned_.end()) return found->second;
    uint32_t id = static_cast<uint32_t>(model_.strings.size());
    model_.strings.push_back(text);
    owned_interned_.emplace(text, id);
    return id;
  }

  uint32_t args_of(const RawEvent& event) {
    if (!options_.keep_args || !event.has_args) return 0;
    if (event.args.is_object()) {
      object args = event.args.get_object().value_unsafe();
      if (args.size() == 0) return 0;
    }
    std::string text = simdjson::minify(event.args);
    auto found = args_index_.find(text);
    if (found != args_index_.end()) return found->second;
    uint32_t id = static_cast<uint32_t>(model_.args_json.size());
    model_.args_json.push_back(text);
    args_index_.emplace(std::move(text), id);
    return id;
  }

  uint32_t process_of(const RawEvent& event) {
    IdValue pid = event.has_pid ? read_id(event.pid) : IdValue{};
    if (pid.kind == IdValue::Kind::kNone) pid.text = "?";
    uint64_t key = mix(pid.bits, static_cast<uint64_t>(pid.kind));
    auto range = process_index_.equal_range(key);
    for (auto it = range.first; it != range.second; ++it) {
      if (model_.processes[it->second].pid.same(pid)) return it->second;
    }
    uint32_t id = static_cast<uint32_t>(model_.processes.size());
    Process process;
    process.pid = std::move(pid);
    model_.processes.push_back(std::move(process));
    process_index_.emplace(key, id);
    return id;
  }

  uint32_t track_of(const RawEvent& event) {
    // Events of one thread usually come together: remember the last lookup.
    uint64_t pid_bits = event.has_pid ? raw_bits(event.pid) : 0;
    uint64_t tid_bits = event.has_tid ? raw_bits(event.tid) : 0;
    bool any_string = (event.has_pid && event.pid.is_string()) ||
                      (event.has_tid && event.tid.is_string()) || !event.has_pid || !event.has_tid;
    if (have_last_track_ && !any_string && pid_bits == last_pid_bits_ &&
        tid_bits == last_tid_bits_) {
      return last_track_;
    }
    uint32_t process = process_of(event);
    IdValue tid = event.has_tid ? read_id(event.tid) : IdValue{};
    if (tid.kind == IdValue::Kind::kNone) tid.text = "?";
    std::pair<uint64_t, uint64_t> key{process, mix(tid.bits, static_cast<uint64_t>(tid.kind))};
    uint32_t id = 0;
    auto range = track_index_.equal_range(key);
    bool found = false;
    for (auto it = range.first; it != range.second; ++it) {
      if (model_.tracks[it->second].tid.same(tid)) {
        id = it->second;
        found = true;
        break;
      }
    }
    if (!found) {
      id = static_cast<uint32_t>(model_.tracks.size());
      Track track;
      track.process = process;
      track.tid = std::move(tid);
      model_.tracks.push_back(std::move(track));
      track_index_.emplace(key, id);
      open_sync_.emplace_back();
    }
    last_pid_bits_ = pid_bits;
    last_tid_bits_ = tid_bits;
    last_track_ = id;
    have_last_track_ = !any_string;
    return id;
  }

  static uint64_t raw_bits(element value) {
    switch (value.type()) {
      case element_type::INT64:
        return static_cast<uint64_t>(value.get_int64().value_unsafe());
      case element_type::UINT64:
        return value.get_uint64().value_unsafe();
      case element_type::DOUBLE: {
        double d = value.get_double().value_unsafe();
        uint64_t bits;
        std::memcpy(&bits, &d, sizeof d);
        return bits;
      }
      default:
        return 0;
    }
  }

  void require_ts(const RawEvent& event, size_t index) {
    if (!event.has_ts) {
      throw TraceError(label_ + ": event " + std::to_string(index) + " (ph '" +
                       std::string(1, event.ph) + "', name \"" + std::string(event.name) +
                       "\") has no \"ts\"");
    }
  }

  void handle(const RawEvent& event, size_t index) {
    switch (event.ph) {
      case 'M':
        ++model_.metadata_events;
        handle_metadata(event);
        return;
      case 'B':
      case 'E': {
        require_ts(event, index);
        uint32_t track = track_of(event);
        model_.tracks[track].used = true;
        // An E closes the most recent open B of its thread, in file order (the format's rule;
        // MXNet writes each record's B and E next to each other, even when records are out of
        // time order, so this pairs its files too).
        auto& stack = open_sync_[track];
        if (event.ph == 'B') {
          stack.push_back(
              SyncRecord{event.ts, track, intern(event.name), intern(event.cat), args_of(event)});
          return;
        }
        if (stack.empty()) {
          ++model_.unmatched_ends;
          return;
        }
        const SyncRecord& open = stack.back();
        Slice slice;
        slice.start_ns = open.ts_ns;
        slice.dur_ns = std::max<int64_t>(0, event.ts - open.ts_ns);
        slice.name = open.name;
        slice.cat = open.cat;
        slice.args = open.args ? open.args : args_of(event);
        slice.track = track;
        add_slice(slice);
        stack.pop_back();
        return;
      }
      case 'X': {
        require_ts(event, index);
        if (!event.has_dur) {
          throw TraceError(label_ + ": event " + std::to_string(index) + " (ph 'X', name \"" +
                           std::string(event.name) + "\") has no \"dur\"");
        }
        if (event.dur < 0) {
          throw TraceError(label_ + ": event " + std::to_string(index) + " (name \"" +
                           std::string(event.name) + "\") has a negative \"dur\"");
        }
        uint32_t track = track_of(event);
        model_.tracks[track].used = true;
        Slice slice;
        slice.start_ns = event.ts;
        slice.dur_ns = event.dur;
        slice.name = intern(event.name);
        slice.cat = intern(event.cat);
        slice.args = args_of(event);
        slice.track = track;
        add_slice(slice);
        return;
      }
      case 'b':
      case 'e':
      case '(':
      case ')':
        require_ts(event, index);
        if (!options_.sync_slices_only) handle_async(event);
        return;
      case 'C':
        require_ts(event, index);
        if (!options_.sync_slices_only) handle_counter(event);
        return;
      case 'i':
      case 'I':
      case 'n':
      case 'R': {
        require_ts(event, index);
        if (options_.sync_slices_only) return;
        uint32_t track = track_of(event);
        model_.tracks[track].used = true;
        Instant instant;
        instant.ts_ns = event.ts;
        instant.name = intern(event.name);
        instant.cat = intern(event.cat);
        instant.args = args_of(event);
        instant.track = track;
        instant.scope = event.scope == 'g' || event.scope == 'p' ? event.scope : 't';
        model_.instants.push_back(instant);
        return;
      }
      case 's':
      case 't':
      case 'f':
        require_ts(event, index);
        if (options_.keep_flows) handle_flow(event);
        return;
      default:
        ++model_.ignored_events;
        return;
    }
  }

  void handle_metadata(const RawEvent& event) {
    if (!event.has_args || !event.args.is_object()) return;
    object args = event.args.get_object().value_unsafe();
    if (event.name == "process_name" || event.name == "process_sort_index") {
      Process& process = model_.processes[process_of(event)];
      if (event.name == "process_name") {
        element name;
        if (!args["name"].get(name) && name.is_string()) {
          process.name = std::string(name.get_string().value_unsafe());
          process.named = true;
        }
      } else {
        element sort_index;
        double value;
        if (!args["sort_index"].get(sort_index) && read_number(sort_index, &value)) {
          process.sort_index = static_cast<int64_t>(value);
          process.has_sort_index = true;
        }
      }
    } else if (event.name == "thread_name" || event.name == "thread_sort_index") {
      Track& track = model_.tracks[track_of(event)];
      if (event.name == "thread_name") {
        element name;
        if (!args["name"].get(name) && name.is_string()) {
          track.name = std::string(name.get_string().value_unsafe());
          track.named = true;
        }
      } else {
        element sort_index;
        double value;
        if (!args["sort_index"].get(sort_index) && read_number(sort_index, &value)) {
          track.sort_index = static_cast<int64_t>(value);
          track.has_sort_index = true;
        }
      }
    }
  }

  void handle_async(const RawEvent& event) {
    uint32_t track = track_of(event);
    model_.tracks[track].used = true;
    uint32_t process = model_.tracks[track].process;
    uint32_t cat = intern(event.cat);
    // b/e pair on (process, category, id), as the importers do. Context events ( and ) have no
    // id: they pair on their thread.
    bool context = event.ph == '(' || event.ph == ')';
    uint64_t id_key = 0;
    if (context) {
      id_key = mix(track, 0x636f6e74657874ULL);
    } else if (event.has_id) {
      IdValue id = read_id(event.id);
      id_key = mix(id.bits, static_cast<uint64_t>(id.kind));
    }
    std::pair<uint64_t, uint64_t> key{mix(process, cat), id_key};
    auto& stack = open_async_[key];
    int64_t ts = event.ts;
    if (event.ph == 'b' || event.ph == '(') {
      stack.push_back(OpenAsync{ts, intern(event.name), cat, args_of(event), track});
      return;
    }
    if (stack.empty()) {
      ++model_.unmatched_ends;
      return;
    }
    // The end closes the most recent open span of the same name (all spans of one id when the
    // end has no name), so tasks that share an id, as MXNet's do, still pair correctly.
    size_t match = stack.size() - 1;
    if (!event.name.empty()) {
      uint32_t name = intern(event.name);
      size_t i = stack.size();
      while (i > 0 && stack[i - 1].name != name) --i;
      if (i == 0) {
        ++model_.unmatched_ends;
        return;
      }
      match = i - 1;
    }
    OpenAsync open = stack[match];
    stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(match));
    Slice slice;
    slice.start_ns = open.start_ns;
    slice.dur_ns = std::max<int64_t>(0, ts - open.start_ns);
    slice.name = open.name;
    slice.cat = open.cat;
    slice.args = open.args ? open.args : args_of(event);
    slice.track = open.track;
    slice.kind = SliceKind::kAsync;
    add_slice(slice);
  }

  void handle_counter(const RawEvent& event) {
    if (!event.has_args || !event.args.is_object()) return;
    uint32_t process = process_of(event);
    uint32_t name = intern(event.name);
    uint32_t cat = intern(event.cat);
    int64_t ts = event.ts;
    object args = event.args.get_object().value_unsafe();
    for (auto field : args) {
      double value;
      if (!read_number(field.value, &value)) continue;
      uint32_t series_key = intern(field.key);
      uint64_t key = mix(mix(process, name), series_key);
      auto found = counter_index_.find(key);
      uint32_t series;
      if (found != counter_index_.end()) {
        series = found->second;
      } else {
        series = static_cast<uint32_t>(model_.counters.size());
        CounterSeries created;
        created.process = process;
        created.cat = cat;
        // MXNet and nanomx name the single series after the counter itself.
        created.name = field.key == event.name
                           ? name
                           : intern_owned(std::string(event.name) + "." + std::string(field.key));
        model_.counters.push_back(std::move(created));
        counter_index_.emplace(key, series);
      }
      model_.counters[series].samples.push_back(CounterSample{ts, value});
    }
  }

  void handle_flow(const RawEvent& event) {
    uint32_t track = track_of(event);
    model_.tracks[track].used = true;
    uint64_t id_key = 0;
    if (event.has_id) {
      IdValue id = read_id(event.id);
      id_key = mix(id.bits, static_cast<uint64_t>(id.kind));
    }
    uint32_t cat = intern(event.cat);
    std::pair<uint64_t, uint64_t> key{cat, id_key};
    // Only open flows stay in the index: an 'f' ends its flow (a later point with the same
    // category and id starts another), which keeps the index small and warm on traces with
    // hundreds of thousands of flows.
    auto found = flow_index_.find(key);
    uint32_t flow;
    if (found == flow_index_.end()) {
      flow = model_.flow_count++;
      if (event.ph != 'f') flow_index_.emplace(key, flow);
    } else if (event.ph == 's') {
      flow = model_.flow_count++;
      found->second = flow;
    } else {
      flow = found->second;
      if (event.ph == 'f') flow_index_.erase(found);
    }
    FlowPoint point;
    point.ts_ns = event.ts;
    point.track = track;
    point.flow = flow;
    point.cat = cat;
    point.phase = event.ph;
    point.bind_enclosing = event.bind_enclosing;
    model_.flow_points.push_back(point);
  }

  // Sync slices: nesting depth per thread. Async spans: greedy packing into lanes.
  void assign_lanes() {
    auto& slices = model_.slices;
    std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      if (a.track != b.track) return a.track < b.track;
      if (a.kind != b.kind) return a.kind < b.kind;
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      return a.dur_ns > b.dur_ns;  // the enclosing slice first
    });
    std::vector<int64_t> open_ends;
    std::vector<int64_t> lane_ends;
    for (size_t i = 0; i < slices.size();) {
      size_t j = i;
      while (j < slices.size() && slices[j].track == slices[i].track &&
             slices[j].kind == slices[i].kind) {
        ++j;
      }
      Track& track = model_.tracks[slices[i].track];
      if (slices[i].kind == SliceKind::kSync) {
        open_ends.clear();
        for (size_t k = i; k < j; ++k) {
          while (!open_ends.empty() && open_ends.back() <= slices[k].start_ns) open_ends.pop_back();
          // A slice that starts inside one and ends after it goes one level deeper: lanes never
          // hold overlapping slices, which the viewer's level of detail relies on.
          slices[k].lane = static_cast<uint32_t>(open_ends.size());
          open_ends.push_back(slices[k].start_ns + slices[k].dur_ns);
          track.sync_lanes = std::max(track.sync_lanes, slices[k].lane + 1);
        }
      } else {
        lane_ends.clear();
        for (size_t k = i; k < j; ++k) {
          size_t lane = 0;
          while (lane < lane_ends.size() && lane_ends[lane] > slices[k].start_ns) ++lane;
          if (lane == lane_ends.size()) lane_ends.push_back(0);
          lane_ends[lane] = slices[k].start_ns + std::max<int64_t>(slices[k].dur_ns, 1);
          slices[k].lane = static_cast<uint32_t>(lane);
          track.async_lanes = std::max(track.async_lanes, slices[k].lane + 1);
        }
      }
      i = j;
    }
  }

  const std::string& label_;
  const ModelOptions& options_;
  TraceModel& model_;

  // Keys are owned: in a streamed read the DOM holding the text is reused chunk after chunk.
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> interned_;
  std::unordered_map<std::string, uint32_t> owned_interned_;
  std::unordered_map<std::string, uint32_t> args_index_;
  std::unordered_multimap<uint64_t, uint32_t> process_index_;
  std::unordered_multimap<std::pair<uint64_t, uint64_t>, uint32_t, PairHash> track_index_;
  std::unordered_map<std::pair<uint64_t, uint64_t>, std::vector<OpenAsync>, PairHash> open_async_;
  std::unordered_map<uint64_t, uint32_t> counter_index_;
  std::unordered_map<std::pair<uint64_t, uint64_t>, uint32_t, PairHash> flow_index_;

  std::vector<std::vector<SyncRecord>> open_sync_;  // per track: B events not yet ended
  std::unordered_map<uint64_t, uint32_t> duration_index_;
  bool have_ts_ = false;

  bool have_last_track_ = false;
  uint64_t last_pid_bits_ = 0, last_tid_bits_ = 0;
  uint32_t last_track_ = 0;
};

}  // namespace

bool is_device_process_name(std::string_view name) {
  for (std::string_view prefix : {"cpu/", "gpu/", "cpu pinned/", "cpu shared/"}) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

TraceModel build_model(const LoadedTrace& trace, const ModelOptions& options) {
  TraceModel model;
  ModelBuilder builder(trace.path, options, &model);
  size_t index = 0;
  for (element value : trace.events) builder.add(value, index++);
  builder.finish(index);
  return model;
}

TraceModel stream_model(const std::string& path, const ModelOptions& options, StreamInfo* info,
                        size_t chunk_bytes) {
  TraceModel model;
  ModelBuilder builder(path, options, &model);
  *info = stream_events(
      path, [&](element value, size_t index) { builder.add(value, index); }, chunk_bytes);
  builder.finish(info->events);
  return model;
}

}  // namespace nanomx::trace
