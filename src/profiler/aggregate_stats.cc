#include "profiler/aggregate_stats.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <span>

#include "profiler/aggregate_table.h"
#include "profiler/name_table.h"
#include "profiler/radix_sort.h"

namespace nanomx::profiler {

namespace {
std::atomic<uint64_t> g_stats_epoch{0};

// MXNet starts every minimum at INT_MAX; a counter whose values all exceed it shows that
// number as its minimum (MXNet's int minimum), which tools comparing with MXNet expect.
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
  std::string_view name;  // points into the name table, whose strings never move or die
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

// A category's rows: a contiguous range of the merged rows (they are grouped by category id).
struct Category {
  std::string_view name;
  std::span<const Row> rows;
};
using Categories = std::vector<Category>;  // in byte order of the names, as MXNet's std::map

// Merges every thread's entries into `rows` (cleared first; reused between calls so that its
// pages stay warm) and returns the categories over it.
Categories merge(const std::vector<ThreadStats::Snapshot>& entries, double ns_per_tick,
                 std::vector<Row>* rows) {
  // Sort (key, index) pairs so that every thread's entry for one (category, name) is adjacent.
  static thread_local std::vector<std::pair<uint64_t, uint32_t>> order, scratch;  // reused
  order.clear();
  order.reserve(entries.size());
  for (uint32_t i = 0; i < entries.size(); ++i) {
    order.emplace_back((static_cast<uint64_t>(entries[i].category) << 32) | entries[i].name, i);
  }
  radix_sort_by_key(&order, &scratch);

  rows->clear();
  rows->reserve(order.size());  // no reallocation below: the spans stay valid
  std::vector<std::pair<std::string_view, size_t>> starts;  // category name, first row
  names().for_each_locked([&](auto lookup) {                // one lock for every lookup
    NameId current_category = UINT32_MAX;
    for (size_t i = 0; i < order.size();) {
      uint64_t key = order[i].first;
      auto category = static_cast<NameId>(key >> 32);
      if (category != current_category) {
        current_category = category;
        starts.emplace_back(lookup(category), rows->size());
      }
      Row row;
      row.name = lookup(static_cast<NameId>(key & 0xffffffffu));
      for (; i < order.size() && order[i].first == key; ++i) {
        // The sorted order visits the entries out of memory order: fetch a few ahead.
        if (i + 8 < order.size()) __builtin_prefetch(&entries[order[i + 8].second]);
        const ThreadStats::Snapshot& e = entries[order[i].second];
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
      }
      rows->push_back(row);
    }
  });
  Categories categories;
  for (size_t c = 0; c < starts.size(); ++c) {
    size_t end = c + 1 < starts.size() ? starts[c + 1].second : rows->size();
    categories.push_back({starts[c].first, std::span<const Row>(rows->data() + starts[c].second,
                                                                end - starts[c].second)});
  }
  std::sort(categories.begin(), categories.end(),
            [](const Category& a, const Category& b) { return a.name < b.name; });
  return categories;
}

}  // namespace

std::string format_aggregate(const std::vector<ThreadStats::Snapshot>& entries, double ns_per_tick,
                             StatsFormat format, SortBy sort_by, bool ascending) {
  // Reused between calls, as their pages stay warm.
  static thread_local std::vector<Row> rows;
  static thread_local std::vector<AggregateRow> shown;
  static thread_local std::vector<std::pair<double, const Row*>> order;
  const Categories categories = merge(entries, ns_per_tick, &rows);
  shown.clear();
  shown.reserve(rows.size());  // no reallocation below: the spans stay valid
  std::vector<AggregateCategory> printed;
  printed.reserve(categories.size());
  for (const auto& [category, category_rows] : categories) {
    const bool memory = is_memory_category(category);
    order.clear();
    for (const Row& r : category_rows)
      if (r.printable()) order.emplace_back(r.key(sort_by), &r);
    sort_in_print_order(&order, ascending, [](const Row* r) { return r->name; });
    const size_t first = shown.size();
    for (const auto& entry : order) {
      const Row& row = *entry.second;
      Shown v = shown_values(row, memory);
      shown.push_back({row.name, row.count, v.total, v.min, v.max, v.avg});
    }
    printed.push_back(
        {category, std::span<const AggregateRow>(shown.data() + first, shown.size() - first)});
  }
  return format == StatsFormat::kJson ? format_aggregate_json(printed)
                                      : format_aggregate_table(printed);
}

}  // namespace nanomx::profiler
