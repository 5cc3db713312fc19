#include "view.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "critical_path.h"
#include "diff.h"
#include "json_out.h"
#include "memory_profile.h"
#include "summary.h"
#include "trace_file.h"
#include "trace_model.h"

namespace nanomx::trace {
namespace {

// The binary part of the page's data: typed-array sections, each 8-byte aligned, described by
// the JSON "sections" map (name -> [byte offset, element count, type]).
class SectionWriter {
 public:
  template <typename T>
  void add(const std::string& name, const std::vector<T>& values, const char* type) {
    while (bytes_.size() % 8) bytes_.push_back(0);
    size_t offset = bytes_.size();
    bytes_.resize(offset + values.size() * sizeof(T));
    if (!values.empty())
      std::memcpy(bytes_.data() + offset, values.data(), values.size() * sizeof(T));
    if (!index_.empty()) index_ += ",";
    append_json_string(&index_, name);
    append_all(&index_, ":[", std::to_string(offset), ",", std::to_string(values.size()), ",\"",
               type, "\"]");
  }
  const std::string& index() const { return index_; }
  // Times in ns as differences from the previous element (the page adds them back up): the
  // differences are small integers, whose doubles are mostly zero bytes, so the page compresses
  // to about half.
  void add_deltas(const std::string& name, std::vector<double> values) {
    for (size_t i = values.size(); i-- > 1;) values[i] -= values[i - 1];
    add(name, values, "f64d");
  }
  const std::vector<unsigned char>& bytes() const { return bytes_; }

