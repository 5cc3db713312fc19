// Interned strings. The hot path carries 32-bit ids; strings are looked up only when the
// collector formats a trace or a table.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "nanomx/profiler.h"

namespace nanomx::profiler {

class NameTable {
 public:
  NameId intern(std::string_view name);
  std::string lookup(NameId id) const;
  // Calls fn(lookup) with the table locked once; lookup(id) returns a const std::string&.
  template <typename Fn>
  void for_each_locked(Fn&& fn) const {
    std::lock_guard<std::mutex> lock(mutex_);
    fn([this](NameId id) -> const std::string& { return names_.at(id); });
  }
  size_t size() const;
  // True for names with "::" (custom-operator sub-ops, category "Custom Operator"). Lock-free
  // for the first kFlaggedIds ids, which is every id in practice.
  bool is_custom_operator(NameId id) const {
    if (id < kFlaggedIds) return custom_flags_[id].load(std::memory_order_relaxed) != 0;
    return lookup(id).find("::") != std::string::npos;
  }

 private:
  mutable std::mutex mutex_;
  std::deque<std::string> names_;  // deque: elements never move, so map keys can view them
  std::unordered_map<std::string_view, NameId> ids_;
  static constexpr NameId kFlaggedIds = 1u << 20;
  std::unique_ptr<std::atomic<uint8_t>[]> custom_flags_ {
    new std::atomic<uint8_t>[ kFlaggedIds ]()
  };
};

NameTable& names();

}  // namespace nanomx::profiler
