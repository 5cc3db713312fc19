#include "diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "json_out.h"
#include "trace_file.h"
#include "trace_model.h"

namespace nanomx::trace {
namespace {

const char* by_name(DiffBy by) {
  switch (by) {
    case DiffBy::kName:
      return "name";
    case DiffBy::kCategory:
      return "category";
    case DiffBy::kStep:
      return "step";
  }
  return "name";
}

bool is_step(const std::string& name, const std::string& cat) {
  return cat == "ProfilerStep" && name.rfind("ProfilerStep#", 0) == 0;
}

// The number N of "ProfilerStep#N", for sorting steps by number; -1 when it is not a number.
int64_t step_number(const std::string& key) {
  size_t hash = key.find('#');
  if (hash == std::string::npos || hash + 1 >= key.size() || key.size() - hash > 19) return -1;
  int64_t n = 0;
  for (size_t i = hash + 1; i < key.size(); ++i) {
    if (key[i] < '0' || key[i] > '9') return -1;
    n = n * 10 + (key[i] - '0');
  }
  return n;
}

// Per-key count and total of one trace, from its duration statistics (streamed: no slices kept).
std::map<std::string, DiffSide> read_side(const std::string& path, DiffBy by) {
  StreamInfo info;
  ModelOptions options;
  options.keep_slices = false;
  TraceModel model = stream_model(path, options, &info);
  if (info.truncated) {
    std::fprintf(stderr,
                 "nanomx-trace: %s: truncated (the events array is not closed): compared the %zu "
                 "events before the cut\n",
                 path.c_str(), info.events);
  }
  // MXNet's async "shadow" of each operator (same category and name as a sync slice) is left
  // out, as in the summary, so that an operator is not counted twice.
  std::set<std::pair<uint32_t, uint32_t>> sync_names;
  for (const DurationStat& stat : model.duration_stats) {
    if (stat.kind == SliceKind::kSync) sync_names.insert({stat.cat, stat.name});
  }
  std::map<std::string, DiffSide> side;
  bool any_step = false;
  for (const DurationStat& stat : model.duration_stats) {
    if (stat.kind == SliceKind::kAsync && sync_names.count({stat.cat, stat.name})) continue;
    const std::string& name = model.strings[stat.name];
    const std::string& cat = model.strings[stat.cat];
    bool step = is_step(name, cat);
    any_step |= step;
    if ((by == DiffBy::kStep) != step) continue;  // steps only in --by step, and only there
    const std::string& key =
        by == DiffBy::kCategory ? (cat.empty() ? std::string("(no category)") : cat) : name;
    DiffSide& entry = side[key];
    entry.count += stat.count;
    if (__builtin_add_overflow(entry.total_ns, stat.total_ns, &entry.total_ns)) {
      entry.total_ns = INT64_MAX;
    }
  }
  if (by == DiffBy::kStep && !any_step) {
    throw TraceError(path +
                     ": --by step needs steps, and this trace has none (no ProfilerStep#N "
                     "events of category ProfilerStep: record with profiler steps, "
                     "mx.profiler.step() once per step)");
  }
  return side;
}

void append_format(std::string* out, const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  out->append(buffer);
}

std::string pct_text(double pct) {
  if (std::isinf(pct)) return "new";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f %%", pct);
  return buffer;
}

void append_pct_json(std::string* out, double pct) {
  if (std::isinf(pct) || std::isnan(pct)) {
    out->append("null");
  } else {
    append_format(out, "%.6g", pct);
  }
}

}  // namespace

double DiffRow::change_pct() const {
  if (base.total_ns == 0) {
    return next.total_ns == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  }
  return 100.0 * static_cast<double>(change_ns()) / static_cast<double>(base.total_ns);
}

double DiffResult::change_pct() const {
  if (base_overall_ns == 0) {
    return next_overall_ns == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  }
  return 100.0 * (next_overall_ns - base_overall_ns) / base_overall_ns;
}

std::string format_duration(double ns, bool sign) {
  if (ns == 0) return sign ? "+0" : "0";
  double magnitude = std::fabs(ns);
  const char* unit = "ns";
  double value = magnitude;
  if (magnitude >= 1e9) {
    unit = "s";
    value = magnitude / 1e9;
  } else if (magnitude >= 1e6) {
    unit = "ms";
    value = magnitude / 1e6;
  } else if (magnitude >= 1e3) {
    unit = "us";
    value = magnitude / 1e3;
  }
  const char* format = value >= 100 ? "%.0f" : value >= 10 ? "%.1f" : "%.2f";
  char number[48];
  std::snprintf(number, sizeof number, format, value);
  std::string out;
  if (sign) out.push_back(ns < 0 ? '-' : '+');
  if (!sign && ns < 0) out.push_back('-');
  append_all(&out, number, " ", unit);
  return out;
}

DiffResult compare_tables(const std::vector<DiffRow>& merged_rows, DiffBy by,
                          const DiffOptions& options) {
  DiffResult result;
  result.by = by;
  DiffSide base_all, next_all;
  auto add = [](DiffSide& into, const DiffSide& side) {
    into.count += side.count;
    // Saturates, as the per-row totals do.
    if (__builtin_add_overflow(into.total_ns, side.total_ns, &into.total_ns)) {
      into.total_ns = INT64_MAX;
    }
  };
  for (const DiffRow& row : merged_rows) {
    add(base_all, row.base);
    add(next_all, row.next);
  }
  if (by == DiffBy::kStep) {
    // Runs of different lengths compare per step.
    result.base_overall_ns = base_all.mean_ns();
    result.next_overall_ns = next_all.mean_ns();
  } else {
    result.base_overall_ns = static_cast<double>(base_all.total_ns);
    result.next_overall_ns = static_cast<double>(next_all.total_ns);
  }
  for (const DiffRow& row : merged_rows) {
    if (std::fabs(row.change_pct()) < options.threshold_pct) {
      ++result.hidden_rows;
      continue;
    }
    result.rows.push_back(row);
  }
  std::stable_sort(result.rows.begin(), result.rows.end(), [](const DiffRow& a, const DiffRow& b) {
    int64_t ca = a.change_ns() < 0 ? -a.change_ns() : a.change_ns();
    int64_t cb = b.change_ns() < 0 ? -b.change_ns() : b.change_ns();
    if (ca != cb) return ca > cb;
    return a.key < b.key;
  });

  // The verdict names the largest changes in the direction of the overall change.
  double pct = result.change_pct();
  std::string verdict;
  if (result.base_overall_ns == result.next_overall_ns) {
    verdict = "NEW takes the same time as BASE";
  } else {
    bool slower = result.next_overall_ns > result.base_overall_ns;
    char head[96];
    if (result.base_overall_ns == 0) {
      std::snprintf(head, sizeof head, "NEW is slower (BASE has no timed events)");
    } else {
      std::snprintf(head, sizeof head, "NEW is %.1f %% %s", std::fabs(pct),
                    slower ? "slower" : "faster");
    }
    verdict = head;
    if (by == DiffBy::kStep) verdict += " per step";
    int named = 0;
    for (const DiffRow& row : result.rows) {
      if (named == 3) break;
      if (row.change_ns() == 0 || (row.change_ns() > 0) != slower) continue;
      verdict += named == 0 ? ": " : ", ";
      verdict += row.key + " " + format_duration(static_cast<double>(row.change_ns()), true);
      ++named;
    }
  }
  result.verdict = verdict;
  return result;
}

DiffResult diff_traces(const std::string& base, const std::string& next,
                       const DiffOptions& options) {
  std::map<std::string, DiffSide> base_side = read_side(base, options.by);
  std::map<std::string, DiffSide> next_side = read_side(next, options.by);
  std::map<std::string, DiffRow> merged;
  for (const auto& [key, side] : base_side) {
    merged[key].key = key;
    merged[key].base = side;
  }
  for (const auto& [key, side] : next_side) {
    merged[key].key = key;
    merged[key].next = side;
  }
  std::vector<DiffRow> rows;
  rows.reserve(merged.size());
  for (auto& [key, row] : merged) rows.push_back(std::move(row));
  if (options.by == DiffBy::kStep) {
    std::stable_sort(rows.begin(), rows.end(), [](const DiffRow& a, const DiffRow& b) {
      return step_number(a.key) < step_number(b.key);
    });
  }
  DiffResult result = compare_tables(rows, options.by, options);
  result.base_path = base;
  result.next_path = next;
  return result;
}

std::string format_diff_text(const DiffResult& result) {
  std::string out;
  append_all(&out, "BASE ", result.base_path, "\nNEW  ", result.next_path, "\n\n");
  const char* key_title = result.by == DiffBy::kName       ? "Name"
                          : result.by == DiffBy::kCategory ? "Category"
                                                           : "Step";
  size_t width = std::string_view(key_title).size();
  for (const DiffRow& row : result.rows) width = std::max(width, row.key.size());
  width = std::min<size_t>(width, 60);
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %10s %12s %12s %10s %12s %12s %13s %9s\n",
                static_cast<int>(width), key_title, "BASE count", "BASE total", "BASE mean",
                "NEW count", "NEW total", "NEW mean", "change", "change %");
  out += line;
  out += std::string(width + 1 + 10 + 1 + 12 + 1 + 12 + 1 + 10 + 1 + 12 + 1 + 12 + 1 + 13 + 1 + 9,
                     '-');
  out += "\n";
  for (const DiffRow& row : result.rows) {
    std::string key = row.key.size() > width ? row.key.substr(0, width - 3) + "..." : row.key;
    std::snprintf(line, sizeof line, "%-*s %10llu %12s %12s %10llu %12s %12s %13s %9s\n",
                  static_cast<int>(width), key.c_str(),
                  static_cast<unsigned long long>(row.base.count),
                  format_duration(static_cast<double>(row.base.total_ns)).c_str(),
                  format_duration(row.base.mean_ns()).c_str(),
                  static_cast<unsigned long long>(row.next.count),
                  format_duration(static_cast<double>(row.next.total_ns)).c_str(),
                  format_duration(row.next.mean_ns()).c_str(),
                  format_duration(static_cast<double>(row.change_ns()), true).c_str(),
                  row.base.count == 0   ? "new"
                  : row.next.count == 0 ? "gone"
                                        : pct_text(row.change_pct()).c_str());
    out += line;
  }
  if (result.hidden_rows) {
    append_all(&out, "(", std::to_string(result.hidden_rows),
               " rows changed by less than the threshold and are not shown)\n");
  }
  append_all(&out, "\n", result.verdict, "\n");
  return out;
}

