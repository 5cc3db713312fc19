// `nanomx-trace diff`: what changed between two traces, per operator, category or step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nanomx::trace {

enum class DiffBy { kName, kCategory, kStep };

// One side of a row: the slices of that name (category, step) in one trace.
struct DiffSide {
  uint64_t count = 0;
  int64_t total_ns = 0;
  double mean_ns() const { return count ? static_cast<double>(total_ns) / count : 0.0; }
};

struct DiffRow {
  std::string key;  // the name, category, or "ProfilerStep#N"
  DiffSide base, next;
  int64_t change_ns() const { return next.total_ns - base.total_ns; }
  // Change of the total in percent of the base total; +inf for a row only in NEW.
  double change_pct() const;
};

struct DiffOptions {
  DiffBy by = DiffBy::kName;
  double threshold_pct = 0;  // rows whose |change_pct| is below this are left out of `rows`
};

struct DiffResult {
  std::string base_path, next_path;
  DiffBy by = DiffBy::kName;
  // The quantity the verdict compares: the sum of the row totals (--by name, category), or the
  // mean step duration (--by step).
  double base_overall_ns = 0, next_overall_ns = 0;
  std::vector<DiffRow> rows;  // sorted by |change_ns| descending, then key
  size_t hidden_rows = 0;     // under the threshold
  double change_pct() const;  // of the overall quantity; 0 when both are 0, +inf from 0
  std::string verdict;        // "NEW is 12.4 % slower: dot +31 ms, _copyto +4 ms"
};

// Reads both traces (streamed) and compares them. Throws TraceError for unreadable files and for
// --by step on a trace without ProfilerStep#N spans.
DiffResult diff_traces(const std::string& base, const std::string& next,
                       const DiffOptions& options);

// Compares two per-key tables (what diff_traces does after reading; exposed for tests).
DiffResult compare_tables(const std::vector<DiffRow>& merged_rows, DiffBy by,
                          const DiffOptions& options);

std::string format_diff_text(const DiffResult& result);
std::string format_diff_json(const DiffResult& result);

// "12.4 ms", "310 us", "+31 ms": three significant digits in the largest unit that keeps the
// number at least 1.
std::string format_duration(double ns, bool sign = false);

}  // namespace nanomx::trace
