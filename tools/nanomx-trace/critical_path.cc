#include "critical_path.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include "diff.h"
#include "json_out.h"
#include "trace_file.h"

namespace nanomx::trace {
namespace {

constexpr std::string_view kStepPrefix = "ProfilerStep#";

bool is_step_slice(const TraceModel& model, const Slice& slice) {
  return slice.kind == SliceKind::kSync && model.strings[slice.cat] == "ProfilerStep" &&
         std::string_view(model.strings[slice.name]).substr(0, kStepPrefix.size()) == kStepPrefix;
}

// A vertex of the graph: an operation (a slice) or a push point (zero length, on the caller).
struct Node {
  int64_t start = 0, end = 0;
  uint32_t track = 0;
  int64_t slice = -1;  // -1: a push point
  int32_t dependency = -1, push = -1, previous = -1;
  uint32_t rank = 0;  // position in (start, end) order; edges only go to a lower rank
};

// Per track, the top-level sync slices (not nested in another, steps left out) by start time.
std::vector<std::vector<uint32_t>> top_level_slices(const TraceModel& model) {
  std::vector<std::vector<uint32_t>> per_track(model.tracks.size());
  for (uint32_t i = 0; i < model.slices.size(); ++i) {
    const Slice& slice = model.slices[i];
    if (slice.kind != SliceKind::kSync || is_step_slice(model, slice)) continue;
    per_track[slice.track].push_back(i);
  }
  for (auto& list : per_track) {
    std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      const Slice& x = model.slices[a];
      const Slice& y = model.slices[b];
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      return x.dur_ns > y.dur_ns;  // the enclosing slice first
    });
    size_t kept = 0;
    int64_t open_end = INT64_MIN;
    for (uint32_t index : list) {
      const Slice& slice = model.slices[index];
      if (slice.start_ns < open_end) continue;  // nested in the slice before
      list[kept++] = index;
      open_end = std::max(open_end, slice.start_ns + slice.dur_ns);
    }
    list.resize(kept);
  }
  return per_track;
}

// The top-level slice of `list` holding `ts`. at_end: ts is the slice's end (a dependency's
// start point), so of two touching slices the one ending at ts is taken.
int64_t slice_at(const TraceModel& model, const std::vector<uint32_t>& list, int64_t ts,
                 bool at_end) {
  auto after = std::upper_bound(list.begin(), list.end(), ts, [&](int64_t t, uint32_t index) {
    return at_end ? t <= model.slices[index].start_ns : t < model.slices[index].start_ns;
  });
  if (after == list.begin()) {
    if (!at_end) return -1;
    after = std::upper_bound(list.begin(), list.end(), ts, [&](int64_t t, uint32_t index) {
      return t < model.slices[index].start_ns;
    });
    if (after == list.begin()) return -1;
  }
  const Slice& slice = model.slices[*(after - 1)];
  if (slice.start_ns + slice.dur_ns < ts) return -1;
  return *(after - 1);
}

void add_total(std::map<std::string, PathTotal>& totals, const std::string& key, int64_t ns) {
  PathTotal& total = totals[key];
  total.key = key;
  total.ns += ns;
  ++total.count;
}

std::vector<PathTotal> sorted_totals(std::map<std::string, PathTotal>& totals) {
  std::vector<PathTotal> out;
  for (auto& [key, total] : totals) out.push_back(total);
  std::stable_sort(out.begin(), out.end(),
                   [](const PathTotal& a, const PathTotal& b) { return a.ns > b.ns; });
  return out;
}

}  // namespace

const char* path_kind_name(PathKind kind) {
  switch (kind) {
    case PathKind::kCompute:
      return "compute";
    case PathKind::kDependency:
      return "waiting for a dependency";
    case PathKind::kCaller:
      return "waiting for the caller";
    case PathKind::kIdle:
      return "idle";
  }
  return "idle";
}

