#include "profiler/aggregate_stats.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <span>

#include "profiler/json_string.h"
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

bool is_memory_category(std::string_view category) {
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

void append_padded(std::string* out, std::string_view text, int width, bool left) {
  int pad = width - static_cast<int>(text.size());
  if (!left && pad > 0) out->append(static_cast<size_t>(pad), ' ');
  out->append(text);
  if (left && pad > 0) out->append(static_cast<size_t>(pad), ' ');
}

// Numbers are formatted into a small stack buffer; the returned view points into it.
struct NumberText {
  char buf[64];
  std::string_view view;
};

// The table's "%.4f" of a float. A float has 24 significant bits, so value * 10000 is exact
// in a double and rounding it half-to-even gives exactly what printf (and iostream, which
// MXNet uses) prints; done by hand because this runs once per column of every row.
std::string_view fixed4(float v, NumberText* out) {
  double d = static_cast<double>(v);
  char* end;
  if (d >= 0 && d < 1e11) {
    auto scaled = static_cast<uint64_t>(std::nearbyint(d * 10000.0));
    end = std::to_chars(out->buf, out->buf + 40, scaled / 10000).ptr;
    unsigned frac = static_cast<unsigned>(scaled % 10000);
    *end++ = '.';
    *end++ = static_cast<char>('0' + frac / 1000);
    *end++ = static_cast<char>('0' + frac / 100 % 10);
    *end++ = static_cast<char>('0' + frac / 10 % 10);
    *end++ = static_cast<char>('0' + frac % 10);
  } else {  // not reached by durations, counts or byte counters in practice
    end = std::to_chars(out->buf, out->buf + sizeof out->buf, d, std::chars_format::fixed, 4).ptr;
  }
  return out->view = std::string_view(out->buf, static_cast<size_t>(end - out->buf));
}

// The JSON's 4 significant digits: std::to_chars in general notation formats as printf("%.4g").
std::string_view general4(float v, NumberText* out) {
  char* end = std::to_chars(out->buf, out->buf + sizeof out->buf, static_cast<double>(v),
                            std::chars_format::general, 4)
                  .ptr;
  return out->view = std::string_view(out->buf, static_cast<size_t>(end - out->buf));
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
  static thread_local std::vector<std::pair<uint64_t, uint32_t>> order;  // reused: no faults
  order.clear();
  order.reserve(entries.size());
  for (uint32_t i = 0; i < entries.size(); ++i) {
    order.emplace_back((static_cast<uint64_t>(entries[i].category) << 32) | entries[i].name, i);
  }
  std::sort(order.begin(), order.end());

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

// Rows in MXNet's print order. MXNet pops a max-heap of (key, name): largest key first, ties
// by name descending; ascending negates the key only, so ties stay name-descending.
std::vector<const Row*> sorted_rows(std::span<const Row> rows, SortBy by, bool ascending) {
  std::vector<std::pair<double, const Row*>> order;
  order.reserve(rows.size());
  for (const Row& r : rows)
    if (r.printable()) order.emplace_back(ascending ? -r.key(by) : r.key(by), &r);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return a.second->name > b.second->name;
  });
  std::vector<const Row*> out;
  out.reserve(order.size());
  for (const auto& entry : order) out.push_back(entry.second);
  return out;
}

void append_header(std::string* out, bool memory) {
  append_padded(out, "Name", 25, true);
  append_padded(out, "Total Count", 16, false);
  out->push_back(' ');
  if (!memory) {
    append_padded(out, "Time (ms)", 16, false);
    out->push_back(' ');
  }
  append_padded(out, memory ? "Min Use  (kB)" : "Min Time (ms)", 16, false);
  out->push_back(' ');
  append_padded(out, memory ? "Max Use  (kB)" : "Max Time (ms)", 16, false);
  out->push_back(' ');
  append_padded(out, memory ? "Avg Use  (kB)" : "Avg Time (ms)", 16, false);
  out->push_back('\n');
  append_padded(out, "----", 25, true);
  append_padded(out, "-----------", 16, false);
  out->push_back(' ');
  if (!memory) {
    append_padded(out, "---------", 16, false);
    out->push_back(' ');
  }
  for (int i = 0; i < 3; ++i) {
    if (i) out->push_back(' ');
    append_padded(out, "-------------", 16, false);
  }
  out->push_back('\n');
}