 private:
  std::vector<unsigned char> bytes_;
  std::string index_;
};

std::string gzip(const std::vector<unsigned char>& data, int level) {
  z_stream stream{};
  if (deflateInit2(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw TraceError("view: zlib initialisation failed");
  }
  std::string out;
  out.resize(deflateBound(&stream, data.size()));
  stream.next_in = const_cast<unsigned char*>(data.data());
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<unsigned char*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  int code = deflate(&stream, Z_FINISH);
  deflateEnd(&stream);
  if (code != Z_STREAM_END) throw TraceError("view: zlib compression failed");
  out.resize(stream.total_out);
  return out;
}

void append_base64(std::string* out, const std::string& data) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  size_t start = out->size();
  out->resize(start + (n + 2) / 3 * 4);
  char* p = out->data() + start;
  size_t i = 0;
  for (; i + 2 < n; i += 3) {
    uint32_t v = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    *p++ = kAlphabet[v >> 18];
    *p++ = kAlphabet[(v >> 12) & 63];
    *p++ = kAlphabet[(v >> 6) & 63];
    *p++ = kAlphabet[v & 63];
  }
  if (i < n) {
    uint32_t v = uint32_t{bytes[i]} << 16;
    if (i + 1 < n) v |= uint32_t{bytes[i + 1]} << 8;
    *p++ = kAlphabet[v >> 18];
    *p++ = kAlphabet[(v >> 12) & 63];
    *p++ = i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    *p++ = '=';
  }
}

// Orders ids the way a reader expects: integers by value, then strings.
bool id_less(const IdValue& a, const IdValue& b) {
  if (a.kind != b.kind) return a.kind < b.kind;
  if (a.kind == IdValue::Kind::kInt) {
    return static_cast<int64_t>(a.bits) < static_cast<int64_t>(b.bits);
  }
  return a.text < b.text;
}

bool blob_too_large(size_t meta, size_t sections) { return meta + sections + 16 > UINT32_MAX; }

struct Row {
  bool counter = false;
  uint32_t process = 0;
  uint32_t index = 0;  // track or counter series
};

TraceModel view_model(const std::string& input, ViewResult* result, StreamInfo* info) {
  ModelOptions options;
  options.keep_args = true;
  options.assign_lanes = true;
  options.keep_flows = true;
  TraceModel model = stream_model(input, options, info);
  result->events += model.total_events;
  result->input_bytes += info->file_bytes;
  result->truncated_bytes += info->truncated ? info->ignored_bytes : 0;
  result->unclosed_begins += model.unclosed_begins;
  result->unmatched_ends += model.unmatched_ends;
  return model;
}

// Appends `from` to `into` as further processes (named "<name> [label]"), its times shifted by
// `shift_ns`. Lanes stay valid: they are per track, and tracks are not shared.
void append_model(TraceModel& into, TraceModel& from, const std::string& label, int64_t shift_ns) {
  std::unordered_map<std::string, uint32_t> string_ids;
  for (uint32_t i = 0; i < into.strings.size(); ++i) string_ids.emplace(into.strings[i], i);
  std::vector<uint32_t> string_map(from.strings.size());
  for (uint32_t i = 0; i < from.strings.size(); ++i) {
    auto [found, inserted] =
        string_ids.try_emplace(from.strings[i], static_cast<uint32_t>(into.strings.size()));
    if (inserted) into.strings.push_back(from.strings[i]);
    string_map[i] = found->second;
  }
  uint32_t args_base = static_cast<uint32_t>(into.args_json.size()) - 1;  // [0] is shared: none
  for (size_t i = 1; i < from.args_json.size(); ++i) into.args_json.push_back(from.args_json[i]);
  auto args_id = [&](uint32_t id) { return id == 0 ? 0 : id + args_base; };
  uint32_t process_base = static_cast<uint32_t>(into.processes.size());
  uint32_t track_base = static_cast<uint32_t>(into.tracks.size());
  for (Process& process : from.processes) {
    process.name += " [" + label + "]";
    into.processes.push_back(std::move(process));
  }
  for (Track& track : from.tracks) {
    track.process += process_base;
    into.tracks.push_back(std::move(track));
  }
  for (Slice slice : from.slices) {
    slice.start_ns += shift_ns;
    slice.name = string_map[slice.name];
    slice.cat = string_map[slice.cat];
    slice.args = args_id(slice.args);
    slice.track += track_base;
    into.slices.push_back(slice);
  }
  for (Instant instant : from.instants) {
    instant.ts_ns += shift_ns;
    instant.name = string_map[instant.name];
    instant.cat = string_map[instant.cat];
    instant.args = args_id(instant.args);
    instant.track += track_base;
    into.instants.push_back(instant);
  }
  for (CounterSeries& series : from.counters) {
    series.process += process_base;
    series.name = string_map[series.name];
    series.cat = string_map[series.cat];
    for (CounterSample& sample : series.samples) sample.ts_ns += shift_ns;
    into.counters.push_back(std::move(series));
  }
  for (FlowPoint point : from.flow_points) {
    point.ts_ns += shift_ns;
    point.track += track_base;
    point.flow += into.flow_count;
    point.cat = string_map[point.cat];
    into.flow_points.push_back(point);
  }
  into.flow_count += from.flow_count;
  for (DurationStat stat : from.duration_stats) {
    stat.name = string_map[stat.name];
    stat.cat = string_map[stat.cat];
    into.duration_stats.push_back(stat);
  }
  into.total_events += from.total_events;
  into.metadata_events += from.metadata_events;
  into.unclosed_begins += from.unclosed_begins;
  into.unmatched_ends += from.unmatched_ends;
  into.min_ts_ns = std::min(into.min_ts_ns, from.min_ts_ns + shift_ns);
  into.max_ts_ns = std::max(into.max_ts_ns, from.max_ts_ns + shift_ns);
}

// Shifts every time of `model` by `shift_ns`.
void shift_model(TraceModel& model, int64_t shift_ns) {
  for (Slice& slice : model.slices) slice.start_ns += shift_ns;
  for (Instant& instant : model.instants) instant.ts_ns += shift_ns;
  for (CounterSeries& series : model.counters) {
    for (CounterSample& sample : series.samples) sample.ts_ns += shift_ns;
  }
  for (FlowPoint& point : model.flow_points) point.ts_ns += shift_ns;
  model.min_ts_ns += shift_ns;
  model.max_ts_ns += shift_ns;
}

// What the page shows beyond the trace.
struct PageExtras {
  bool critical_path = false;
  std::optional<int64_t> step;
  std::string diff_json;       // the "diff" member's value, or empty
  std::string memory_json;     // the "memory" member's value, or empty
  std::string summary_source;  // the file whose aggregate table the page shows; empty: all
  std::optional<std::vector<DisplayCategory>> table;  // instead of the model's own
};

std::string critical_path_json(const CriticalPath& path, const std::vector<uint32_t>& row_of_track,
                               int64_t origin) {
  std::string out = "{\"step\":";
  out += path.step ? std::to_string(*path.step) : "null";
  append_all(&out, ",\"lengthNs\":", std::to_string(path.length_ns()), ",\"edges\":");
  append_json_string(&out, path.edges == PathEdges::kDependencyFlows ? "dependency flows"
                           : path.edges == PathEdges::kPushFlows     ? "push flows only"
                                                                     : "thread order only");
  out += ",\"kinds\":[";
  for (size_t i = 0; i < path.by_kind.size(); ++i) {
    if (i) out += ',';
    out += "[";
    append_json_string(&out, path.by_kind[i].key);
    append_all(&out, ",", std::to_string(path.by_kind[i].ns), "]");
  }
  out += "],\"shorten\":[";
  for (size_t i = 0; i < path.levers.size(); ++i) {
    if (i) out += ',';
    out += "[";
    append_json_string(&out, path.levers[i].what);
    append_all(&out, ",", std::to_string(path.levers[i].ns), "]");
  }
  // Segments in time order: [kind (PathKind), start, end (ns from the page's origin), row, slice
  // index or -1].
  out += "],\"segments\":[";
  for (size_t i = 0; i < path.segments.size(); ++i) {
    const PathSegment& segment = path.segments[i];
    if (i) out += ',';
    append_all(
        &out, "[", std::to_string(static_cast<int>(segment.kind)), ",",
        std::to_string(segment.start_ns - origin), ",", std::to_string(segment.end_ns - origin),
        ",", std::to_string(row_of_track[segment.track]), ",", std::to_string(segment.slice), "]");
  }
  out += "]}";
  return out;
}

ViewResult write_page(TraceModel& model, const std::string& input, const PageExtras& extras,
                      ViewResult result, const std::string& output, int level) {
  auto table =
      extras.table ? *extras.table : display_rows(aggregate(model), SortKey::kTotal, false);

  // Rows: device processes first, then by sort index and pid; in a process its threads (by sort
  // index, then tid) and then its counters (by name).
  std::vector<uint32_t> process_order(model.processes.size());
  std::iota(process_order.begin(), process_order.end(), 0);
  std::stable_sort(process_order.begin(), process_order.end(), [&](uint32_t a, uint32_t b) {
    const Process& pa = model.processes[a];
    const Process& pb = model.processes[b];
    bool da = is_device_process_name(pa.name), db = is_device_process_name(pb.name);
    if (da != db) return da;
    if (pa.sort_index != pb.sort_index) return pa.sort_index < pb.sort_index;
    return id_less(pa.pid, pb.pid);
  });
  std::vector<std::vector<uint32_t>> tracks_of(model.processes.size());
  for (uint32_t t = 0; t < model.tracks.size(); ++t) {
    if (model.tracks[t].used) tracks_of[model.tracks[t].process].push_back(t);
  }
  std::vector<std::vector<uint32_t>> counters_of(model.processes.size());
  for (uint32_t c = 0; c < model.counters.size(); ++c) {
    counters_of[model.counters[c].process].push_back(c);
  }
  std::vector<Row> rows;
  std::vector<uint32_t> row_of_track(model.tracks.size(), UINT32_MAX);
  for (uint32_t p : process_order) {
    auto& tracks = tracks_of[p];
    std::stable_sort(tracks.begin(), tracks.end(), [&](uint32_t a, uint32_t b) {
      const Track& ta = model.tracks[a];
      const Track& tb = model.tracks[b];
      if (ta.sort_index != tb.sort_index) return ta.sort_index < tb.sort_index;
      return id_less(ta.tid, tb.tid);
    });
    for (uint32_t t : tracks) {
      row_of_track[t] = static_cast<uint32_t>(rows.size());
      rows.push_back(Row{false, p, t});
    }
    auto& counters = counters_of[p];
    std::stable_sort(counters.begin(), counters.end(), [&](uint32_t a, uint32_t b) {
      return model.strings[model.counters[a].name] < model.strings[model.counters[b].name];
    });
    for (uint32_t c : counters) rows.push_back(Row{true, p, c});
  }
  result.rows = rows.size();

  // Slices grouped by (row, sync lanes then async lanes, lane), each lane in time order.
  auto& slices = model.slices;
  std::sort(slices.begin(), slices.end(), [&](const Slice& a, const Slice& b) {
    uint32_t ra = row_of_track[a.track], rb = row_of_track[b.track];
    if (ra != rb) return ra < rb;
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.lane != b.lane) return a.lane < b.lane;
    return a.start_ns < b.start_ns;
  });
  result.slices = slices.size();
  int64_t origin = model.min_ts_ns;
  // After the sort, so that the path's slice indices are the page's.
  std::string path_json;
  if (extras.critical_path) {
    path_json =
        critical_path_json(find_critical_path(model, input, extras.step), row_of_track, origin);
  }
  std::vector<double> slice_start(slices.size()), slice_dur(slices.size());
  std::vector<uint32_t> slice_name(slices.size()), slice_cat(slices.size()),
      slice_args(slices.size());
  // Per row: [first slice, count] for each lane, sync lanes first.
  std::vector<std::vector<std::pair<size_t, size_t>>> lanes_of_row(rows.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    slice_start[i] = static_cast<double>(s.start_ns - origin);
    slice_dur[i] = static_cast<double>(s.dur_ns);
    slice_name[i] = s.name;
    slice_cat[i] = s.cat;
    slice_args[i] = s.args;
    const Track& track = model.tracks[s.track];
    auto& lanes = lanes_of_row[row_of_track[s.track]];
    if (lanes.empty()) lanes.assign(track.sync_lanes + track.async_lanes, {i, 0});
    size_t lane = s.kind == SliceKind::kSync ? s.lane : track.sync_lanes + s.lane;
    if (lanes[lane].second == 0) lanes[lane].first = i;
    ++lanes[lane].second;
  }