CriticalPath find_critical_path(const TraceModel& model, const std::string& file,
                                std::optional<int64_t> step) {
  CriticalPath path;
  path.file = file;
  path.step = step;
  path.strings = model.strings;
  for (const Track& track : model.tracks) {
    path.track_labels.push_back(model.processes[track.process].name + " / " + track.name);
  }

  // The step's window.
  const Slice* step_slice = nullptr;
  int64_t first_step = INT64_MAX, last_step = -1;
  size_t step_count = 0;
  if (step) {
    std::string wanted = std::string(kStepPrefix) + std::to_string(*step);
    for (const Slice& slice : model.slices) {
      if (!is_step_slice(model, slice)) continue;
      ++step_count;
      const std::string& name = model.strings[slice.name];
      if (name == wanted && (!step_slice || slice.start_ns < step_slice->start_ns)) {
        step_slice = &slice;
      }
      char* end = nullptr;
      long long n = std::strtoll(name.c_str() + kStepPrefix.size(), &end, 10);
      if (end && *end == 0) {
        first_step = std::min<int64_t>(first_step, n);
        last_step = std::max<int64_t>(last_step, n);
      }
    }
    if (!step_slice) {
      std::string has = step_count == 0
                            ? "no steps (no ProfilerStep#N events of category "
                              "ProfilerStep: record with mx.profiler.step())"
                            : std::to_string(step_count) + " steps, numbered " +
                                  std::to_string(first_step) + " to " + std::to_string(last_step);
      throw TraceError(file + ": no step " + std::to_string(*step) + "; the trace has " + has);
    }
  }

  // Operations and push points from the flows.
  auto per_track = top_level_slices(model);
  uint32_t dependency_cat = UINT32_MAX;
  for (uint32_t i = 0; i < model.strings.size(); ++i) {
    if (model.strings[i] == "dependency") dependency_cat = i;
  }
  std::vector<int32_t> start_point(model.flow_count, -1), finish_point(model.flow_count, -1);
  for (uint32_t i = 0; i < model.flow_points.size(); ++i) {
    const FlowPoint& point = model.flow_points[i];
    if (point.phase == 's' && start_point[point.flow] < 0) start_point[point.flow] = i;
    if (point.phase == 'f') finish_point[point.flow] = i;
  }
  std::vector<int32_t> node_of_slice(model.slices.size(), -1);
  std::vector<Node> nodes;
  auto op_node = [&](uint32_t slice_index) {
    int32_t& node = node_of_slice[slice_index];
    if (node < 0) {
      const Slice& slice = model.slices[slice_index];
      node = static_cast<int32_t>(nodes.size());
      Node created;
      created.start = slice.start_ns;
      created.end = slice.start_ns + slice.dur_ns;
      created.track = slice.track;
      created.slice = slice_index;
      nodes.push_back(created);
    }
    return node;
  };
  struct Edge {
    int32_t target;
    int64_t source_slice;  // dependency: the operation that ended
    int32_t push_point;    // push: index of the flow point
  };
  std::vector<Edge> edges;
  for (uint32_t flow = 0; flow < model.flow_count; ++flow) {
    if (start_point[flow] < 0 || finish_point[flow] < 0) continue;
    const FlowPoint& s = model.flow_points[start_point[flow]];
    const FlowPoint& f = model.flow_points[finish_point[flow]];
    int64_t target = slice_at(model, per_track[f.track], f.ts_ns, false);
    if (target < 0) continue;
    if (s.cat == dependency_cat) {
      int64_t source = slice_at(model, per_track[s.track], s.ts_ns, true);
      if (source < 0 || source == target) continue;
      edges.push_back(Edge{op_node(static_cast<uint32_t>(target)), source, -1});
      ++path.dependency_edges;
    } else {
      edges.push_back(Edge{op_node(static_cast<uint32_t>(target)), -1, start_point[flow]});
      ++path.push_edges;
    }
  }
  if (path.dependency_edges) {
    path.edges = PathEdges::kDependencyFlows;
  } else if (path.push_edges) {
    path.edges = PathEdges::kPushFlows;
  } else {
    // No flows: every top-level slice is an operation, linked only by its thread's order.
    for (const auto& list : per_track) {
      for (uint32_t index : list) op_node(index);
    }
  }
  for (const Edge& edge : edges) {
    Node& target = nodes[edge.target];
    if (edge.source_slice >= 0) {
      int32_t source = op_node(static_cast<uint32_t>(edge.source_slice));
      Node& target_again = nodes[edge.target];  // op_node may have grown `nodes`
      // At most one per operation (the contract); should a trace hold more, the latest counts.
      if (target_again.dependency < 0 || nodes[target_again.dependency].end < nodes[source].end) {
        target_again.dependency = source;
      }
      continue;
    }
    const FlowPoint& s = model.flow_points[edge.push_point];
    if (target.push >= 0 && nodes[target.push].start >= s.ts_ns) continue;
    Node point;
    point.start = point.end = s.ts_ns;
    point.track = s.track;
    int32_t index = static_cast<int32_t>(nodes.size());
    nodes.push_back(point);
    nodes[edge.target].push = index;
  }

  // Order: by (start, end); each node's previous node on its thread.
  std::vector<uint32_t> order(nodes.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (nodes[a].start != nodes[b].start) return nodes[a].start < nodes[b].start;
    if (nodes[a].end != nodes[b].end) return nodes[a].end < nodes[b].end;
    return a < b;
  });
  std::vector<int32_t> last_on_track(model.tracks.size(), -1);
  for (uint32_t rank = 0; rank < order.size(); ++rank) {
    Node& node = nodes[order[rank]];
    node.rank = rank;
    node.previous = last_on_track[node.track];
    last_on_track[node.track] = static_cast<int32_t>(order[rank]);
  }

  // The window and the operation that ends last in it.
  bool have_window = false;
  int32_t last = -1;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    if (node.slice < 0) continue;
    int64_t pushed = node.push >= 0 ? nodes[node.push].start : node.start;
    if (step_slice) {
      int64_t step_end = step_slice->start_ns + step_slice->dur_ns;
      if (pushed < step_slice->start_ns || pushed >= step_end) continue;
    } else {
      path.window_start_ns = have_window ? std::min(path.window_start_ns, pushed) : pushed;
      path.window_end_ns = have_window ? std::max(path.window_end_ns, node.end) : node.end;
      have_window = true;
    }
    ++path.operations;
    if (last < 0 || node.end > nodes[last].end ||
        (node.end == nodes[last].end && node.start > nodes[last].start)) {
      last = static_cast<int32_t>(i);
    }
  }
  if (step_slice) {
    path.window_start_ns = step_slice->start_ns;
    path.window_end_ns = step_slice->start_ns + step_slice->dur_ns;
  }
  if (last < 0) {
    throw TraceError(file + ": " +
                     (step ? "step " + std::to_string(*step) + " holds no operation"
                           : std::string("the trace holds no operation (no slice on any thread)")) +
                     ": nothing to find a critical path through");
  }

  // Walk back from the last operation, each time to the predecessor that was ready last.
  std::vector<PathSegment> backwards;
  int64_t boundary = nodes[last].end;  // the path so far covers [boundary, end]
  auto add = [&](PathKind kind, int64_t start, uint32_t track, int64_t slice, uint32_t name) {
    start = std::max(start, path.window_start_ns);
    if (start >= boundary) return;
    PathSegment segment;
    segment.kind = kind;
    segment.start_ns = start;
    segment.end_ns = boundary;
    segment.track = track;
    segment.slice = slice;
    segment.name = name;
    backwards.push_back(segment);
    boundary = start;
  };
  path.end_ns = nodes[last].end;
  int32_t current = last;
  while (true) {
    const Node& node = nodes[current];
    if (node.slice >= 0) {
      add(PathKind::kCompute, node.start, node.track, node.slice, model.slices[node.slice].name);
    }
    if (boundary <= path.window_start_ns) break;
    int32_t chosen = -1;
    int64_t ready = INT64_MIN;
    PathKind gap = PathKind::kIdle;
    auto consider = [&](int32_t candidate, int64_t candidate_ready, PathKind kind) {
      if (candidate < 0 || nodes[candidate].rank >= node.rank) return;
      if (candidate_ready > ready) {
        chosen = candidate;
        ready = candidate_ready;
        gap = kind;
      }
    };
    // Ties go to the first considered: dependency, then push, then thread order.
    if (node.dependency >= 0) {
      consider(node.dependency, nodes[node.dependency].end, PathKind::kDependency);
    }
    // From its push to its start the operation was ready and, when the push binds, its thread
    // free: nothing recorded explains that wait (engine dispatch, or a dependency the trace
    // does not show), so it is idle. The caller's own time is before the push.
    if (node.push >= 0) consider(node.push, nodes[node.push].start, PathKind::kIdle);
    if (node.previous >= 0) {
      consider(node.previous, nodes[node.previous].end,
               node.slice < 0 ? PathKind::kCaller : PathKind::kIdle);
    }
    if (chosen < 0) {
      // Before the first push point the caller was busy with something unrecorded.
      add(node.slice < 0 ? PathKind::kCaller : PathKind::kIdle, path.window_start_ns, node.track,
          -1, 0);
      break;
    }
    // A gap counts on the thread of the node that waited (a push point's: the caller's).
    add(gap, std::min(ready, boundary), node.track, -1, 0);
    if (boundary <= path.window_start_ns) break;
    current = chosen;
  }
  path.start_ns = boundary;
  path.segments.assign(backwards.rbegin(), backwards.rend());

  // Totals.
  std::map<std::string, PathTotal> by_operator, by_thread, caller_by_thread;
  int64_t by_kind[kPathKinds] = {0, 0, 0, 0};
  uint64_t kind_count[kPathKinds] = {0, 0, 0, 0};
  for (const PathSegment& segment : path.segments) {
    int64_t ns = segment.end_ns - segment.start_ns;
    by_kind[static_cast<int>(segment.kind)] += ns;
    ++kind_count[static_cast<int>(segment.kind)];
    add_total(by_thread, path.track_labels[segment.track], ns);
    if (segment.kind == PathKind::kCompute) add_total(by_operator, model.strings[segment.name], ns);
    if (segment.kind == PathKind::kCaller) {
      add_total(caller_by_thread, path.track_labels[segment.track], ns);
    }
  }
  for (int k = 0; k < kPathKinds; ++k) {
    path.by_kind.push_back(
        PathTotal{path_kind_name(static_cast<PathKind>(k)), by_kind[k], kind_count[k]});
  }
  path.by_operator = sorted_totals(by_operator);
  path.by_thread = sorted_totals(by_thread);

  // Levers: each operator's compute, each caller thread's delay, the handoffs, the idle time.
  for (const PathTotal& total : path.by_operator) {
    path.levers.push_back(
        PathLever{"make " + total.key + " faster (" + std::to_string(total.count) + " on the path)",
                  total.ns});
  }
  for (const PathTotal& total : sorted_totals(caller_by_thread)) {
    path.levers.push_back(PathLever{"push the work sooner from " + total.key +
                                        " (the operations on the path waited for the caller)",
                                    total.ns});
  }
  if (by_kind[static_cast<int>(PathKind::kDependency)] > 0) {
    path.levers.push_back(PathLever{
        "shorten the handoff from a finished dependency to the operation it made ready (" +
            std::to_string(kind_count[static_cast<int>(PathKind::kDependency)]) + " on the path)",
        by_kind[static_cast<int>(PathKind::kDependency)]});
  }
  if (by_kind[static_cast<int>(PathKind::kIdle)] > 0) {
    path.levers.push_back(PathLever{"idle threads on the path (nothing recorded explains it)",
                                    by_kind[static_cast<int>(PathKind::kIdle)]});
  }
  std::stable_sort(path.levers.begin(), path.levers.end(),
                   [](const PathLever& a, const PathLever& b) { return a.ns > b.ns; });
  if (path.levers.size() > 5) path.levers.resize(5);
  return path;
}

