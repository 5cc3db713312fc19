// `nanomx-trace critical-path`: the chain of dependent work that bounds a trace or one step
// (the model is defined in docs/nanomx-trace.md, "critical-path").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace_model.h"

namespace nanomx::trace {

// What the path's time is spent on.
enum class PathKind : uint8_t {
  kCompute,     // inside an operation on the path
  kDependency,  // from a dependency's end to the start of the operation it made ready
  kCaller,      // the caller had not pushed the next operation on the path yet
  kIdle,        // nothing recorded explains the wait (a free thread, a ready operation)
};
constexpr int kPathKinds = 4;
const char* path_kind_name(PathKind kind);

// Which edges the trace allowed (the richest the trace holds).
enum class PathEdges : uint8_t { kDependencyFlows, kPushFlows, kThreadOrder };

struct PathSegment {
  PathKind kind = PathKind::kIdle;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t track = 0;
  // Compute: the operation's slice (an index into TraceModel::slices) and name; -1 / 0 otherwise.
  int64_t slice = -1;
  uint32_t name = 0;
};

struct PathTotal {
  std::string key;     // operator name, thread label or kind name
  int64_t ns = 0;      // time on the path
  uint64_t count = 0;  // segments (operations for by_operator)
};

struct PathLever {
  std::string what;  // "make dot faster", ...
  int64_t ns = 0;
};

struct CriticalPath {
  std::string file;
  std::optional<int64_t> step;                     // --step N
  int64_t window_start_ns = 0, window_end_ns = 0;  // the step (or the whole trace's operations)
  int64_t start_ns = 0, end_ns = 0;                // the path
  PathEdges edges = PathEdges::kThreadOrder;
  size_t operations = 0;              // operations in the window
  size_t dependency_edges = 0;        // dependency flows resolved to two operations
  size_t push_edges = 0;              // push flows resolved to an operation
  std::vector<PathSegment> segments;  // in time order, contiguous from start_ns to end_ns
  std::vector<PathTotal> by_kind, by_operator, by_thread;
  std::vector<PathLever> levers;          // what would shorten the step most, largest first
  std::vector<std::string> track_labels;  // "process / thread" per track
  std::vector<std::string> strings;       // the model's strings (segment names)
  int64_t length_ns() const { return end_ns - start_ns; }
};

// `model` needs slices and flows (ModelOptions keep_slices and keep_flows). Throws TraceError
// when the step does not exist or the window holds no operation.
CriticalPath find_critical_path(const TraceModel& model, const std::string& file,
                                std::optional<int64_t> step);

// Streams the file and computes its path.
CriticalPath critical_path_of_file(const std::string& path, std::optional<int64_t> step);

std::string format_critical_path_text(const CriticalPath& path);
std::string format_critical_path_json(const CriticalPath& path);

}  // namespace nanomx::trace