std::string format_diff_json(const DiffResult& result) {
  std::string out = "{\"by\":";
  append_json_string(&out, by_name(result.by));
  out += ",\"base\":{\"file\":";
  append_json_string(&out, result.base_path);
  out += ",\"overall_ms\":";
  append_format(&out, "%.6f", result.base_overall_ns / 1e6);
  out += "},\"new\":{\"file\":";
  append_json_string(&out, result.next_path);
  out += ",\"overall_ms\":";
  append_format(&out, "%.6f", result.next_overall_ns / 1e6);
  out += "},\"change_pct\":";
  append_pct_json(&out, result.change_pct());
  out += ",\"verdict\":";
  append_json_string(&out, result.verdict);
  out += ",\"hidden_rows\":" + std::to_string(result.hidden_rows) + ",\"rows\":[";
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const DiffRow& row = result.rows[i];
    if (i) out += ",";
    out += "\n{\"key\":";
    append_json_string(&out, row.key);
    auto side = [&](const char* name, const DiffSide& s) {
      append_all(&out, ",\"", name, "\":{\"count\":", std::to_string(s.count), ",\"total_ms\":");
      append_format(&out, "%.6f", static_cast<double>(s.total_ns) / 1e6);
      out += ",\"mean_ms\":";
      append_format(&out, "%.6f", s.mean_ns() / 1e6);
      out += "}";
    };
    side("base", row.base);
    side("new", row.next);
    out += ",\"change_ms\":";
    append_format(&out, "%.6f", static_cast<double>(row.change_ns()) / 1e6);
    out += ",\"change_pct\":";
    append_pct_json(&out, row.change_pct());
    out += ",\"status\":";
    append_json_string(&out, row.base.count == 0 ? "new" : row.next.count == 0 ? "gone" : "both");
    out += "}";
  }
  out += "\n]}\n";
  return out;
}

}  // namespace nanomx::trace
