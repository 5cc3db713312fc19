#include "profiler/aggregate_stats.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <unordered_map>

#include "profiler/name_table.h"

namespace nanomx::profiler {

namespace {
std::atomic<uint64_t> g_stats_epoch{0};

// MXNet starts every minimum at INT_MAX; a counter whose values all exceed it shows that
// number as its minimum (spec Q9), which tools comparing with MXNet expect.
constexpr uint64_t kCounterMinStart = INT_MAX;

size_t slot_of(uint64_t key, size_t capacity) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return static_cast<size_t>(key) & (capacity - 1);
}
}  // namespace

ThreadStats::ThreadStats() : entries_(new Entry[64]), capacity_(64), epoch_(g_stats_epoch.load()) {}

void ThreadStats::reset_all() { g_stats_epoch.fetch_add(1); }

void ThreadStats::clear_locked() {
  for (size_t i = 0; i < capacity_; ++i) entries_[i].key.store(0, std::memory_order_relaxed);
  size_ = 0;
}

ThreadStats::Entry* ThreadStats::find_or_insert(NameId category, NameId name, StatType type) {
  uint64_t epoch = g_stats_epoch.load(std::memory_order_relaxed);
  if (epoch != epoch_) {
    std::lock_guard<std::mutex> lock(mutex_);
    clear_locked();
    epoch_ = epoch;
  }
  uint64_t key = ((static_cast<uint64_t>(category) << 32) | name) + 1;
  for (size_t i = slot_of(key, capacity_);; i = (i + 1) & (capacity_ - 1)) {
    uint64_t k = entries_[i].key.load(std::memory_order_relaxed);
    if (k == key) return &entries_[i];
    if (k == 0) return insert_slow(key, type);
  }
}

ThreadStats::Entry* ThreadStats::insert_slow(uint64_t key, StatType type) {
  std::lock_guard<std::mutex> lock(mutex_);
  if ((size_ + 1) * 2 > capacity_) {
    size_t capacity = capacity_ * 2;
    std::unique_ptr<Entry[]> grown(new Entry[capacity]);
    for (size_t i = 0; i < capacity_; ++i) {
      const Entry& from = entries_[i];
      uint64_t k = from.key.load(std::memory_order_relaxed);
      if (k == 0) continue;
      size_t j = slot_of(k, capacity);
      while (grown[j].key.load(std::memory_order_relaxed) != 0) j = (j + 1) & (capacity - 1);
      Entry& to = grown[j];
      to.type.store(from.type.load());
      to.count.store(from.count.load());
      to.total.store(from.total.load());
      to.min.store(from.min.load());
      to.max.store(from.max.load());
      to.last_value.store(from.last_value.load());
      to.last_ticks.store(from.last_ticks.load());
      to.key.store(k);
    }
    entries_ = std::move(grown);
    capacity_ = capacity;
  }
  size_t i = slot_of(key, capacity_);
  while (entries_[i].key.load(std::memory_order_relaxed) != 0) i = (i + 1) & (capacity_ - 1);
  Entry& e = entries_[i];
  e.type.store(static_cast<uint32_t>(type), std::memory_order_relaxed);
  e.count.store(0, std::memory_order_relaxed);
  e.total.store(0, std::memory_order_relaxed);
  e.min.store(type == StatType::kCounter ? kCounterMinStart : UINT64_MAX,
              std::memory_order_relaxed);
  e.max.store(0, std::memory_order_relaxed);
  e.last_value.store(0, std::memory_order_relaxed);
  e.last_ticks.store(0, std::memory_order_relaxed);
  e.key.store(key, std::memory_order_release);
  ++size_;
  return &e;
}

