// What a trace holds, once its events are paired up: slices (B/E pairs, X events, async b/e
// spans), counter series, instants, flow points, and the process/thread rows they belong to.
// Both `summary` and `view` are computed from this model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace_file.h"

namespace nanomx::trace {

// A pid, tid or async id as the trace wrote it: an integer of any width, or a string.
struct IdValue {
  enum class Kind : uint8_t { kNone, kInt, kString };
  Kind kind = Kind::kNone;
  uint64_t bits = 0;  // the integer, or a hash of the text
  std::string text;   // the text of a string id, or the decimal form of an integer
  bool same(const IdValue& other) const {
    return kind == other.kind && bits == other.bits &&
           (kind != Kind::kString || text == other.text);
  }
};

struct Process {
  IdValue pid;
  std::string name;  // from process_name metadata; "pid <n>" when the trace names none
  bool named = false;
  int64_t sort_index = 0;
  bool has_sort_index = false;
};

struct Track {  // one thread of one process
  uint32_t process = 0;
  IdValue tid;
  std::string name;  // from thread_name metadata; "thread <n>" otherwise
  bool named = false;
  int64_t sort_index = 0;
  bool has_sort_index = false;
  uint32_t sync_lanes = 0;   // nesting depth of B/E and X slices (after assign_lanes)
  uint32_t async_lanes = 0;  // lanes of overlapping async spans, drawn below the sync lanes
  bool used = false;         // holds a slice, an instant or a flow point
};

enum class SliceKind : uint8_t { kSync, kAsync };

struct Slice {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  uint32_t name = 0;  // index into TraceModel::strings
  uint32_t cat = 0;
  uint32_t args = 0;  // index into TraceModel::args_json (0 = no args)
  uint32_t track = 0;
  uint32_t lane = 0;  // within its kind's lanes on the track
  SliceKind kind = SliceKind::kSync;
};

struct Instant {
  int64_t ts_ns = 0;
  uint32_t name = 0;
  uint32_t cat = 0;
  uint32_t args = 0;
  uint32_t track = 0;
  char scope = 't';  // 'g' global, 'p' process, 't' thread
};

struct CounterSample {
  int64_t ts_ns;
  double value;
};

struct CounterSeries {
  uint32_t process = 0;
  uint32_t name = 0;  // the row name: the event name, or "<event name>.<series>"
  uint32_t cat = 0;
  std::vector<CounterSample> samples;  // in time order (file order among equal times)
};

struct FlowPoint {
  int64_t ts_ns = 0;
  uint32_t track = 0;
  uint32_t flow = 0;            // flows are numbered in order of first appearance
  uint32_t cat = 0;             // the flow's category ("dependency" for the engine's, see below)
  char phase = 's';             // 's', 't' or 'f'
  bool bind_enclosing = false;  // "bp":"e": attach to the slice enclosing ts
};

// Count, total, min and max of the slices of one (category, name, kind): what the aggregate
// table needs, kept even when the slices themselves are not.
struct DurationStat {
  uint32_t cat = 0;
  uint32_t name = 0;
  SliceKind kind = SliceKind::kSync;
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = INT64_MAX;
  int64_t max_ns = 0;
};

struct ModelOptions {
  bool keep_slices = true;    // false: only duration_stats (summary)
  bool keep_args = false;     // keep each slice's args as JSON text (view)
  bool assign_lanes = false;  // compute slice lanes per track (view)
  bool keep_flows = false;    // collect flow points (view; the summary has no use for them)
  // Only sync slices, flows and metadata: async spans, counters and instants are skipped
  // (critical-path, which needs nothing else, reads ~30 % faster).
  bool sync_slices_only = false;
};

struct TraceModel {
  std::vector<std::string> strings;    // names and categories, interned
  std::vector<std::string> args_json;  // [0] = "" (no args); each distinct args object once
  std::vector<Process> processes;
  std::vector<Track> tracks;
  std::vector<Slice> slices;  // empty unless ModelOptions::keep_slices
  std::vector<DurationStat> duration_stats;
  std::vector<Instant> instants;
  std::vector<CounterSeries> counters;
  std::vector<FlowPoint> flow_points;
  uint32_t flow_count = 0;

  size_t total_events = 0;     // elements of the events array
  size_t metadata_events = 0;  // ph "M"
  size_t ignored_events = 0;   // phases the tool does not use (samples, objects, clock sync, ...)
  size_t unmatched_ends = 0;   // E / e with no open begin
  size_t unclosed_begins = 0;  // B / b still open at the end of the file
  int64_t min_ts_ns = 0;       // over all timed events (0 when there are none)
  int64_t max_ts_ns = 0;
};

// Throws TraceError for events that cannot be read (a negative duration, a non-object event).
TraceModel build_model(const LoadedTrace& trace, const ModelOptions& options = {});

// The same from a file read in chunks (stream_events): memory stays small and warm, which is
// what makes `summary` fast. Fills `info` (truncation, sizes).
TraceModel stream_model(const std::string& path, const ModelOptions& options, StreamInfo* info,
                        size_t chunk_bytes = 1 << 20);

// Device processes (cpu/0, gpu/0, "cpu pinned/", ...) are drawn first.
bool is_device_process_name(std::string_view name);

// Microseconds (a trace's `ts`) to whole nanoseconds. The whole and fractional parts are
// converted apart: epoch-based µs (MXNet writes ~1.7e15) times 1000 would exceed a double's
// 53-bit mantissa and lose up to 256 ns.
inline int64_t us_to_ns(double us) {
  double whole = us < 0 ? -static_cast<double>(static_cast<int64_t>(-us))
                        : static_cast<double>(static_cast<int64_t>(us));
  double fraction_ns = (us - whole) * 1000.0;
  int64_t rounded = static_cast<int64_t>(fraction_ns < 0 ? fraction_ns - 0.5 : fraction_ns + 0.5);
  return static_cast<int64_t>(whole) * 1000 + rounded;
}

// The largest |ts| or |dur| accepted, in microseconds: about 127 years, so that a timestamp and
// a duration in nanoseconds add up without overflowing int64.
constexpr double kMaxTimeUs = 4e15;

// A JSON number of microseconds to nanoseconds, exactly for integers. False for non-numbers and
// for values that are not finite or beyond +-kMaxTimeUs.
bool read_time_ns(simdjson::dom::element value, int64_t* ns);

}  // namespace nanomx::trace