  std::sort(model.instants.begin(), model.instants.end(),
            [](const Instant& a, const Instant& b) { return a.ts_ns < b.ts_ns; });
  std::vector<double> instant_ts;
  std::vector<uint32_t> instant_name, instant_cat, instant_args, instant_row, instant_scope;
  for (const Instant& instant : model.instants) {
    instant_ts.push_back(static_cast<double>(instant.ts_ns - origin));
    instant_name.push_back(instant.name);
    instant_cat.push_back(instant.cat);
    instant_args.push_back(instant.args);
    instant_row.push_back(row_of_track[instant.track]);
    instant_scope.push_back(static_cast<uint32_t>(instant.scope));
  }

  std::vector<double> counter_ts, counter_value;
  std::vector<std::pair<size_t, size_t>> counter_range(model.counters.size());
  for (size_t c = 0; c < model.counters.size(); ++c) {
    counter_range[c] = {counter_ts.size(), model.counters[c].samples.size()};
    for (const CounterSample& sample : model.counters[c].samples) {
      counter_ts.push_back(static_cast<double>(sample.ts_ns - origin));
      counter_value.push_back(sample.value);
    }
  }

  std::stable_sort(model.flow_points.begin(), model.flow_points.end(),
                   [](const FlowPoint& a, const FlowPoint& b) {
                     return a.flow != b.flow ? a.flow < b.flow : a.ts_ns < b.ts_ns;
                   });
  std::vector<double> flow_ts;
  std::vector<uint32_t> flow_id, flow_row, flow_bind;
  for (const FlowPoint& point : model.flow_points) {
    flow_ts.push_back(static_cast<double>(point.ts_ns - origin));
    flow_id.push_back(point.flow);
    flow_row.push_back(row_of_track[point.track]);
    flow_bind.push_back(point.bind_enclosing ? 1 : 0);
  }