namespace {
// Single-writer updates: plain load + store, no read-modify-write instruction needed.
inline void bump(std::atomic<uint64_t>& field, uint64_t by) {
  field.store(field.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}
inline void lower(std::atomic<uint64_t>& field, uint64_t value) {
  if (value < field.load(std::memory_order_relaxed)) field.store(value, std::memory_order_relaxed);
}
inline void raise(std::atomic<uint64_t>& field, uint64_t value) {
  if (value > field.load(std::memory_order_relaxed)) field.store(value, std::memory_order_relaxed);
}
}  // namespace

void ThreadStats::add_duration(NameId category, NameId name, uint64_t ticks) {
  Entry* e = find_or_insert(category, name, StatType::kDuration);
  e->type.store(static_cast<uint32_t>(StatType::kDuration), std::memory_order_relaxed);
  bump(e->count, 1);
  bump(e->total, ticks);
  lower(e->min, ticks);
  raise(e->max, ticks);
}

void ThreadStats::add_counter(NameId category, NameId name, uint64_t value, uint64_t at_ticks) {
  Entry* e = find_or_insert(category, name, StatType::kCounter);
  e->type.store(static_cast<uint32_t>(StatType::kCounter), std::memory_order_relaxed);
  bump(e->count, 1);
  e->total.store(value, std::memory_order_relaxed);  // a counter's "total" is its latest value
  lower(e->min, value);
  raise(e->max, value);
  e->last_value.store(value, std::memory_order_relaxed);
  e->last_ticks.store(at_ticks, std::memory_order_relaxed);
}

void ThreadStats::add_other(NameId category, NameId name) {
  find_or_insert(category, name, StatType::kOther);
}

void ThreadStats::snapshot(std::vector<Snapshot>* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (epoch_ != g_stats_epoch.load()) return;
  for (size_t i = 0; i < capacity_; ++i) {
    const Entry& e = entries_[i];
    uint64_t key = e.key.load(std::memory_order_acquire);
    if (key == 0) continue;
    --key;
    out->push_back({static_cast<NameId>(key >> 32), static_cast<NameId>(key & 0xffffffffu),
                    static_cast<StatType>(e.type.load(std::memory_order_relaxed)),
                    e.count.load(std::memory_order_relaxed),
                    e.total.load(std::memory_order_relaxed), e.min.load(std::memory_order_relaxed),
                    e.max.load(std::memory_order_relaxed),
                    e.last_value.load(std::memory_order_relaxed),
                    e.last_ticks.load(std::memory_order_relaxed)});
  }
}

// ---------------------------------------------------------------------------------------------
// Merge and format.

namespace {

struct Row {
  std::string name;
  StatType type = StatType::kOther;
  uint64_t count = 0;
  double total = 0;  // durations: microseconds; counters: latest value
  double min = 0, max = 0;
  uint64_t counter_last_ticks = 0;
  bool printable() const { return type == StatType::kDuration || type == StatType::kCounter; }
  // MXNet's sort keys (aggregate_stats.cc BuildHeap), in the units MXNet compares.
  double key(SortBy by) const {
    switch (by) {
      case SortBy::kTotal:
        return total;
      case SortBy::kAvg:
        if (type == StatType::kCounter)
          return static_cast<double>((static_cast<uint64_t>(max) - static_cast<uint64_t>(min)) / 2);
        return count ? total / static_cast<double>(count) : 0.0;
      case SortBy::kMin:
        return min;
      case SortBy::kMax:
        return max;
      case SortBy::kCount:
        return static_cast<double>(count);
    }
    return 0;
  }
};

bool is_memory_category(const std::string& category) {
  return category == "Device Storage" || category == "Pool Memory";
}

struct Shown {  // the four numbers a row prints, already in ms or kB
  float total, min, max, avg;
};

Shown shown_values(const Row& row, bool memory) {
  auto counter_avg = [&] {
    return static_cast<double>((static_cast<uint64_t>(row.max) - static_cast<uint64_t>(row.min)) /
                               2);
  };
  if (memory || row.type == StatType::kCounter) {
    // Counters: raw values shown divided by 1000 (ms labels in time categories, kB in memory).
    return {static_cast<float>(row.total / 1000), static_cast<float>(row.min / 1000),
            static_cast<float>(row.max / 1000), static_cast<float>(counter_avg() / 1000)};
  }
  double avg = row.count ? row.total / static_cast<double>(row.count) : 0.0;
  return {static_cast<float>(row.total / 1000), static_cast<float>(row.min / 1000),
          static_cast<float>(row.max / 1000), static_cast<float>(avg / 1000)};
}

void append_padded(std::string* out, const std::string& text, int width, bool left) {
  int pad = width - static_cast<int>(text.size());
  if (!left && pad > 0) out->append(static_cast<size_t>(pad), ' ');
  out->append(text);
  if (left && pad > 0) out->append(static_cast<size_t>(pad), ' ');
}

std::string fixed4(float v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.4f", static_cast<double>(v));
  return buf;
}

std::string general4(float v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.4g", static_cast<double>(v));
  return buf;
}

using Categories = std::map<std::string, std::vector<Row>>;  // byte order of category names

Categories merge(const std::vector<ThreadStats::Snapshot>& entries, double ns_per_tick) {
  std::unordered_map<uint64_t, Row> merged;
  for (const auto& e : entries) {
    uint64_t key = (static_cast<uint64_t>(e.category) << 32) | e.name;
    auto [it, fresh] = merged.try_emplace(key);
    Row& row = it->second;
    if (e.type == StatType::kDuration) {
      double total_us = static_cast<double>(e.total) * ns_per_tick / 1000.0;
      double min_us = static_cast<double>(e.min) * ns_per_tick / 1000.0;
      double max_us = static_cast<double>(e.max) * ns_per_tick / 1000.0;
      if (row.type != StatType::kDuration) {
        row.type = StatType::kDuration;
        row.total = 0;
        row.min = min_us;
        row.max = max_us;
      }
      row.count += e.count;
      row.total += total_us;
      row.min = std::min(row.min, min_us);
      row.max = std::max(row.max, max_us);
    } else if (e.type == StatType::kCounter) {
      if (row.type != StatType::kCounter) {
        row.type = StatType::kCounter;
        row.min = static_cast<double>(e.min);
        row.max = static_cast<double>(e.max);
      }
      row.count += e.count;
      row.min = std::min(row.min, static_cast<double>(e.min));
      row.max = std::max(row.max, static_cast<double>(e.max));
      if (e.last_ticks >= row.counter_last_ticks) {
        row.counter_last_ticks = e.last_ticks;
        row.total = static_cast<double>(e.last_value);
      }
    }
    (void)fresh;
  }
  Categories categories;
  for (auto& [key, row] : merged) {
    row.name = name_of(static_cast<NameId>(key & 0xffffffffu));
    categories[name_of(static_cast<NameId>(key >> 32))].push_back(std::move(row));
  }
  return categories;
}

void sort_rows(std::vector<Row>* rows, SortBy by, bool ascending) {
  // MXNet pops a max-heap of (key, name): largest key first, ties by name descending; ascending
  // negates the key only, so ties stay name-descending.
  std::sort(rows->begin(), rows->end(), [&](const Row& a, const Row& b) {
    double ka = ascending ? -a.key(by) : a.key(by);
    double kb = ascending ? -b.key(by) : b.key(by);
    if (ka != kb) return ka > kb;
    return a.name > b.name;
  });
}

std::string format_table(Categories& categories, SortBy by, bool ascending) {
  std::string out =
      "\nProfile Statistics:\n\tNote the difference in units for different entries.\n";
  for (auto& [category, rows] : categories) {
    bool memory = is_memory_category(category);
    out += category;
    out += "\n=================\n";
    append_padded(&out, "Name", 25, true);
    append_padded(&out, "Total Count", 16, false);
    out += ' ';
    if (!memory) {
      append_padded(&out, "Time (ms)", 16, false);
      out += ' ';
    }
    append_padded(&out, memory ? "Min Use  (kB)" : "Min Time (ms)", 16, false);
    out += ' ';
    append_padded(&out, memory ? "Max Use  (kB)" : "Max Time (ms)", 16, false);
    out += ' ';
    append_padded(&out, memory ? "Avg Use  (kB)" : "Avg Time (ms)", 16, false);
    out += '\n';
    append_padded(&out, "----", 25, true);
    append_padded(&out, "-----------", 16, false);
    out += ' ';
    if (!memory) {
      append_padded(&out, "---------", 16, false);
      out += ' ';
    }
    for (int i = 0; i < 3; ++i) {
      if (i) out += ' ';
      append_padded(&out, "-------------", 16, false);
    }
    out += '\n';
    sort_rows(&rows, by, ascending);
    for (const Row& row : rows) {
      if (!row.printable()) continue;
      Shown v = shown_values(row, memory);
      append_padded(&out, row.name, 25, true);
      append_padded(&out, std::to_string(row.count), 16, false);
      out += ' ';
      if (!memory) {
        append_padded(&out, fixed4(v.total), 16, false);
        out += ' ';
      }
      append_padded(&out, fixed4(v.min), 16, false);
      out += ' ';
      append_padded(&out, fixed4(v.max), 16, false);
      out += ' ';
      append_padded(&out, fixed4(v.avg), 16, false);
      out += '\n';
    }
    out += '\n';
  }
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string format_json(Categories& categories, SortBy by, bool ascending) {
  std::string time_section, memory_section;
  for (auto& [category, rows] : categories) {
    bool memory = is_memory_category(category);
    std::string& s = memory ? memory_section : time_section;
    if (!s.empty()) s += "        ,\n";
    s += "        " + json_string(category) + ": {\n";
    sort_rows(&rows, by, ascending);
    bool first = true;
    for (const Row& row : rows) {
      if (!row.printable()) continue;
      if (!first) s += "            ,\n";
      first = false;
      Shown v = shown_values(row, memory);
      s += "            " + json_string(row.name) + ": {\n";
      s += "                \"Count\": " + std::to_string(row.count) + ",\n";
      if (!memory) s += "                \"Total\": " + general4(v.total) + ",\n";
      s += "                \"Min\": " + general4(v.min) + ",\n";
      s += "                \"Max\": " + general4(v.max) + ",\n";
      s += "                \"Avg\": " + general4(v.avg) + "\n";
      s += "            }\n";
    }
    s += "        }\n";
  }
  return "{\n    \"Time\": {\n" + time_section + "    }\n    ,\n    \"Memory\": {\n" +
         memory_section +
         "    }\n,\n    \"Unit\": {\n        \"Time\": \"ms\",\n        \"Memory\": \"kB\"\n    "
         "}\n}\n";
}

}  // namespace

std::string format_aggregate(const std::vector<ThreadStats::Snapshot>& entries, double ns_per_tick,
                             StatsFormat format, SortBy sort_by, bool ascending) {
  Categories categories = merge(entries, ns_per_tick);
  return format == StatsFormat::kJson ? format_json(categories, sort_by, ascending)
                                      : format_table(categories, sort_by, ascending);
}

}  // namespace nanomx::profiler
