#include "backends/cuda/gpu_memory_profile.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
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
  std::vector<ArenaRegion> regions;  // an arena's: written instead of the entry itself
};

struct Table {
  std::mutex mutex;  // MXNet's map has none; allocations come from many threads here
  std::unordered_map<const void*, Entry> entries;
};

Table& table() {
  static Table* t = new Table;  // never destroyed: frees may come during static destruction
  return *t;
}

}  // namespace

void gpu_memory_profile_alloc(const void* data, std::string attribute, size_t requested, int dev_id,
                              size_t actual, bool reused) {
  Entry e{std::move(attribute), requested, dev_id, actual, reused, {}};
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.entries[data] = std::move(e);
}

void gpu_memory_profile_free(const void* data) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.entries.erase(data);
}

void gpu_memory_profile_describe(const void* data, std::span<const ArenaRegion> regions) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.entries.find(data);
  if (it == t.entries.end()) return;
  it->second.regions.assign(regions.begin(), regions.end());
}

std::string write_gpu_memory_profile(const std::string& prefix, ProcessGpuMemory process_memory) {
  std::vector<Entry> rows;
  {
    Table& t = table();
    std::lock_guard lock(t.mutex);
    rows.reserve(t.entries.size());
    for (const auto& [ptr, e] : t.entries) {
      if (e.regions.empty()) {
        rows.push_back({e.attribute, e.requested, e.dev_id, e.actual, e.reused, {}});
        continue;
      }
      // Each region owns the bytes up to the next one (alignment padding), the last one up to
      // the block's end (the pool's rounding): the rows add up to what the block holds.
      for (size_t i = 0; i < e.regions.size(); ++i) {
        const ArenaRegion& r = e.regions[i];
        const size_t next = i + 1 < e.regions.size() ? e.regions[i + 1].offset : e.actual;
        rows.push_back({r.attribute, r.bytes, e.dev_id, next - r.offset, e.reused, {}});
      }
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Entry& a, const Entry& b) { return a.attribute < b.attribute; });
  const std::string path = prefix + "-pid_" + std::to_string(::getpid()) + ".csv";
  std::ofstream out(path, std::ios::trunc);
  if (!out) return "";
  out << "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\n";
  for (const Entry& e : rows) {
    // A quote inside a name is doubled, as CSV wants (MXNet writes it bare, which no reader
    // parses); no other byte needs escaping inside quotes.
    std::string attribute;
    for (char c : e.attribute) attribute += c == '"' ? std::string("\"\"") : std::string(1, c);
    out << '"' << attribute << "\",\"" << e.requested << "\",\"" << e.dev_id << "\",\"" << e.actual
        << "\",\"" << (e.reused ? 1 : 0) << "\"\n";
  }
  std::map<int, int64_t> actual_by_device;
  for (const Entry& e : rows) actual_by_device[e.dev_id] += static_cast<int64_t>(e.actual);
  for (const auto& [dev, actual] : actual_by_device) {
    std::string why;
    if (const std::optional<uint64_t> used = process_memory(dev, &why)) {
      const int64_t amend = static_cast<int64_t>(*used) - actual;
      out << "\"nvml_amend\",\"" << amend << "\",\"" << dev << "\",\"" << amend << "\",\"0\"\n";
    } else {
      static std::once_flag said;  // MXNet logs at every dump; once is enough to explain
      std::call_once(said, [&why] {
        std::fprintf(stderr, "nanomx: GPU memory profile: no nvml_amend row: %s\n", why.c_str());
      });
    }
  }
  return out ? path : "";
}

void clear_gpu_memory_profile() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.entries.clear();
}

}  // namespace nanomx::storage
