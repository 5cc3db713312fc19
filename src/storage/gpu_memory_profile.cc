#include "storage/gpu_memory_profile.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "nanomx/profiler.h"

namespace nanomx::storage {
namespace {

struct Entry {
  std::string attribute;  // scope + name
  size_t requested = 0;
  int dev_id = 0;
  size_t actual = 0;
  bool reused = false;
};

struct Table {
  std::mutex mutex;  // MXNet's map has none (its Q21); allocations come from many threads here
  std::unordered_map<const void*, Entry> entries;
};

Table& table() {
  static Table* t = new Table;  // never destroyed: frees may come during static destruction
  return *t;
}

}  // namespace

void gpu_memory_profile_alloc(const void* data, size_t requested, int dev_id, size_t actual,
                              bool reused) {
  // Arrays have no names yet: every entry is "unknown" under the current scope.
  Entry e{profiler::scope() + "unknown", requested, dev_id, actual, reused};
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.entries[data] = std::move(e);
}

void gpu_memory_profile_free(const void* data) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.entries.erase(data);
}

std::string write_gpu_memory_profile(const std::string& prefix) {
  std::vector<Entry> rows;
  {
    Table& t = table();
    std::lock_guard lock(t.mutex);
    rows.reserve(t.entries.size());
    for (const auto& [ptr, e] : t.entries) rows.push_back(e);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Entry& a, const Entry& b) { return a.attribute < b.attribute; });
  const std::string path = prefix + "-pid_" + std::to_string(::getpid()) + ".csv";
  std::ofstream out(path, std::ios::trunc);
  if (!out) return "";
  out << "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\n";
  for (const Entry& e : rows) {
    out << '"' << e.attribute << "\",\"" << e.requested << "\",\"" << e.dev_id << "\",\""
        << e.actual << "\",\"" << (e.reused ? 1 : 0) << "\"\n";
  }
  return out ? path : "";
}

void clear_gpu_memory_profile() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.entries.clear();
}

}  // namespace nanomx::storage