CriticalPath critical_path_of_file(const std::string& file, std::optional<int64_t> step) {
  StreamInfo info;
  ModelOptions options;
  options.keep_flows = true;
  options.sync_slices_only = true;
  TraceModel model = stream_model(file, options, &info);
  if (info.truncated) {
    std::fprintf(stderr,
                 "nanomx-trace: %s: truncated (the events array is not closed): used the %zu "
                 "events before the cut\n",
                 file.c_str(), info.events);
  }
  return find_critical_path(model, file, step);
}

namespace {

const char* edges_text(PathEdges edges) {
  switch (edges) {
    case PathEdges::kDependencyFlows:
      return "dependency flows, push flows and thread order";
    case PathEdges::kPushFlows:
      return "push flows and thread order only: the trace has no dependency flows, so a "
             "dependency between operations on different threads is not seen";
    case PathEdges::kThreadOrder:
      return "thread order only: the trace has no flows, so every top-level slice is an "
             "operation and no dependency between threads is seen";
  }
  return "";
}

const char* edges_key(PathEdges edges) {
  switch (edges) {
    case PathEdges::kDependencyFlows:
      return "dependency";
    case PathEdges::kPushFlows:
      return "push";
    case PathEdges::kThreadOrder:
      return "thread";
  }
  return "";
}

std::string percent(int64_t part, int64_t whole, bool aligned = true) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, aligned ? "%5.1f %%" : "%.1f %%",
                whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return buffer;
}

