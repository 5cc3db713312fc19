#include "summary.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

namespace nanomx::trace {
namespace {

// MXNet starts every minimum at INT_MAX (in its own unit, µs for durations), so a counter whose
// values are all above 2^31 shows 2147483.6470 as its minimum. Kept on purpose (spec Q9).
constexpr double kCounterMinStart = static_cast<double>(INT_MAX);
constexpr double kDurationMinStartNs = static_cast<double>(INT_MAX) * 1000.0;

// Events without a "cat" (torch's legacy export writes none) are grouped under this name.
const std::string kNoCategory = "(no category)";

const std::string& category_name(const std::string& cat) { return cat.empty() ? kNoCategory : cat; }

StatEntry& entry_for(StatTable& table, const std::string& category, const std::string& name) {
  return table[category_name(category)][name];
}

void add_durations(StatEntry& entry, const DurationStat& stat) {
  if (entry.kind != StatKind::kDuration) {
    entry = StatEntry{};
    entry.kind = StatKind::kDuration;
    entry.min = kDurationMinStartNs;
  }
  entry.count += stat.count;
  entry.total += static_cast<double>(stat.total_ns);
  entry.min = std::min(entry.min, static_cast<double>(stat.min_ns));
  entry.max = std::max(entry.max, static_cast<double>(stat.max_ns));
}

void add_counter(StatEntry& entry, int64_t ts_ns, double value) {
  if (entry.kind != StatKind::kCounter) {
    entry = StatEntry{};
    entry.kind = StatKind::kCounter;
    entry.min = kCounterMinStart;
  }
  ++entry.count;
  if (ts_ns >= entry.latest_ts_ns) {
    entry.total = value;
    entry.latest_ts_ns = ts_ns;
  }
  entry.min = std::min(entry.min, value);
  entry.max = std::max(entry.max, value);
}

// MXNet's (max - min) / 2 on unsigned integers: integer division when the values are whole.
double half_range(const StatEntry& entry) {
  double range = entry.max - entry.min;
  return range == std::floor(range) ? std::floor(range / 2) : range / 2;
}

// The sort key in MXNet's units (µs for durations, raw values for counters).
double sort_key(const StatEntry& entry, SortKey sort_by) {
  bool duration = entry.kind == StatKind::kDuration;
  double scale = duration ? 1e-3 : 1.0;
  switch (sort_by) {
    case SortKey::kTotal:
      return entry.total * scale;
    case SortKey::kAvg:
      return duration ? entry.total / static_cast<double>(entry.count) * scale : half_range(entry);
    case SortKey::kMin:
      return entry.min * scale;
    case SortKey::kMax:
      return entry.max * scale;
    case SortKey::kCount:
      return static_cast<double>(entry.count);
  }
  return 0;
}

void append_padded(std::string* out, const std::string& text, int width, bool left) {
  int pad = width - static_cast<int>(text.size());
  if (!left && pad > 0) out->append(static_cast<size_t>(pad), ' ');
  out->append(text);
  if (left && pad > 0) out->append(static_cast<size_t>(pad), ' ');
}

std::string quote(const std::string& text) { return "\"" + text + "\""; }

}  // namespace

bool is_memory_category(const std::string& category) {
  return category == "Device Storage" || category == "Pool Memory";
}

StatTable aggregate(const TraceModel& model) {
  StatTable table;
  const auto& strings = model.strings;

  // MXNet writes each operator twice: a B/E slice on the device row and an async "shadow" task
  // of the same category and name, which its table leaves out. An async span whose category and
  // name also occur as a sync slice is taken to be such a shadow and not counted.
  std::set<std::pair<uint32_t, uint32_t>> sync_names;
  for (const DurationStat& stat : model.duration_stats) {
    if (stat.kind == SliceKind::kSync) sync_names.emplace(stat.cat, stat.name);
  }
  for (const DurationStat& stat : model.duration_stats) {
    if (stat.kind == SliceKind::kAsync && sync_names.count({stat.cat, stat.name})) continue;
    add_durations(entry_for(table, strings[stat.cat], strings[stat.name]), stat);
  }
  for (const CounterSeries& series : model.counters) {
    StatEntry& entry = entry_for(table, strings[series.cat], strings[series.name]);
    for (const CounterSample& sample : series.samples) {
      add_counter(entry, sample.ts_ns, sample.value);
    }
  }
  // Markers and other instants create their category (printed with no rows), as in MXNet.
  for (const Instant& instant : model.instants) {
    auto& names = table[category_name(strings[instant.cat])];
    names.try_emplace(strings[instant.name]);
  }
  return table;
}

std::vector<DisplayCategory> display_rows(const StatTable& table, SortKey sort_by, bool ascending) {
  std::vector<DisplayCategory> categories;
  for (const auto& [category, names] : table) {
    DisplayCategory display;
    display.name = category;
    display.memory = is_memory_category(category);
    std::vector<std::pair<double, const std::string*>> order;
    for (const auto& [name, entry] : names) {
      if (entry.kind == StatKind::kOther) continue;
      double key = sort_key(entry, sort_by);
      order.emplace_back(ascending ? -key : key, &name);
    }
    // A max-heap of (key, name) in MXNet: larger key first, ties by name descending.
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first > b.first;
      return *a.second > *b.second;
    });
    for (const auto& [key, name] : order) {
      const StatEntry& entry = names.at(*name);
      DisplayRow row;
      row.name = *name;
      row.count = entry.count;
      if (entry.kind == StatKind::kDuration) {
        // Durations are kept in ns; the table shows ms.
        row.total = static_cast<float>(entry.total / 1e6);
        row.min = static_cast<float>(entry.min / 1e6);
        row.max = static_cast<float>(entry.max / 1e6);
        row.avg = static_cast<float>(entry.total / static_cast<double>(entry.count) / 1e6);
      } else {
        // Counters: MXNet divides the raw values by 1000 and labels them ms (or kB).
        row.total = static_cast<float>(entry.total / 1000.0);
        row.min = static_cast<float>(entry.min / 1000.0);
        row.max = static_cast<float>(entry.max / 1000.0);
        row.avg = static_cast<float>(half_range(entry) / 1000.0);
      }
      display.rows.push_back(std::move(row));
    }
    categories.push_back(std::move(display));
  }
  return categories;
}

