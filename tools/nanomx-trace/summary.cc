#include "summary.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <utility>

#include "profiler/aggregate_table.h"

namespace nanomx::trace {
namespace {

// MXNet starts every minimum at INT_MAX (in its own unit, µs for durations), so a counter whose
// values are all above 2^31 shows 2147483.6470 as its minimum. Kept on purpose (MXNet's table does
// it).
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

}  // namespace

bool is_memory_category(const std::string& category) {
  return profiler::is_memory_category(category);
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

std::vector<StepTable> aggregate_per_step(const TraceModel& model, size_t* slices_outside) {
  const auto& strings = model.strings;
  auto is_step = [&](const Slice& slice) {
    return slice.kind == SliceKind::kSync && strings[slice.cat] == "ProfilerStep" &&
           strings[slice.name].rfind("ProfilerStep#", 0) == 0;
  };
  std::vector<StepTable> steps;
  for (const Slice& slice : model.slices) {
    if (!is_step(slice)) continue;
    StepTable step;
    step.name = strings[slice.name];
    step.start_ns = slice.start_ns;
    step.dur_ns = slice.dur_ns;
    steps.push_back(std::move(step));
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const StepTable& a, const StepTable& b) { return a.start_ns < b.start_ns; });
  // The step holding `ts`: the earliest-starting span that contains it, or null.
  auto step_at = [&](int64_t ts) -> StepTable* {
    auto after =
        std::upper_bound(steps.begin(), steps.end(), ts,
                         [](int64_t t, const StepTable& step) { return t < step.start_ns; });
    for (auto it = steps.begin(); it != after; ++it) {
      if (ts < it->start_ns + it->dur_ns || (it->dur_ns == 0 && ts == it->start_ns)) return &*it;
    }
    return nullptr;
  };
  std::set<std::pair<uint32_t, uint32_t>> sync_names;  // shadow tasks, as in aggregate()
  for (const DurationStat& stat : model.duration_stats) {
    if (stat.kind == SliceKind::kSync) sync_names.emplace(stat.cat, stat.name);
  }
  *slices_outside = 0;
  for (const Slice& slice : model.slices) {
    if (is_step(slice)) continue;
    if (slice.kind == SliceKind::kAsync && sync_names.count({slice.cat, slice.name})) continue;
    StepTable* step = step_at(slice.start_ns);
    if (!step) {
      ++*slices_outside;
      continue;
    }
    DurationStat one;
    one.count = 1;
    one.total_ns = one.min_ns = one.max_ns = slice.dur_ns;
    add_durations(entry_for(step->table, strings[slice.cat], strings[slice.name]), one);
  }
  for (const CounterSeries& series : model.counters) {
    for (const CounterSample& sample : series.samples) {
      StepTable* step = step_at(sample.ts_ns);
      if (!step) continue;
      add_counter(entry_for(step->table, strings[series.cat], strings[series.name]), sample.ts_ns,
                  sample.value);
    }
  }
  for (const Instant& instant : model.instants) {
    StepTable* step = step_at(instant.ts_ns);
    if (step) step->table[category_name(strings[instant.cat])].try_emplace(strings[instant.name]);
  }
  return steps;
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
      order.emplace_back(sort_key(entry, sort_by), &name);
    }
    profiler::sort_in_print_order(
        &order, ascending, [](const std::string* name) -> const std::string& { return *name; });
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
  return std::string(profiler::format_fixed4(value, buffer));
}

std::string format_significant4(float value) {
  char buffer[64];
  return std::string(profiler::format_general4(value, buffer));
}

namespace {
// The shared formatter's view of the display rows (which it must not outlive).
struct CategoryViews {
  std::vector<std::vector<profiler::AggregateRow>> rows;
  std::vector<profiler::AggregateCategory> categories;
};

CategoryViews views_of(const std::vector<DisplayCategory>& categories) {
  CategoryViews views;
  views.rows.reserve(categories.size());
  for (const DisplayCategory& category : categories) {
    auto& rows = views.rows.emplace_back();
    rows.reserve(category.rows.size());
    for (const DisplayRow& row : category.rows)
      rows.push_back({row.name, row.count, row.total, row.min, row.max, row.avg});
    views.categories.push_back({category.name, rows});
  }
  return views;
}
}  // namespace

std::string format_table(const std::vector<DisplayCategory>& categories) {
  return profiler::format_aggregate_table(views_of(categories).categories);
}

std::string format_json(const std::vector<DisplayCategory>& categories) {
  return profiler::format_aggregate_json(views_of(categories).categories);
}

}  // namespace nanomx::trace
