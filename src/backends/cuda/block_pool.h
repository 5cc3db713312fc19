// Freed blocks kept per size class for reuse, by the CUDA allocators: cudaMalloc / cudaHostAlloc
// and their frees are slow (a free synchronizes the device), so a freed block waits here for the
// next request of its size class. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace nanomx::storage {

class BlockPool {
 public:
  // A pooled block of exactly `capacity` bytes, or null when none is pooled.
  void* take(size_t capacity) {
    std::lock_guard lock(mutex_);
    auto it = free_.find(capacity);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* data = it->second.back();
    it->second.pop_back();
    pooled_ -= capacity;
    return data;
  }

  void put(void* data, size_t capacity) {
    std::lock_guard lock(mutex_);
    free_[capacity].push_back(data);
    pooled_ += capacity;
  }

  // Forgets every pooled block, handing each to `free_block(data)` (outside the lock).
  template <typename F>
  void drain(F&& free_block) {
    std::map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard lock(mutex_);
      blocks.swap(free_);
      pooled_ = 0;
    }
    for (auto& [capacity, list] : blocks) {
      for (void* data : list) free_block(data);
    }
  }

  size_t pooled_bytes() {
    std::lock_guard lock(mutex_);
    return pooled_;
  }

 private:
  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;
  size_t pooled_ = 0;
};

}  // namespace nanomx::storage