std::string format_fixed4(float value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.4f", static_cast<double>(value));
  return buffer;
}

std::string format_significant4(float value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.4g", static_cast<double>(value));
  return buffer;
}

std::string format_table(const std::vector<DisplayCategory>& categories) {
  std::string out =
      "\nProfile Statistics:\n\tNote the difference in units for different entries.\n";
  for (const DisplayCategory& category : categories) {
    out += category.name + "\n=================\n";
    auto line = [&](const std::string& name, const std::string& count,
                    const std::vector<std::string>& values) {
      append_padded(&out, name, 25, true);
      append_padded(&out, count, 16, false);
      for (const std::string& value : values) {
        out += ' ';
        append_padded(&out, value, 16, false);
      }
      out += '\n';
    };
    if (category.memory) {
      line("Name", "Total Count", {"Min Use  (kB)", "Max Use  (kB)", "Avg Use  (kB)"});
      line("----", "-----------", {"-------------", "-------------", "-------------"});
    } else {
      line("Name", "Total Count", {"Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)"});
      line("----", "-----------", {"---------", "-------------", "-------------", "-------------"});
    }
    for (const DisplayRow& row : category.rows) {
      std::vector<std::string> values;
      if (!category.memory) values.push_back(format_fixed4(row.total));
      values.push_back(format_fixed4(row.min));
      values.push_back(format_fixed4(row.max));
      values.push_back(format_fixed4(row.avg));
      line(row.name, std::to_string(row.count), values);
    }
    out += '\n';
  }
  return out;
}

std::string format_json(const std::vector<DisplayCategory>& categories) {
  std::string time_part, memory_part;
  bool first_time = true, first_memory = true;
  for (const DisplayCategory& category : categories) {
    std::string& out = category.memory ? memory_part : time_part;
    bool& first = category.memory ? first_memory : first_time;
    if (!first) out += "        ,\n";
    first = false;
    out += "        " + quote(category.name) + ": {\n";
    bool first_row = true;
    for (const DisplayRow& row : category.rows) {
      if (!first_row) out += "            ,\n";
      first_row = false;
      out += "            " + quote(row.name) + ": {\n";
      out += "                \"Count\": " + std::to_string(row.count) + ",\n";
      if (!category.memory) {
        out += "                \"Total\": " + format_significant4(row.total) + ",\n";
      }
      out += "                \"Min\": " + format_significant4(row.min) + ",\n";
      out += "                \"Max\": " + format_significant4(row.max) + ",\n";
      out += "                \"Avg\": " + format_significant4(row.avg) + "\n";
      out += "            }\n";
    }
    out += "        }\n";
  }
  std::string out = "{\n    \"Time\": {\n";
  out += time_part;
  out += "    }\n    ,\n    \"Memory\": {\n";
  out += memory_part;
  out +=
      "    }\n,\n    \"Unit\": {\n        \"Time\": \"ms\",\n        \"Memory\": \"kB\"\n    "
      "}\n}\n";
  return out;
}

}  // namespace nanomx::trace