std::string ms(int64_t ns) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.3f ms", static_cast<double>(ns) / 1e6);
  return buffer;
}

constexpr size_t kTextSegments = 40;

}  // namespace

std::string format_critical_path_text(const CriticalPath& path) {
  std::string out;
  char line[1024];
  int64_t length = path.length_ns();
  std::string where = path.step ? "step " + std::to_string(*path.step) : "the whole trace";
  append_all(&out, "critical path of ", path.file, ", ", where, ": ", format_duration(length));
  if (path.step) {
    append_all(&out, " (the step: ", format_duration(path.window_end_ns - path.window_start_ns),
               ")");
  }
  append_all(&out, "\n  from ", ms(path.start_ns), " to ", ms(path.end_ns),
             " (trace time); edges: ", edges_text(path.edges), "\n");
  std::snprintf(line, sizeof line,
                "  %zu operations in the window, %zu dependency and %zu push flows resolved\n\n",
                path.operations, path.dependency_edges, path.push_edges);
  out += line;

  out += "time on the path by kind\n";
  for (const PathTotal& total : path.by_kind) {
    std::snprintf(line, sizeof line, "  %-26s %12s  %s\n", total.key.c_str(),
                  format_duration(static_cast<double>(total.ns)).c_str(),
                  percent(total.ns, length).c_str());
    out += line;
  }
  auto table = [&](const char* title, const std::vector<PathTotal>& totals, const char* unit) {
    append_all(&out, "\n", title, "\n");
    size_t width = 10;
    for (const PathTotal& total : totals)
      width = std::max(width, std::min<size_t>(total.key.size(), 50));
    for (size_t i = 0; i < totals.size() && i < 20; ++i) {
      const PathTotal& total = totals[i];
      std::snprintf(line, sizeof line, "  %-*s %6llu %-8s %12s  %s\n", static_cast<int>(width),
                    total.key.substr(0, 50).c_str(), static_cast<unsigned long long>(total.count),
                    unit, format_duration(static_cast<double>(total.ns)).c_str(),
                    percent(total.ns, length).c_str());
      out += line;
    }
    if (totals.size() > 20) append_all(&out, "  (", std::to_string(totals.size() - 20), " more)\n");
  };
  table("by operator (compute on the path)", path.by_operator, "x");
  table("by thread", path.by_thread, "segments");

  out += "\nwhat would shorten ";
  out += path.step ? "the step" : "the trace";
  out += " most (each by at most its time: another chain may then bound it)\n";
  for (size_t i = 0; i < path.levers.size(); ++i) {
    std::snprintf(line, sizeof line, "  %zu. %s: %s (%s)\n", i + 1, path.levers[i].what.c_str(),
                  format_duration(static_cast<double>(path.levers[i].ns)).c_str(),
                  percent(path.levers[i].ns, length, false).c_str());
    out += line;
  }

  size_t shown = std::min(path.segments.size(), kTextSegments);
  std::snprintf(line, sizeof line, "\npath (%zu segments%s; start relative to the path's start)\n",
                path.segments.size(), shown < path.segments.size() ? ", the last 40 shown" : "");
  out += line;
  for (size_t i = path.segments.size() - shown; i < path.segments.size(); ++i) {
    const PathSegment& segment = path.segments[i];
    std::string what = segment.kind == PathKind::kCompute
                           ? path.strings[segment.name]
                           : std::string(path_kind_name(segment.kind));
    std::snprintf(line, sizeof line, "  %12s  %10s  %-26s %s\n",
                  ms(segment.start_ns - path.start_ns).c_str(),
                  format_duration(static_cast<double>(segment.end_ns - segment.start_ns)).c_str(),
                  what.substr(0, 60).c_str(), path.track_labels[segment.track].c_str());
    out += line;
  }
  return out;
}