  SectionWriter sections;
  sections.add_deltas("sliceStart", slice_start);
  sections.add("sliceDur", slice_dur, "f64");
  sections.add("sliceName", slice_name, "u32");
  sections.add("sliceCat", slice_cat, "u32");
  sections.add("sliceArgs", slice_args, "u32");
  sections.add_deltas("instantTs", instant_ts);
  sections.add("instantName", instant_name, "u32");
  sections.add("instantCat", instant_cat, "u32");
  sections.add("instantArgs", instant_args, "u32");
  sections.add("instantRow", instant_row, "u32");
  sections.add("instantScope", instant_scope, "u32");
  sections.add_deltas("counterTs", counter_ts);
  sections.add("counterValue", counter_value, "f64");
  sections.add_deltas("flowTs", flow_ts);
  sections.add("flowId", flow_id, "u32");
  sections.add("flowRow", flow_row, "u32");
  sections.add("flowBind", flow_bind, "u32");

  // The JSON part: names, rows, the aggregate table, and where each section lies.
  std::string meta = "{\"version\":1,\"source\":";
  append_json_string(&meta, std::filesystem::path(input).filename().string());
  append_all(&meta, ",\"events\":", std::to_string(model.total_events),
             ",\"originNs\":", std::to_string(origin),
             ",\"spanNs\":", std::to_string(model.max_ts_ns - origin),
             ",\"truncatedBytes\":", std::to_string(result.truncated_bytes),
             ",\"unmatchedEnds\":", std::to_string(model.unmatched_ends),
             ",\"unclosedBegins\":", std::to_string(model.unclosed_begins));
  meta += ",\"strings\":[";
  for (size_t i = 0; i < model.strings.size(); ++i) {
    if (i) meta += ',';
    append_json_string(&meta, model.strings[i]);
  }
  meta += "],\"args\":[";
  for (size_t i = 0; i < model.args_json.size(); ++i) {
    if (i) meta += ',';
    append_json_string(&meta, model.args_json[i]);
  }
  meta += "],\"processes\":[";
  for (size_t i = 0; i < model.processes.size(); ++i) {
    const Process& process = model.processes[i];
    if (i) meta += ',';
    meta += "{\"name\":";
    append_json_string(&meta, process.name);
    meta += ",\"pid\":";
    append_json_string(&meta, process.pid.text);
    append_all(&meta, ",\"device\":", is_device_process_name(process.name) ? "true" : "false", "}");
  }
  meta += "],\"rows\":[";
  for (size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    if (r) meta += ',';
    if (row.counter) {
      const CounterSeries& series = model.counters[row.index];
      append_all(&meta, "{\"kind\":\"counter\",\"process\":", std::to_string(row.process),
                 ",\"name\":", std::to_string(series.name), ",\"cat\":", std::to_string(series.cat),
                 ",\"first\":", std::to_string(counter_range[row.index].first),
                 ",\"count\":", std::to_string(counter_range[row.index].second), "}");
    } else {
      const Track& track = model.tracks[row.index];
      append_all(&meta, "{\"kind\":\"thread\",\"process\":", std::to_string(row.process),
                 ",\"name\":");
      append_json_string(&meta, track.name);
      meta += ",\"tid\":";
      append_json_string(&meta, track.tid.text);
      append_all(&meta, ",\"syncLanes\":", std::to_string(track.sync_lanes),
                 ",\"asyncLanes\":", std::to_string(track.async_lanes), ",\"lanes\":[");
      const auto& lanes = lanes_of_row[r];
      for (size_t l = 0; l < lanes.size(); ++l) {
        if (l) meta += ',';
        append_all(&meta, "[", std::to_string(lanes[l].first), ",", std::to_string(lanes[l].second),
                   "]");
      }
      meta += "]}";
    }
  }
  meta += "],\"summary\":[";
  for (size_t c = 0; c < table.size(); ++c) {
    const DisplayCategory& category = table[c];
    if (c) meta += ',';
    meta += "{\"name\":";
    append_json_string(&meta, category.name);
    append_all(&meta, ",\"memory\":", category.memory ? "true" : "false", ",\"rows\":[");
    for (size_t i = 0; i < category.rows.size(); ++i) {
      const DisplayRow& row = category.rows[i];
      if (i) meta += ',';
      meta += "[";
      append_json_string(&meta, row.name);
      append_all(&meta, ",", std::to_string(row.count), ",\"", format_fixed4(row.total), "\",\"",
                 format_fixed4(row.min), "\",\"", format_fixed4(row.max), "\",\"",
                 format_fixed4(row.avg), "\"]");
    }
    meta += "]}";
  }
  meta += "]";
  if (!path_json.empty()) append_all(&meta, ",\"criticalPath\":", path_json);
  if (!extras.diff_json.empty()) append_all(&meta, ",\"diff\":", extras.diff_json);
  if (!extras.memory_json.empty()) append_all(&meta, ",\"memory\":", extras.memory_json);
  if (!extras.summary_source.empty()) {
    meta += ",\"summarySource\":";
    append_json_string(&meta, extras.summary_source);
  }
  append_all(&meta, ",\"sections\":{", sections.index(), "}}");

