// The aggregate table of MXNet's profiler (`profiler.dumps()`), computed from a trace file:
// the same rows, sort order, units and byte layout (docs/mxnet-compat.md#aggregate-statistics).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace_model.h"

namespace nanomx::trace {

enum class StatKind { kDuration, kCounter, kOther };

struct StatEntry {
  StatKind kind = StatKind::kOther;
  uint64_t count = 0;
  // Durations: nanoseconds. Counters: the counter's own values (total = the latest value).
  double total = 0;
  double min = 0;
  double max = 0;
  int64_t latest_ts_ns = INT64_MIN;  // counters: time of the value kept in `total`
};

// category -> name -> entry. Categories print in byte order of their names.
using StatTable = std::map<std::string, std::map<std::string, StatEntry>>;

StatTable aggregate(const TraceModel& model);

// `summary --per-step`: one table per ProfilerStep#N span (docs/trace-format.md), of the slices
// that start inside the span (any thread), the counter samples and the markers in it. `model`
// needs its slices (ModelOptions::keep_slices). Steps in time order; a slice inside two spans
// (overlapping steps of merged processes) counts in the earlier.
struct StepTable {
  std::string name;  // "ProfilerStep#N"
  int64_t start_ns = 0, dur_ns = 0;
  StatTable table;
};
std::vector<StepTable> aggregate_per_step(const TraceModel& model, size_t* slices_outside);

enum class SortKey { kTotal, kAvg, kMin, kMax, kCount };
enum class SummaryFormat { kTable, kJson };

// "Device Storage" and "Pool Memory" print in kB without a Total column.
bool is_memory_category(const std::string& category);

// One printable row, its numbers already converted to MXNet's display units (ms or kB).
struct DisplayRow {
  std::string name;
  uint64_t count = 0;
  float total = 0, min = 0, max = 0, avg = 0;
};
struct DisplayCategory {
  std::string name;
  bool memory = false;
  std::vector<DisplayRow> rows;  // in MXNet's sort order
};

std::vector<DisplayCategory> display_rows(const StatTable& table, SortKey sort_by, bool ascending);

std::string format_table(const std::vector<DisplayCategory>& categories);
std::string format_json(const std::vector<DisplayCategory>& categories);

// MXNet's number formats: fixed with 4 decimals (table) and 4 significant digits (JSON).
std::string format_fixed4(float value);
std::string format_significant4(float value);

}  // namespace nanomx::trace