std::string format_critical_path_json(const CriticalPath& path) {
  std::string out = "{\"file\":";
  append_json_string(&out, path.file);
  out += ",\"step\":";
  out += path.step ? std::to_string(*path.step) : "null";
  out += ",\"edges\":";
  append_json_string(&out, edges_key(path.edges));
  out += ",\"window\":{\"start_us\":";
  append_ns_as_us(&out, path.window_start_ns);
  out += ",\"end_us\":";
  append_ns_as_us(&out, path.window_end_ns);
  out += "},\"start_us\":";
  append_ns_as_us(&out, path.start_ns);
  out += ",\"end_us\":";
  append_ns_as_us(&out, path.end_ns);
  out += ",\"length_us\":";
  append_ns_as_us(&out, path.length_ns());
  append_all(&out, ",\"operations\":", std::to_string(path.operations),
             ",\"dependency_flows\":", std::to_string(path.dependency_edges),
             ",\"push_flows\":", std::to_string(path.push_edges));
  auto totals = [&](const char* name, const std::vector<PathTotal>& list) {
    append_all(&out, ",\"", name, "\":[");
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) out += ",";
      out += "{\"key\":";
      append_json_string(&out, list[i].key);
      out += ",\"us\":";
      append_ns_as_us(&out, list[i].ns);
      append_all(&out, ",\"count\":", std::to_string(list[i].count), "}");
    }
    out += "]";
  };
  totals("by_kind", path.by_kind);
  totals("by_operator", path.by_operator);
  totals("by_thread", path.by_thread);
  out += ",\"shorten\":[";
  for (size_t i = 0; i < path.levers.size(); ++i) {
    if (i) out += ",";
    out += "{\"what\":";
    append_json_string(&out, path.levers[i].what);
    out += ",\"us\":";
    append_ns_as_us(&out, path.levers[i].ns);
    out += "}";
  }
  out += "],\"path\":[";
  for (size_t i = 0; i < path.segments.size(); ++i) {
    const PathSegment& segment = path.segments[i];
    if (i) out += ",";
    out += "\n{\"kind\":";
    append_json_string(&out, path_kind_name(segment.kind));
    out += ",\"name\":";
    append_json_string(&out, segment.kind == PathKind::kCompute ? path.strings[segment.name] : "");
    out += ",\"thread\":";
    append_json_string(&out, path.track_labels[segment.track]);
    out += ",\"start_us\":";
    append_ns_as_us(&out, segment.start_ns);
    out += ",\"dur_us\":";
    append_ns_as_us(&out, segment.end_ns - segment.start_ns);
    out += "}";
  }
  out += "\n]}\n";
  return out;
}

}  // namespace nanomx::trace