  // Blob: [u32 meta length][meta][pad to 8][sections]. Section offsets count from the first
  // byte after the padding. The page embeds it gzip-compressed and base64-encoded.
  if (blob_too_large(meta.size(), sections.bytes().size())) {
    throw TraceError(input + ": the viewer's data would exceed 4 GiB; split the trace first");
  }
  std::vector<unsigned char> blob(4);
  uint32_t meta_length = static_cast<uint32_t>(meta.size());
  std::memcpy(blob.data(), &meta_length, 4);
  blob.insert(blob.end(), meta.begin(), meta.end());
  while (blob.size() % 8) blob.push_back(0);
  blob.insert(blob.end(), sections.bytes().begin(), sections.bytes().end());
  // [u32 decompressed size][gzip stream]: the page allocates the output once.
  uint32_t blob_size = static_cast<uint32_t>(blob.size());
  std::string payload(4, '\0');
  std::memcpy(payload.data(), &blob_size, 4);
  payload += gzip(blob, level);

  std::string page = kViewerHead;
  append_base64(&page, payload);
  page += kViewerTail;

  std::string temp = output + ".tmp";
  FILE* file = std::fopen(temp.c_str(), "wb");
  if (!file) throw TraceError(output + ": cannot create: " + std::strerror(errno));
  bool ok = std::fwrite(page.data(), 1, page.size(), file) == page.size();
  ok = std::fclose(file) == 0 && ok;
  if (!ok || std::rename(temp.c_str(), output.c_str()) != 0) {
    std::remove(temp.c_str());
    throw TraceError(output + ": write error: " + std::strerror(errno));
  }
  result.page_bytes = page.size();
  return result;
}

std::string diff_page_json(const DiffResult& diff) {
  std::string out = "{\"verdict\":";
  append_json_string(&out, diff.verdict);
  out += ",\"by\":\"name\",\"base\":";
  append_json_string(&out, std::filesystem::path(diff.base_path).filename().string());
  out += ",\"new\":";
  append_json_string(&out, std::filesystem::path(diff.next_path).filename().string());
  // Rows: [name, BASE count, BASE total ns, NEW count, NEW total ns], by |change| descending.
  out += ",\"rows\":[";
  for (size_t i = 0; i < diff.rows.size(); ++i) {
    const DiffRow& row = diff.rows[i];
    if (i) out += ',';
    out += "[";
    append_json_string(&out, row.key);
    append_all(&out, ",", std::to_string(row.base.count), ",", std::to_string(row.base.total_ns),
               ",", std::to_string(row.next.count), ",", std::to_string(row.next.total_ns), "]");
  }
  out += "]}";
  return out;
}

void append_row_text_json(std::string* out, const MemoryRowText& text) {
  for (const std::string* cell :
       {&text.requested, &text.actual, &text.allocations, &text.reused, &text.share}) {
    *out += ",";
    append_json_string(out, *cell);
  }
  *out += ",[";
  for (size_t i = 0; i < text.device_actual.size(); ++i) {
    if (i) *out += ",";
    append_json_string(out, text.device_actual[i]);
  }
  *out += "]";
}

// The panel's data: the strings `nanomx-trace memory` prints (memory_row_text), so the page
// formats nothing itself, and the exact bytes for the tooltips (as strings: a double would round
// sizes beyond 2^53).
// Rows: [depth, name, requested, actual, allocations, reused, % actual, [actual per device],
// requested bytes, actual bytes], every scope in print order (the page rebuilds the tree from
// the depths, without recursion); "total" the same without depth and name.
std::string memory_page_json(const MemoryProfile& profile) {
  std::string out = "{\"files\":[";
  for (size_t i = 0; i < profile.files.size(); ++i) {
    if (i) out += ",";
    append_json_string(&out, std::filesystem::path(profile.files[i].path).filename().string());
  }
  out += "],\"devices\":[";
  for (size_t i = 0; i < profile.devices.size(); ++i) {
    append_all(&out, i ? "," : "", std::to_string(profile.devices[i]));
  }
  out += "],\"overview\":";
  append_json_string(&out, memory_overview(profile));
  out += ",\"total\":[";
  const MemoryScope& root = profile.root();
  append_json_string(&out, "total");
  append_row_text_json(&out, memory_row_text(profile, root));
  append_all(&out, ",\"", std::to_string(root.amount.requested), "\",\"",
             std::to_string(root.amount.actual), "\"]");
  out += ",\"nvml\":";
  if (profile.nvml) {
    out += "[";
    append_json_string(&out, kNvmlLabel);
    append_row_text_json(&out, nvml_row_text(profile));
    append_all(&out, ",\"\",\"", std::to_string(profile.nvml->bytes), "\"]");
  } else {
    out += "null";
  }
  out += ",\"rows\":[";
  bool first = true;
  for (uint32_t index : scopes_in_print_order(profile, std::nullopt)) {
    const MemoryScope& scope = profile.scopes[index];
    append_all(&out, first ? "[" : ",[", std::to_string(scope.depth), ",");
    append_json_string(&out, scope.name);
    append_row_text_json(&out, memory_row_text(profile, scope));
    append_all(&out, ",\"", std::to_string(scope.amount.requested), "\",\"",
               std::to_string(scope.amount.actual), "\"]");
    first = false;
  }
  out += "]}";
  return out;
}

// Reads the memory profiles of `options` into `extras`; nothing when there are none.
void add_memory(const ViewOptions& options, PageExtras* extras, ViewResult* result) {
  if (options.memory_profiles.empty()) return;
  MemoryProfile profile = read_memory_profiles(options.memory_profiles);
  extras->memory_json = memory_page_json(profile);
  result->memory_scopes = profile.scopes.size() - 1;
}

}  // namespace

