#include "profiler/name_table.h"

#include "nanomx/error.h"

namespace nanomx::profiler {

NameId NameTable::intern(std::string_view name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  NANOMX_CHECK(names_.size() < UINT32_MAX) << "profiler: too many distinct names";
  NameId id = static_cast<NameId>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string_view(names_.back()), id);
  if (id < kFlaggedIds && name.find("::") != std::string_view::npos)
    custom_flags_[id].store(1, std::memory_order_relaxed);
  return id;
}

std::string NameTable::lookup(NameId id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  NANOMX_CHECK(id < names_.size()) << "profiler: unknown name id " << id;
  return names_[id];
}

size_t NameTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return names_.size();
}

NameTable& names() {
  static NameTable* table = new NameTable();  // never destroyed: usable from exit-time dumps
  return *table;
}

NameId intern(std::string_view name) { return names().intern(name); }
std::string name_of(NameId id) { return names().lookup(id); }

}  // namespace nanomx::profiler