// One table row assembled in a stack buffer with the column padding done by memset, then
// appended once (10,000 rows in well under a millisecond is the goal).
class RowLine {
 public:
  void left(std::string_view text, size_t width) {
    put(text);
    if (text.size() < width) pad(width - text.size());
  }
  void right(std::string_view text, size_t width) {
    if (text.size() < width) pad(width - text.size());
    put(text);
  }
  void space() { put(" "); }
  void finish_into(std::string* out) {
    put("\n");
    out->append(overflow_.empty() ? std::string_view(buf_, size_) : std::string_view(overflow_));
    size_ = 0;
    overflow_.clear();
  }

 private:
  void put(std::string_view text) {
    if (overflow_.empty() && size_ + text.size() <= sizeof buf_) {
      std::memcpy(buf_ + size_, text.data(), text.size());
      size_ += text.size();
      return;
    }
    if (overflow_.empty()) overflow_.assign(buf_, size_);  // a very long name
    overflow_.append(text);
  }
  void pad(size_t n) {
    if (overflow_.empty() && size_ + n <= sizeof buf_) {
      std::memset(buf_ + size_, ' ', n);
      size_ += n;
      return;
    }
    if (overflow_.empty()) overflow_.assign(buf_, size_);
    overflow_.append(n, ' ');
  }
  char buf_[256];
  size_t size_ = 0;
  std::string overflow_;
};

std::string format_table(const Categories& categories, SortBy by, bool ascending) {
  std::string out =
      "\nProfile Statistics:\n\tNote the difference in units for different entries.\n";
  NumberText number;
  RowLine line;
  for (const auto& [category, rows] : categories) {
    bool memory = is_memory_category(category);
    out.reserve(out.size() + 300 + rows.size() * 110);
    out.append(category);
    out.append("\n=================\n");
    append_header(&out, memory);
    for (const Row* row : sorted_rows(rows, by, ascending)) {
      Shown v = shown_values(*row, memory);
      line.left(row->name, 25);
      char* count_end = std::to_chars(number.buf, number.buf + 32, row->count).ptr;
      line.right(std::string_view(number.buf, static_cast<size_t>(count_end - number.buf)), 16);
      line.space();
      if (!memory) {
        line.right(fixed4(v.total, &number), 16);
        line.space();
      }
      line.right(fixed4(v.min, &number), 16);
      line.space();
      line.right(fixed4(v.max, &number), 16);
      line.space();
      line.right(fixed4(v.avg, &number), 16);
      line.finish_into(&out);
    }
    out.push_back('\n');
  }
  return out;
}

std::string format_json(const Categories& categories, SortBy by, bool ascending) {
  std::string time_section, memory_section;
  NumberText number;
  auto field = [&](std::string* s, const char* key, float value, bool last) {
    s->append("                \"").append(key).append("\": ");
    s->append(general4(value, &number));
    s->append(last ? "\n" : ",\n");
  };
  for (const auto& [category, rows] : categories) {
    bool memory = is_memory_category(category);
    std::string& s = memory ? memory_section : time_section;
    if (!s.empty()) s.append("        ,\n");
    s.append("        ");
    append_json_string(&s, category);
    s.append(": {\n");
    bool first = true;
    for (const Row* row : sorted_rows(rows, by, ascending)) {
      if (!first) s.append("            ,\n");
      first = false;
      Shown v = shown_values(*row, memory);
      s.append("            ");
      append_json_string(&s, row->name);
      s.append(": {\n                \"Count\": ").append(std::to_string(row->count)).append(",\n");
      if (!memory) field(&s, "Total", v.total, false);
      field(&s, "Min", v.min, false);
      field(&s, "Max", v.max, false);
      field(&s, "Avg", v.avg, true);
      s.append("            }\n");
    }
    s.append("        }\n");
  }
  return "{\n    \"Time\": {\n" + time_section + "    }\n    ,\n    \"Memory\": {\n" +
         memory_section +
         "    }\n,\n    \"Unit\": {\n        \"Time\": \"ms\",\n        \"Memory\": \"kB\"\n    "
         "}\n}\n";
}

}  // namespace

std::string format_aggregate(const std::vector<ThreadStats::Snapshot>& entries, double ns_per_tick,
                             StatsFormat format, SortBy sort_by, bool ascending) {
  static thread_local std::vector<Row> rows;  // reused between calls: its pages stay warm
  const Categories categories = merge(entries, ns_per_tick, &rows);
  return format == StatsFormat::kJson ? format_json(categories, sort_by, ascending)
                                      : format_table(categories, sort_by, ascending);
}

}  // namespace nanomx::profiler