ViewResult write_view(const std::string& input, const std::string& output, int level) {
  ViewOptions options;
  options.level = level;
  return write_view(input, output, options);
}

ViewResult write_view(const std::string& input, const std::string& output,
                      const ViewOptions& options) {
  ViewResult result;
  PageExtras extras;
  add_memory(options, &extras, &result);
  StreamInfo info;
  TraceModel model = view_model(input, &result, &info);
  extras.critical_path = options.critical_path;
  extras.step = options.step;
  return write_page(model, input, extras, result, output, options.level);
}

ViewResult write_diff_view(const std::string& base, const std::string& next,
                           const std::string& output, int level) {
  ViewOptions options;
  options.level = level;
  return write_diff_view(base, next, output, options);
}

ViewResult write_diff_view(const std::string& base, const std::string& next,
                           const std::string& output, const ViewOptions& options) {
  ViewResult result;
  PageExtras extras;
  add_memory(options, &extras, &result);
  StreamInfo base_info, next_info;
  TraceModel model = view_model(base, &result, &base_info);
  TraceModel next_model = view_model(next, &result, &next_info);
  // Both start at time 0, so that the same moment of each run lines up.
  shift_model(model, -model.min_ts_ns);
  for (Process& process : model.processes) process.name += " [BASE]";
  // The operators table shows NEW's numbers; the diff table compares both.
  extras.table = display_rows(aggregate(next_model), SortKey::kTotal, false);
  append_model(model, next_model, "NEW", -next_model.min_ts_ns);
  extras.diff_json = diff_page_json(diff_traces(base, next, {}));
  extras.summary_source = std::filesystem::path(next).filename().string();
  return write_page(model,
                    std::filesystem::path(base).filename().string() + " vs " +
                        std::filesystem::path(next).filename().string(),
                    extras, result, output, options.level);
}

}  // namespace nanomx::trace
