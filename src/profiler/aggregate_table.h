// MXNet's aggregate table (`profiler.dumps()`), as text or JSON: the one formatter for both the
// profiler (from its live statistics) and nanomx-trace's `summary` (from a trace file), so that
// the two print the same bytes. The layout, units and sort order are MXNet's
// (docs/mxnet-compat.md, docs/profiler.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profiler/radix_sort.h"

namespace nanomx::profiler {

// One printable row, its numbers already in MXNet's display units (ms, or kB in a memory
// category). `name` must outlive the formatting call.
struct AggregateRow {
  std::string_view name;
  uint64_t count = 0;
  float total = 0, min = 0, max = 0, avg = 0;
};

// A category's rows, in print order (see sort_in_print_order). Categories are printed in the
// order given; MXNet's is the byte order of their names.
struct AggregateCategory {
  std::string_view name;
  std::span<const AggregateRow> rows;
};

// "Device Storage" and "Pool Memory" print in kB without a Total column.
bool is_memory_category(std::string_view category);

std::string format_aggregate_table(std::span<const AggregateCategory> categories);
std::string format_aggregate_json(std::span<const AggregateCategory> categories);

// Sorts (sort key, row) pairs into MXNet's print order: MXNet pops a max-heap of (key, name),
// so the largest key comes first and ties go by name, descending. `ascending` negates the key
// only (in place), so ties stay name-descending. `name_of(row)` gives a row's name.
// A radix sort on the key, then each run of equal keys by name (runs are short: ties are rare).
template <typename RowRef, typename NameOf>
void sort_in_print_order(std::vector<std::pair<double, RowRef>>* order, bool ascending,
                         NameOf name_of) {
  if (ascending)
    for (auto& entry : *order) entry.first = -entry.first;
  static thread_local std::vector<std::pair<uint64_t, uint32_t>> keyed, scratch;
  static thread_local std::vector<std::pair<double, RowRef>> sorted;
  keyed.clear();
  for (uint32_t i = 0; i < order->size(); ++i)
    keyed.emplace_back(~sortable_key((*order)[i].first), i);  // largest key first
  radix_sort_by_key(&keyed, &scratch);
  sorted.clear();
  for (const auto& k : keyed) sorted.push_back((*order)[k.second]);
  for (size_t begin = 0; begin < sorted.size();) {
    size_t end = begin + 1;
    while (end < sorted.size() && keyed[end].first == keyed[begin].first) ++end;
    if (end - begin > 1) {
      std::sort(
          sorted.begin() + static_cast<std::ptrdiff_t>(begin),
          sorted.begin() + static_cast<std::ptrdiff_t>(end),
          [&](const auto& a, const auto& b) { return name_of(a.second) > name_of(b.second); });
    }
    begin = end;
  }
  order->swap(sorted);
}

// MXNet's number formats: the table's "%.4f" and the JSON's "%.4g" of a float. `buffer` must
// hold 64 characters; the result views it.
std::string_view format_fixed4(float value, char* buffer);
std::string_view format_general4(float value, char* buffer);

}  // namespace nanomx::profiler
