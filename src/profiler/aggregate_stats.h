// Aggregate statistics (MXNet's `dumps()` table), kept per thread at record time and merged
// when asked.
//
// Each thread owns one ThreadStats and is its only writer: updating an existing entry is a few
// relaxed stores, no lock. The mutex is taken only to insert a new (category, name) key (once
// per key per thread), to clear the table after a reset, and by the reader that merges.
// A reset bumps a global epoch; a table from an older epoch counts as empty and is cleared by
// its owner on its next update.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nanomx/profiler.h"

namespace nanomx::profiler {

// MXNet's StatData types.
enum class StatType : uint32_t { kDuration = 1, kCounter = 2, kOther = 4 };

class ThreadStats {
 public:
  ThreadStats();
  void add_duration(NameId category, NameId name, uint64_t ticks);
  void add_counter(NameId category, NameId name, uint64_t value, uint64_t at_ticks);
  void add_other(NameId category, NameId name);  // a category entry with no printable row

  struct Snapshot {
    NameId category;
    NameId name;
    StatType type;
    uint64_t count, total, min, max, last_value, last_ticks;
  };
  // Appends this table's entries (nothing when its epoch is stale).
  void snapshot(std::vector<Snapshot>* out) const;

  static void reset_all();  // dumps(reset=True)

 private:
  struct Entry {
    std::atomic<uint64_t> key{0};  // ((category << 32) | name) + 1; 0 = empty slot
    std::atomic<uint32_t> type{static_cast<uint32_t>(StatType::kOther)};
    std::atomic<uint64_t> count{0}, total{0}, min{0}, max{0}, last_value{0}, last_ticks{0};
  };
  Entry* find_or_insert(NameId category, NameId name, StatType type);
  Entry* insert_slow(uint64_t key, StatType type);
  void clear_locked();

  mutable std::mutex mutex_;
  std::unique_ptr<Entry[]> entries_;
  size_t capacity_ = 0;
  size_t size_ = 0;
  uint64_t epoch_ = 0;
};

// Merges every thread's table and formats it as MXNet does
// (docs/mxnet-compat.md#aggregate-statistics). `ns_per_tick` converts duration totals to
// nanoseconds.
std::string format_aggregate(const std::vector<ThreadStats::Snapshot>& entries, double ns_per_tick,
                             StatsFormat format, SortBy sort_by, bool ascending);

}  // namespace nanomx::profiler
